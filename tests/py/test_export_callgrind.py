"""`ulma export --format callgrind`: checked with valgrind's own reader,
callgrind_annotate.  Its exclusive totals per function are ulma's self
times and its inclusive totals (--inclusive=yes) ulma's total times, for
the top function and for every other one, recursion included; its program
total is the sum of self times; calls= lines count calls.
"""
import os
import re
import shutil
import subprocess

import pytest

from export_helpers import export_trace, run_export  # noqa: F401

ROW = re.compile(r"^\s*([0-9,]+) \(\s*[0-9.]+%\)  (.+)$")

pytestmark = pytest.mark.skipif(shutil.which("callgrind_annotate") is None, reason="valgrind not installed")


def annotate(path, inclusive):
    """{file:function: ns} and the program total, as callgrind_annotate reads path."""
    args = ["callgrind_annotate", "--threshold=100", "--auto=no", "--inclusive=%s" % ("yes" if inclusive else "no"), str(path)]
    # run from / so that it strips no directory prefix from file names
    proc = subprocess.run(args, cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b"", proc.stderr  # no "malformed line" warnings
    rows, total = {}, None
    for line in proc.stdout.decode("utf-8").splitlines():
        m = ROW.match(line)
        if not m:
            continue
        value, name = int(m.group(1).replace(",", "")), m.group(2)
        if name == "PROGRAM TOTALS":
            total = value
        else:
            assert name not in rows, "%s listed twice" % name
            rows[name] = value
    assert total is not None and rows
    return rows, total


def cg_name(f, shared):
    """How callgrind_annotate names a report row (file:function)."""
    name = f["name"]
    if name in shared:
        name = "%s [%s:%d]" % (name, f["file"], f["line"])
    return "%s:%s" % (f["file"], name)


@pytest.fixture(scope="module", params=["fib_calls.py", "varied.py"])
def program(request, export_trace, run_export, tmp_path_factory):
    t = export_trace(request.param)
    out = tmp_path_factory.mktemp("callgrind") / "callgrind.out"
    run_export(t["trace"], "callgrind", out)
    funcs = t["report"]["functions"]
    by_key = {}
    for f in funcs:
        by_key.setdefault((f["name"], f["file"], f["line"]), []).append(f)
    names = {}
    for (name, file, line) in by_key:
        names.setdefault(name, set()).add((file, line))
    shared = {n for n, locs in names.items() if len(locs) > 1}
    rows = {}
    for key, fs in by_key.items():
        rows[key] = dict(fs[0], calls=sum(f["calls"] for f in fs), self_ns=sum(f["self_ns"] for f in fs),
                         total_ns=sum(f["total_ns"] for f in fs))
    return dict(t, out=out, rows=list(rows.values()), shared=shared,
                excl=annotate(out, False), incl=annotate(out, True))


def close(a, b, calls=0):
    """Equal but for rounding: the export rounds each frame's corrected cost
    to whole ns, the summary the function's sum (up to 1 ns a call)."""
    return abs(a - b) <= 10 + calls + 0.001 * max(a, b)


def test_program_total_is_total_self_time(program):
    want = sum(f["self_ns"] for f in program["rows"])
    assert close(program["excl"][1], want)
    assert program["incl"][1] == program["excl"][1]


def test_exclusive_equals_self_time(program):
    rows, _ = program["excl"]
    top = max(program["rows"], key=lambda f: f["self_ns"])
    assert close(rows[cg_name(top, program["shared"])], top["self_ns"])
    assert max(rows.values()) == rows[cg_name(top, program["shared"])]
    for f in program["rows"]:
        assert close(rows.get(cg_name(f, program["shared"]), 0), f["self_ns"], f["calls"]), f


def test_inclusive_equals_total_time(program):
    rows, total = program["incl"]
    named = {cg_name(f, program["shared"]): f for f in program["rows"]}
    # the synthetic caller of every thread's outermost frames holds everything
    assert rows.pop("~:(all threads)") == total
    top_name = max(rows, key=rows.get)
    top = max(program["rows"], key=lambda f: f["total_ns"])
    assert top_name == cg_name(top, program["shared"])
    assert close(rows[top_name], top["total_ns"]), top_name
    assert set(rows) == set(named)
    bad = {name: (rows[name], f["total_ns"]) for name, f in named.items() if not close(rows[name], f["total_ns"])}
    assert not bad, "callgrind_annotate inclusive vs report total_ns: %r" % bad
    if program["path"].endswith("fib_calls.py"):
        assert named["%s:fib" % program["path"]]["calls"] == 218910


def test_calls_lines_count_calls(program):
    """calls= lines into a function add up to its calls (a thread's outermost
    frames are calls from "(all threads)")."""
    called, fn_names, callee = {}, {}, None
    with open(str(program["out"]), encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
            if m:
                if m.group(3) is not None:
                    fn_names[m.group(2)] = m.group(3)
                if m.group(1) == "cfn":
                    callee = fn_names[m.group(2)]
            elif line.startswith("calls="):
                called[callee] = called.get(callee, 0) + int(line.split()[0][6:])
    assert called
    want = {cg_name(f, program["shared"])[len(f["file"]) + 1 :]: f["calls"] for f in program["rows"]}
    assert called == want


def test_filter_changes_totals(export_trace, run_export, tmp_path):
    t = export_trace("fib_calls.py")
    out = tmp_path / "cg.out"
    run_export(t["trace"], "callgrind", out, "--exclude", "fib")
    rows, _ = annotate(out, False)
    path = t["path"]
    assert "%s:fib" % path not in rows
    main = [f for f in t["report"]["functions"] if f["name"] == "main"][0]
    prints = sum(f["total_ns"] for f in t["report"]["functions"] if f["name"] == "builtins.print")
    assert close(rows["%s:main" % path], main["total_ns"] - prints)
    assert os.path.getsize(str(out)) > 0
