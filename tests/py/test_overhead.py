"""Overhead correction (docs/overhead.md): the program measures the hook's
cost per event at start-up; summaries subtract it per event from self and
total times unless --no-correction is given, and say how much that was.
The known answer is the program's own CPU time for work() untraced."""
import json
import os
import pstats
import re

import pytest

from export_helpers import run_export  # noqa: F401 (fixture)


def _work(data):
    return next(f for f in data["functions"] if f["name"] == "work")


def _summary_json(run_ulma, program, *opts):
    proc = run_ulma(["run", "--no-live", "--summary", "json", "-o", os.devnull] + list(opts) + [program])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stderr), proc


def test_the_summary_says_what_was_subtracted(prog, run_ulma):
    data, _ = _summary_json(run_ulma, prog("many_calls.py"))
    assert data["corrected"] is True
    assert 1 <= data["overhead_ns_per_event"] <= 2000, data["overhead_ns_per_event"]
    assert data["overhead_ns"] == pytest.approx(data["overhead_ns_per_event"] * data["events"], rel=0.01)
    for f in data["functions"]:
        assert f["self_ns"] <= f["raw_self_ns"] and f["total_ns"] <= f["raw_total_ns"], f
        assert f["self_ns"] <= f["total_ns"], f
        assert f["on_cpu_ns"] + f["runnable_ns"] + f["blocked_ns"] == f["self_ns"], f
    text = run_ulma(["run", "--no-live", "-o", os.devnull, prog("many_calls.py")]).stderr.decode()
    assert re.search(r"overhead: the hook costs about \d+ ns per event, [0-9.]+ s over this run; subtracted", text), text


def test_no_correction_shows_raw_times(prog, run_ulma, report_json, tmp_path):
    data, _ = _summary_json(run_ulma, prog("many_calls.py"), "--no-correction")
    assert data["corrected"] is False and data["overhead_ns_per_event"] > 0
    for f in data["functions"]:
        assert f["self_ns"] == f["raw_self_ns"] and f["total_ns"] == f["raw_total_ns"], f
    # the figure travels in the trace: the report corrects, or not, the same way
    trace = str(tmp_path / "t.trace")
    assert run_ulma(["run", "--no-live", "-o", trace, prog("many_calls.py")]).returncode == 0
    corrected, _ = report_json(trace)
    assert corrected["corrected"] is True and corrected["overhead_ns_per_event"] > 0
    raw = json.loads(run_ulma(["report", "--format", "json", "--no-correction", trace]).stdout)
    assert raw["corrected"] is False
    assert _work(raw)["total_ns"] == _work(corrected)["raw_total_ns"]
    assert _work(corrected)["total_ns"] < _work(raw)["total_ns"]


def test_correction_removes_most_of_the_overhead(prog, run_ulma, run_python):
    """work()'s CPU time untraced (the fastest of three runs) against its
    traced on-CPU time, raw and corrected (on-CPU, so that time spent
    waiting for a CPU on a busy machine does not count): the correction
    takes away a good part of what tracing added (50-75% measured here on
    3.9 and 3.12; docs/overhead.md says why not all), and not much more
    than all of it."""
    untraced = min(int(run_python([prog("many_calls.py")]).stdout.split()[1]) for _ in range(3))
    # the per-event cost is measured at start-up in a few milliseconds, so a
    # disturbed start-up can misjudge it either way (CI once saw 17% removed; once a
    # start-up inside a slow spell took out so much that work() kept 45% of its
    # untraced time): the first of three runs that passes both checks counts
    for _ in range(3):
        data, _ = _summary_json(run_ulma, prog("many_calls.py"))
        if not data["time_split"]:
            pytest.skip("no schedstat here")
        w = _work(data)
        removed = w["raw_total_ns"] - w["total_ns"]  # all of it from on-CPU time
        raw_cpu = w["total_on_cpu_ns"] + removed
        added = raw_cpu - untraced
        assert added > 0, (w, untraced)
        if removed >= 0.3 * added and w["total_on_cpu_ns"] >= 0.5 * untraced:
            break
    cost = data["overhead_ns_per_event"]
    assert removed >= 0.3 * added, (removed, added, cost, w, untraced)
    assert w["total_on_cpu_ns"] >= 0.5 * untraced, (cost, w, untraced)


