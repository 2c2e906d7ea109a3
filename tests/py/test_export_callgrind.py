"""`ulma export --format callgrind`: checked with valgrind's own reader,
callgrind_annotate, and with gprof2dot.  callgrind_annotate's exclusive
totals per function (its recursion levels `f'2`... summed) are ulma's self
times and its inclusive totals (--inclusive=yes) ulma's total times, for
the top function and for every other one, recursion included; its program
total is the sum of self times; calls= lines count calls.  Mutual
recursion is written as levels, so that what KCachegrind computes (self
plus the calls out, direct recursion left out) is the total time too, and
gprof2dot reads every file and shows each function's total share.
"""
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

from export_helpers import export_trace, run_export  # noqa: F401

ROW = re.compile(r"^\s*([0-9,]+) \(\s*[0-9.]+%\)  (.+)$")
LEVEL = re.compile(r"^(.*)'([0-9]+)$")

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


def by_function(rows, sum_levels):
    """{name: value} with recursion levels (`name'2`...) summed into their
    function, or left out (only the function's own row)."""
    out = {}
    for name, value in rows.items():
        m = LEVEL.match(name)
        if m and not sum_levels:
            continue
        base = m.group(1) if m else name
        out[base] = out.get(base, 0) + value
    return out


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
    rows = by_function(program["excl"][0], True)
    top = max(program["rows"], key=lambda f: f["self_ns"])
    assert close(rows[cg_name(top, program["shared"])], top["self_ns"])
    assert max(rows.values()) == rows[cg_name(top, program["shared"])]
    for f in program["rows"]:
        assert close(rows.get(cg_name(f, program["shared"]), 0), f["self_ns"], f["calls"]), f


def test_inclusive_equals_total_time(program):
    rows, total = program["incl"]
    rows = by_function(rows, False)
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


def read_calls(path):
    """{function: [self ns, [(callee, calls, ns)]]} as the file states them."""
    funcs, fn_names, current, callee, pending = {}, {}, None, None, None
    with open(str(path), encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
            if m:
                if m.group(3) is not None:
                    fn_names[m.group(2)] = m.group(3)
                if m.group(1) == "fn":
                    current = fn_names[m.group(2)]
                    funcs[current] = [0, []]
                else:
                    callee = fn_names[m.group(2)]
            elif line.startswith("calls="):
                pending = int(line.split()[0][6:])
            elif re.match(r"^\d+ \d+$", line) and current is not None:
                cost = int(line.split()[1])
                if pending is not None:
                    funcs[current][1].append((callee, pending, cost))
                    pending = None
                else:
                    funcs[current][0] += cost
    return funcs


def test_calls_lines_count_calls(program):
    """calls= lines into a function add up to its calls (a thread's outermost
    frames are calls from "(all threads)")."""
    called = {}
    for self_ns, calls in read_calls(program["out"]).values():
        for callee, count, cost in calls:
            called[callee] = called.get(callee, 0) + count
    assert called
    called = by_function(called, True)
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


@pytest.fixture(scope="module")
def mutual(export_trace, run_export, tmp_path_factory):
    t = export_trace("mutual_recursion.py")
    out = tmp_path_factory.mktemp("callgrind") / "mutual.out"
    run_export(t["trace"], "callgrind", out)
    report = {f["name"]: f for f in t["report"]["functions"]}
    return dict(t, out=out, report=report)


def test_mutual_recursion_inclusive(mutual):
    """callgrind_annotate's inclusive time of even, odd (re-entered through
    each other 29 deep) and fib (through itself) is the report's total."""
    rows, _ = annotate(mutual["out"], True)
    rows = by_function(rows, False)
    path = mutual["path"]
    for name in ("even", "odd", "fib", "main"):
        assert close(rows["%s:%s" % (path, name)], mutual["report"][name]["total_ns"]), name
    excl = by_function(annotate(mutual["out"], False)[0], True)
    for name in ("even", "odd", "fib"):
        assert close(excl["%s:%s" % (path, name)], mutual["report"][name]["self_ns"], 2000), name
    levels = {LEVEL.match(n).group(2) for n in annotate(mutual["out"], False)[0] if n.endswith(tuple("'%d" % i for i in range(2, 9)))}
    assert levels == {str(i) for i in range(2, 9)}, levels  # 8 levels, the deeper ones in the last


def test_kcachegrind_inclusive_is_self_plus_calls_out(mutual):
    """KCachegrind's inclusive cost of a function is its self cost plus the
    calls out of it, direct recursion left out; below the last level that
    is also the sum of the calls into it (callgrind_annotate's), and no
    call but a direct recursive one costs 0."""
    funcs = read_calls(mutual["out"])
    into = {}
    for caller, (self_ns, calls) in funcs.items():
        for callee, count, cost in calls:
            if callee != caller:
                into[callee] = into.get(callee, 0) + cost
                assert cost > 0, (caller, callee)
    for name, (self_ns, calls) in funcs.items():
        if name == "(all threads)" or name.endswith("'8"):
            continue
        out = sum(cost for callee, count, cost in calls if callee != name)
        assert close(self_ns + out, into[name], 2), name
    assert close(funcs["main"][0] + sum(c for _, n, c in funcs["main"][1]), mutual["report"]["main"]["total_ns"])


@pytest.mark.skipif(importlib.util.find_spec("gprof2dot") is None, reason="gprof2dot not installed (make pytest installs it)")
@pytest.mark.parametrize("name", ["mutual_recursion.py", "varied.py", "fib_calls.py"])
def test_gprof2dot_reads_it(name, export_trace, run_export, tmp_path):
    t = export_trace(name)
    out = tmp_path / "cg.out"
    run_export(t["trace"], "callgrind", out)
    proc = subprocess.run([sys.executable, "-m", "gprof2dot", "-f", "callgrind", "-n", "0", "-e", "0", str(out)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    dot = proc.stdout.decode("utf-8")
    assert dot.startswith("digraph")
    total = sum(f["self_ns"] for f in t["report"]["functions"])
    main = next(f for f in t["report"]["functions"] if f["name"] == "main")
    m = re.search(r'label="main\\n(?:[^"]*\\n)?([0-9.]+)%\\n', dot)
    assert m, dot[:2000]
    assert abs(float(m.group(1)) - 100.0 * main["total_ns"] / total) <= 0.02, (m.group(1), main, total)
