"""`ulma export --format chrome`: Chrome / Perfetto trace-event JSON.

json.load reads it; every complete ("X") event has the fields the format
requires; the number of X events of each function equals its call count in
the JSON report; per thread the events nest; every thread and process is
named; the time window and thread filter hold; odd names survive.
"""
import json

import pytest

from export_helpers import ODD_NAMES, export_trace, run_export  # noqa: F401



def load(path):
    with open(str(path), encoding="utf-8") as f:
        data = json.load(f)
    assert isinstance(data["traceEvents"], list)
    assert data["displayTimeUnit"] == "ns"
    for e in data["traceEvents"]:
        assert e["ph"] in ("X", "M", "i", "C"), e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and isinstance(e["name"], str), e
        if e["ph"] == "X":
            assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)), e
            assert e["ts"] >= 0 and e["dur"] >= 0, e
            assert e["cat"] in ("python", "c", "native", "zone"), e
            # a location where it is known: never for C, always for Python and zones
            if e["cat"] in ("python", "zone"):
                assert "loc" in e["args"], e
            elif e["cat"] == "c":
                assert "args" not in e, e
        elif e["ph"] in ("i", "C"):
            assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
            if e["ph"] == "i":
                assert e["s"] == "t", e
            else:
                assert list(e["args"]) == [e["name"]] and isinstance(e["args"][e["name"]], (int, float)), e
    return data


def key(e):
    """(name, file, line) of an X event, as the JSON report names functions."""
    if "args" not in e:  # C, or native without debug information
        return (e["name"], "~", 0)
    file, _, line = e["args"]["loc"].rpartition(":")
    return (e["name"], file, int(line))


def x_events(data):
    return [e for e in data["traceEvents"] if e["ph"] == "X"]


def check_nesting(events):
    """Per thread, sorted by start (longest first), every event lies inside the
    innermost still-open one or after it.  Times are us with ns decimals."""
    by_thread = {}
    for e in events:
        by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in evs:
            while stack and stack[-1] <= e["ts"] + 0.0005:
                stack.pop()
            end = e["ts"] + e["dur"]
            if stack:
                assert end <= stack[-1] + 0.0015, ("overlapping frames", e)
            stack.append(end)


@pytest.fixture(scope="module")
def varied(export_trace, run_export, tmp_path_factory):
    t = export_trace("varied.py")
    out = tmp_path_factory.mktemp("chrome") / "varied.json"
    run_export(t["trace"], "chrome", out)
    return dict(t, data=load(out))


def test_x_events_per_function_equal_calls(varied):
    want = {}
    for f in varied["report"]["functions"]:
        k = (f["name"], f["file"], f["line"])
        want[k] = want.get(k, 0) + f["calls"]
    got = {}
    for e in x_events(varied["data"]):
        got[key(e)] = got.get(key(e), 0) + 1
    assert got == want


def test_events_nest_per_thread(varied):
    check_nesting(x_events(varied["data"]))


def test_threads_and_processes_are_named(varied):
    meta = [e for e in varied["data"]["traceEvents"] if e["ph"] == "M"]
    threads = {(e["pid"], e["tid"]) for e in meta if e["name"] == "thread_name"}
    assert threads == {(t["pid"], t["tid"]) for t in varied["report"]["thread_list"]}
    procs = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    assert set(procs) == {t["pid"] for t in varied["report"]["thread_list"]}
    assert any("varied.py" in name for name in procs.values()), procs
    assert not any("pid" in name for name in procs.values()), procs  # the viewers add the pid
    assert {(e["pid"], e["tid"]) for e in x_events(varied["data"])} <= threads


def test_durations_match_the_report(varied):
    """Summed over a non-recursive function's events, dur is its total time."""
    report = varied["report"]
    main = [f for f in report["functions"] if f["file"] == varied["path"] and f["name"] == "main"][0]
    durs = [e["dur"] for e in x_events(varied["data"]) if key(e) == ("main", main["file"], main["line"])]
    assert len(durs) == 1
    assert durs[0] * 1000 == pytest.approx(main["total_ns"], rel=0.001, abs=2)
    assert varied["data"]["otherData"]["complete"] is True
    assert varied["data"]["otherData"]["lost_events"] == varied["report"]["lost"] == 0


def test_thread_filter(varied, run_export, tmp_path):
    thread = [t for t in varied["report"]["thread_list"] if t["tid"] != t["pid"]][0]
    out = tmp_path / "t.json"
    run_export(varied["trace"], "chrome", out, "--thread", str(thread["tid"]))
    evs = x_events(load(out))
    assert evs and {(e["pid"], e["tid"]) for e in evs} == {(thread["pid"], thread["tid"])}
    assert 2 * len(evs) == thread["events"]  # lossless: each frame is one enter and one exit


@pytest.mark.once("the export's time window (C) on a call-heavy trace")
def test_time_window(export_trace, run_export, tmp_path):
    """fib_calls.py computes for tens of ms: a 2 ms window in the middle of
    main holds clipped fib frames only within it, with main and its callers
    cut to the window."""
    t = export_trace("fib_calls.py")
    whole = tmp_path / "all.json"
    run_export(t["trace"], "chrome", whole)
    main = [e for e in x_events(load(whole)) if e["name"] == "main"]
    assert len(main) == 1 and main[0]["dur"] > 4000, main
    start_ns = int((main[0]["ts"] + main[0]["dur"] / 2) * 1000)
    out = tmp_path / "w.json"
    run_export(t["trace"], "chrome", out, "--from", "%dns" % start_ns, "--to", "%dus" % ((start_ns + 2_000_000) // 1000))
    evs = x_events(load(out))
    lo, hi = start_ns / 1000, (start_ns // 1000) + 2000
    assert evs
    for e in evs:
        assert lo - 0.001 <= e["ts"] and e["ts"] + e["dur"] <= hi + 0.002, e
    outer = [e for e in evs if e["name"] == "main"]
    assert len(outer) == 1 and outer[0]["ts"] == pytest.approx(lo, abs=0.001)
    assert outer[0]["dur"] == pytest.approx(hi - lo, abs=0.002)
    check_nesting(evs)


def test_odd_names_survive(export_trace, run_export, tmp_path):
    t = export_trace("odd_names.py")
    out = tmp_path / "odd.json"
    run_export(t["trace"], "chrome", out)
    raw = out.read_bytes()
    # as they are: Perfetto's JSON importer would show \u003cscript\u003e literally
    assert b"<script>alert(1)</script>" in raw and b"\\u003c" not in raw
    got = {}
    for e in x_events(load(out)):
        got[e["name"]] = got.get(e["name"], 0) + 1
    for i, name in enumerate(ODD_NAMES):
        assert got.get(name) == i + 1, (name, got)