def _overhead_chunks(trace):
    """The OVERHEAD chunks' figures (ps), in the trace's order (docs/trace-format.md)."""
    with open(trace, "rb") as f:
        data = f.read()
    at, figures = 16, []  # the file header, then (type, length, crc32c) before each chunk's bytes
    while at + 12 <= len(data):
        kind, length = int.from_bytes(data[at:at + 4], "little"), int.from_bytes(data[at + 4:at + 8], "little")
        if kind == 7:
            value, shift = 0, 0
            for b in data[at + 12:at + 12 + length]:
                value |= (b & 0x7F) << shift
                shift += 7
            figures.append(value)
        at += 12 + length
    return figures


def test_a_slow_start_up_measure_gives_way_to_the_stop_measure(prog, run_ulma, report_json, run_export, tmp_path):
    """The process measures the hook again at its stop, and the lower figure
    is the run's (docs/overhead.md: a start-up in a slow state measured
    73-86 ns where the run cost 43-50).  ULMA_TEST_CALIBRATION_SCALE=10
    makes the start-up figure ten times what was measured, worse than such
    a start's (the stop's own measure may be slow too, at twice its usual):
    the trace carries it first and the stop's after; the run's summary, the
    report, the pstats export and the Chrome export (its walk looks ahead
    for the last figure, and corrects by it from the first event) all take
    the stop's."""
    program = prog("two_phases.py")  # events in the trace before the stop's figure; none clamped
    normal, _ = _summary_json(run_ulma, program)
    trace = str(tmp_path / "slow.trace")
    proc = run_ulma(["run", "--no-live", "--summary", "json", "-o", trace, program],
                    env={"ULMA_TEST_CALIBRATION_SCALE": "10"})
    assert proc.returncode == 0, proc.stderr
    slow = json.loads(proc.stderr)
    figures = _overhead_chunks(trace)
    assert len(figures) == 2 and figures[0] >= 3 * figures[1], figures
    assert slow["overhead_ns_per_event"] == pytest.approx(figures[1] / 1000, abs=0.001), (slow, figures)
    assert slow["overhead_ns_per_event"] <= 2.5 * normal["overhead_ns_per_event"], (slow, normal)
    report, _ = report_json(trace)
    assert report["overhead_ns_per_event"] == slow["overhead_ns_per_event"]
    mine = [f for f in report["functions"] if f["file"] == program]
    assert {f["name"]: f["self_ns"] for f in mine} == {
        f["name"]: f["self_ns"] for f in slow["functions"] if f["file"] == program}
    assert all(f["self_ns"] > 0 for f in mine), mine
    out = tmp_path / "slow.pstats"
    run_export(trace, "pstats", out, corrected=True)
    rows = {func[2]: (nc, tt, ct) for func, (cc, nc, tt, ct, callers) in pstats.Stats(str(out)).stats.items()
            if func[0] == program}
    for name in ("phase", "inner"):
        row = next(f for f in mine if f["name"] == name)
        calls, tottime, cumtime = rows[name]
        slack = 1e-6 * (1 + calls / 1000)
        assert tottime == pytest.approx(row["self_ns"] / 1e9, rel=1e-3, abs=slack), (name, tottime, row)
        assert cumtime == pytest.approx(row["total_ns"] / 1e9, rel=1e-3, abs=slack), (name, cumtime, row)
    # a timeline export shifts each event by the cost of those before it: the stop's figure from the first one
    out = tmp_path / "slow.json"
    run_export(trace, "chrome", out, corrected=True)
    spans = [e["dur"] for e in json.load(open(out))["traceEvents"] if e.get("ph") == "X" and e["name"] == "phase"]
    row = next(f for f in mine if f["name"] == "phase")
    assert len(spans) == 2 and sum(spans) == pytest.approx(row["total_ns"] / 1e3, rel=1e-3, abs=2), (spans, row)
