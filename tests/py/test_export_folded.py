"""`ulma export --format folded`: `a;b;c VALUE` lines as flamegraph.pl,
inferno and speedscope read them.

The format is checked strictly (UTF-8, one stack and one positive integer
per line, no empty frame, no raw ';' or line break inside a frame), then
parsed back: self-time values add up to the report's total self time, and
with --counts each function's lines add up to its exact call count.
Names with separators in them come back intact after percent-decoding.
"""
import re
from urllib.parse import unquote

import pytest

from export_helpers import ODD_NAMES, export_trace, odd_names_line, run_export  # noqa: F401

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


def label(f):
    """The frame a report row becomes (before escaping)."""
    if f["kind"] == "c":
        return f["name"]
    return "%s (%s:%d)" % (f["name"], f["file"], f["line"])


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
    return dict(t, self_rows=parse_folded(d / "self.folded"), count_rows=parse_folded(d / "counts.folded"))


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
            assert abs(got.get(label(f), 0) - want) <= nlines.get(label(f), 0) + want * 0.001, f


def test_counts_are_call_counts(program):
    got = by_leaf(program["count_rows"])
    want = {}
    for f in program["report"]["functions"]:
        want[label(f)] = want.get(label(f), 0) + f["calls"]
    assert got == want


def test_stacks_are_outermost_first(export_trace, run_export, tmp_path):
    t = export_trace("fib_calls.py")
    out = tmp_path / "fib.folded"
    run_export(t["trace"], "folded", out, "--counts")
    rows = parse_folded(out)
    main = "main (%s:8)" % t["path"]
    fib = "fib (%s:4)" % t["path"]
    deepest = max((frames for frames, v in rows), key=len)
    i = deepest.index(main)
    assert deepest[i - 1] == "<module> (%s:1)" % t["path"]
    assert deepest[i + 1 :] == [fib] * 20  # fib(20) recurses 20 frames deep: fib(20) .. fib(1)


def test_names_with_separators_round_trip(export_trace, run_export, tmp_path):
    t = export_trace("odd_names.py")
    out = tmp_path / "odd.folded"
    run_export(t["trace"], "folded", out, "--counts")
    rows = parse_folded(out)
    got = by_leaf(rows)
    for i, name in enumerate(ODD_NAMES):
        key = "%s (%s:%d)" % (name, t["path"], odd_names_line(t["path"]))
        assert got.get(key) == i + 1, (name, sorted(got))
    raw = out.read_bytes()
    assert b"semi%3Bcolon" in raw and b"new%0Aline" in raw and b"per%25cent" in raw


def test_filters_apply(export_trace, run_export, tmp_path):
    t = export_trace("fib_calls.py")
    out = tmp_path / "f.folded"
    run_export(t["trace"], "folded", out, "--include", "*/fib_calls.py", "--exclude", "<module>")
    rows = parse_folded(out)
    assert {frames[0] for frames, v in rows} == {"main (%s:8)" % t["path"]}
    total = sum(f["total_ns"] for f in t["report"]["functions"] if f["name"] == "main") / 1000
    assert abs(sum(v for frames, v in rows) - total) <= 1 + total * 0.001
