"""`ulma export --format folded`: `a;b;c VALUE` lines as flamegraph.pl,
inferno and speedscope read them.

The format is checked strictly (UTF-8, one stack and one positive integer
per line, no empty frame, no raw ';' or line break inside a frame), then
parsed back: self-time values add up to the report's total self time, and
with --counts each function's lines add up to its exact call count.
Names with separators in them come back intact after percent-decoding.
Files are short: relative to the program's directory, the standard library
as <stdlib>/.  Direct recursion is folded: a hand-made trace 100,000 calls
deep gives one short line; 100,000 deep through two functions is refused
with the size it would reach, and nothing is written.  (No reader of
folded stacks, flamegraph.pl or inferno, is packaged in Debian 12 or on
PyPI, so the format is checked by the strict parser below.)
"""
import os
import re
from urllib.parse import unquote

import pytest

import trace_builder
from export_helpers import ODD_NAMES, export_trace, no_temp_files, odd_names_line, run_export  # noqa: F401

LINE = re.compile(r"^(?P<stack>[^\n]+) (?P<value>[1-9][0-9]*)$")


def parse_folded(path):
    """[(frames, value)], failing on anything flame-graph tools could misread."""
    with open(str(path), "rb") as f:
        data = f.read()
    text = data.decode("utf-8")  # strict: the file is valid UTF-8
    assert text.endswith("\n") or text == ""
    rows = []
    for line in text[:-1].split("\n"):
        m = LINE.match(line)
        assert m, "malformed folded line: %r" % line
        frames = m.group("stack").split(";")
        for fr in frames:
            assert fr, "empty frame in %r" % line
            assert not any(c in fr for c in "\r\t\x00\x85\u2028\u2029"), repr(fr)
            assert not re.search(r"%(?![0-9A-F]{2})", fr), "stray %% in %r" % fr
        rows.append((frames, int(m.group("value"))))
    assert len(text.splitlines()) == len(rows)  # no hidden line breaks either
    return rows


def short(path, program_dir):
    """A file as folded frames show it (src/analysis/short_path.h)."""
    if path.startswith(program_dir + "/"):
        return path[len(program_dir) + 1 :]
    m = re.match(r".*/(?:site|dist)-packages/(.+)$", path)
    if m:
        return "<site>/" + m.group(1)
    m = re.match(r".*?/lib/python[0-9.]+/(.+)$", path)
    return "<stdlib>/" + m.group(1) if m else path


def label(f, program_dir):
    """The frame a report row becomes (before escaping)."""
    if f["kind"] == "c":
        return f["name"]
    return "%s (%s:%d)" % (f["name"], short(f["file"], program_dir), f["line"])


def by_leaf(rows):
    out = {}
    for frames, value in rows:
        leaf = unquote(frames[-1], errors="strict")
        out[leaf] = out.get(leaf, 0) + value
    return out


@pytest.fixture(scope="module", params=["varied.py", "fib_calls.py"])
def program(request, export_trace, run_export, tmp_path_factory):
    t = export_trace(request.param)
    d = tmp_path_factory.mktemp("folded")
    run_export(t["trace"], "folded", d / "self.folded")
    run_export(t["trace"], "folded", d / "counts.folded", "--counts")
    return dict(t, self_rows=parse_folded(d / "self.folded"), count_rows=parse_folded(d / "counts.folded"),
                dir=os.path.dirname(t["path"]))


def test_values_add_up_to_total_self_time(program):
    total_us = sum(f["self_ns"] for f in program["report"]["functions"]) / 1000
    got = sum(v for frames, v in program["self_rows"])
    assert abs(got - total_us) <= 1 + total_us * 0.001, (got, total_us)


def test_self_time_per_function(program):
    got = by_leaf(program["self_rows"])
    nlines = {}
    for frames, v in program["self_rows"]:
        leaf = unquote(frames[-1])
        nlines[leaf] = nlines.get(leaf, 0) + 1
    for f in program["report"]["functions"]:
        want = f["self_ns"] / 1000
        if want >= 200:  # the bigger rows: rounding moves at most 1 us per line
            assert abs(got.get(label(f, program["dir"]), 0) - want) <= nlines.get(label(f, program["dir"]), 0) + want * 0.001, f


def test_counts_are_call_counts(program):
    got = by_leaf(program["count_rows"])
    want = {}
    for f in program["report"]["functions"]:
        want[label(f, program["dir"])] = want.get(label(f, program["dir"]), 0) + f["calls"]
    assert got == want


def test_stacks_are_outermost_first(export_trace, run_export, tmp_path):
    t = export_trace("fib_calls.py")
    out = tmp_path / "fib.folded"
    run_export(t["trace"], "folded", out, "--counts")
    rows = parse_folded(out)
    main = "main (fib_calls.py:8)"
    fib = "fib (fib_calls.py:4)"
    fibs = [frames for frames, v in rows if fib in frames]
    assert len(fibs) == 1  # fib(20) .. fib(1), 20 deep, folded into one frame
    i = fibs[0].index(main)
    assert fibs[0][i - 1] == "<module> (fib_calls.py:1)" and fibs[0][i + 1 :] == [fib]
    assert dict((";".join(frames), v) for frames, v in rows)[";".join(fibs[0])] == 218910
    assert not [frames for frames, v in rows if any(a == b for a, b in zip(frames, frames[1:]))]


def test_names_with_separators_round_trip(export_trace, run_export, tmp_path):
    t = export_trace("odd_names.py")
    out = tmp_path / "odd.folded"
    run_export(t["trace"], "folded", out, "--counts")
    rows = parse_folded(out)
    got = by_leaf(rows)
    for i, name in enumerate(ODD_NAMES):
        key = "%s (odd_names.py:%d)" % (name, odd_names_line(t["path"]))
        assert got.get(key) == i + 1, (name, sorted(got))
    raw = out.read_bytes()
    assert b"semi%3Bcolon" in raw and b"new%0Aline" in raw and b"per%25cent" in raw


def test_filters_apply(export_trace, run_export, tmp_path):
    t = export_trace("fib_calls.py")
    out = tmp_path / "f.folded"
    run_export(t["trace"], "folded", out, "--include", "*/fib_calls.py", "--exclude", "<module>")
    rows = parse_folded(out)
    assert {frames[0] for frames, v in rows} == {"main (fib_calls.py:8)"}
    total = sum(f["total_ns"] for f in t["report"]["functions"] if f["name"] == "main") / 1000
    assert abs(sum(v for frames, v in rows) - total) <= 1 + total * 0.001


def test_short_files(program):
    """No frame names the program's directory or the standard library's."""
    frames = {fr for stack, v in program["count_rows"] for fr in stack}
    assert not [fr for fr in frames if program["dir"] in fr or "/lib/python" in fr]
    assert any("(<stdlib>/" in fr for fr in frames) or program["path"].endswith("fib_calls.py")
    assert "main (%s:%d)" % (os.path.basename(program["path"]), next(
        f["line"] for f in program["report"]["functions"] if f["name"] == "main")) in frames


def deep_trace(path, depth, names):
    """A hand-made trace: `depth` nested calls cycling through names, 1 ns apart."""
    events = [(i + 1, "enter", 1 + i % len(names)) for i in range(depth)]
    events += [(depth + 1 + i, "exit") for i in range(depth)]
    path.write_bytes(trace_builder.trace(0, 0, 2 * depth + 2, 2 * depth + 2, events, func_names=names))


def test_deep_direct_recursion_is_one_line(run_ulma, tmp_path):
    deep_trace(tmp_path / "deep.trace", 100000, ("f",))
    out = tmp_path / "deep.folded"
    proc = run_ulma(["export", str(tmp_path / "deep.trace"), "--format", "folded", "--counts", "-o", str(out)])
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == b"f (made.py:1) 100000\n"


def test_deep_mutual_recursion_is_refused(run_ulma, tmp_path):
    deep_trace(tmp_path / "deep.trace", 100000, ("f", "g"))
    out = tmp_path / "deep.folded"
    out.write_bytes(b"mine")
    proc = run_ulma(["export", str(tmp_path / "deep.trace"), "--format", "folded", "-o", str(out)])
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert len(err.splitlines()) == 1, err
    m = re.match(r"^ulma: not writing '.*': folded stacks would take up to ([0-9.]+) GiB \(100000 frames deep", err)
    assert m and float(m.group(1)) > 60, err  # 100000 lines of 50000 frames on average, 14 bytes each
    assert out.read_bytes() == b"mine" and no_temp_files(tmp_path) == []

