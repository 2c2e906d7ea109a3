"""RSS over time (docs/memory.md, "Memory over time"): with --memory the
monitor samples each traced process's resident bytes (/proc/PID/statm)
every 15 ms into the counter mark "memory: RSS (bytes)", and the summary
reports the highest as peak RSS.  Known answer: mem_rss.py touches a 200
MiB bytearray, holds it, frees it; the counter rises by at least 200 MiB
over where it ends once the bytearray is freed, read back from the
Chrome export, and each sample sits at the time it was read: inside
grow()'s slice, at many distinct times (not at the time of the thread's
last record drained, as before); peak_rss_bytes in the JSON (from `ulma run` and from `ulma report`
of the trace) is at least 200 MiB; without --memory there is no counter."""
import json

import pytest

GROWN = 200 << 20
RSS = "memory: RSS (bytes)"


@pytest.fixture(scope="module")
def traced(prog, run_ulma, tmp_path_factory):
    d = tmp_path_factory.mktemp("rss")
    path = str(d / "r.trace")
    proc = run_ulma(["run", "--memory", "--no-live", "--summary", "json", "-o", path, prog("mem_rss.py"), "200", "0.5"])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return path, json.loads(proc.stderr)


def chrome_events(run_ulma, path, out):
    proc = run_ulma(["export", path, "--format", "chrome", "-o", str(out)])
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    return data["traceEvents"] if isinstance(data, dict) else data


def rss_samples(events):
    return [(e["ts"], e["args"][RSS]) for e in events if e.get("ph") == "C" and e["name"] == RSS]


def test_chrome_rss_rises_and_falls(traced, run_ulma, tmp_path):
    events = chrome_events(run_ulma, traced[0], tmp_path / "r.json")
    samples = rss_samples(events)
    times = [t for t, _ in samples]
    assert len(samples) >= 10 and times == sorted(times), samples
    (grow,) = [e for e in events if e.get("ph") == "X" and e["name"] == "grow"]
    values = [v for _, v in samples]
    top = values.index(max(values))
    # up by the bytearray while grow() holds it (over where it ends, freed), then back down
    assert 0 < top < len(values) - 1, values
    assert max(values) >= values[-1] + GROWN, (max(values), values[-1])
    # the marks leave the events' times alone: the sleep inside grow() stays inside it
    (inner,) = [e for e in events if e.get("ph") == "X" and e["name"] == "time.sleep"
                and grow["ts"] < e["ts"] < grow["ts"] + grow["dur"]]
    assert inner["ts"] + inner["dur"] <= grow["ts"] + grow["dur"]


def test_chrome_rss_at_its_own_times_inside_grow(traced, run_ulma, tmp_path):
    """Each sample carries the time it was read: while grow() holds the
    bytearray (its records reach the monitor only after the sleep), the
    samples lie inside grow()'s slice at many distinct times, and the
    climb by 200 MiB shows there, not at one earlier time."""
    events = chrome_events(run_ulma, traced[0], tmp_path / "r.json")
    (grow,) = [e for e in events if e.get("ph") == "X" and e["name"] == "grow"]
    start, end = grow["ts"], grow["ts"] + grow["dur"]
    inside = [(t, v) for t, v in rss_samples(events) if start <= t <= end]
    before = [v for t, v in rss_samples(events) if t < start]
    # 0.5 s of sleep at one sample per 15 ms: dozens; 10 leaves room for a loaded machine
    assert len({t for t, _ in inside}) >= 10, inside
    assert before and max(v for _, v in inside) >= before[-1] + GROWN, (before[-1:], inside)
    # the samples while the bytearray is held come after its pages were touched
    (inner,) = [e for e in events if e.get("ph") == "X" and e["name"] == "time.sleep" and start < e["ts"] < end]
    held = [v for t, v in inside if inner["ts"] <= t <= inner["ts"] + inner["dur"]]
    assert len(held) >= 5 and min(held) >= before[-1] + GROWN, (before[-1], held)


def test_call_counts_unchanged(traced):
    _, live = traced
    counts = {f["name"]: f["calls"] for f in live["functions"]}
    assert counts["grow"] == 1 and counts["main"] == 1, counts
    assert counts["time.sleep"] == 3, counts


def test_rss_held_beyond_the_bound(prog, run_ulma, tmp_path):
    """A native call longer than the samples a process may hold (256, about
    3.8 s): the oldest are written early, at the thread's latest drained
    time, and nothing else changes: the run succeeds, the samples inside the
    sleep still sit at their own times holding the bytearray, and the sleep
    keeps its 4.2 s (an event moved forward by a sample would shorten it)."""
    path = str(tmp_path / "b.trace")
    proc = run_ulma(["run", "--memory", "--no-live", "--summary", "none", "-o", path, prog("mem_rss.py"), "50", "0.1",
                     "4.2"])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    events = chrome_events(run_ulma, path, tmp_path / "b.json")
    (grow,) = [e for e in events if e.get("ph") == "X" and e["name"] == "grow"]
    (inner,) = [e for e in events if e.get("ph") == "X" and e["name"] == "time.sleep"
                and grow["ts"] < e["ts"] < grow["ts"] + grow["dur"]]
    assert inner["dur"] >= 4.2e6 and inner["ts"] + inner["dur"] <= grow["ts"] + grow["dur"], (inner, grow)
    samples = rss_samples(events)
    before = [v for t, v in samples if t < grow["ts"]]
    held = [(t, v) for t, v in samples if inner["ts"] <= t <= inner["ts"] + inner["dur"]]
    assert before and len({t for t, _ in held}) >= 10, held
    assert min(v for _, v in held) >= before[0] + (50 << 20), (before[0], held)


def test_json_peak_rss(traced, report_json):
    path, live = traced
    assert live["peak_rss_bytes"] >= GROWN, live["peak_rss_bytes"]
    report, _ = report_json(path)
    assert report["peak_rss_bytes"] == live["peak_rss_bytes"]


def test_without_memory_no_rss(prog, run_ulma, tmp_path):
    path = str(tmp_path / "n.trace")
    proc = run_ulma(["run", "--no-live", "--summary", "none", "-o", path, prog("mem_rss.py"), "1", "0"])
    assert proc.returncode == 0
    assert not rss_samples(chrome_events(run_ulma, path, tmp_path / "n.json"))


@pytest.mark.parametrize("how", ["fork", "self"])
def test_rss_of_a_process_leaving_by_os_exit(prog, run_ulma, tmp_path, how):
    """A process that leaves by os._exit while sleeping inside grow() (a
    forked child the monitor finds dead, or the program itself): its last
    records were never published and are salvaged from its ring.  The
    samples held until then (read during the sleep) go into the stream
    before those records, each at its own time, not bunched at the time
    of the last salvaged record after them."""
    path = str(tmp_path / "x.trace")
    proc = run_ulma(["run", "--memory", "--no-live", "--summary", "none", "-o", path, prog("mem_rss_exit.py"), "40",
                     "0.4", how])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    events = chrome_events(run_ulma, path, tmp_path / "x.json")
    (grow,) = [e for e in events if e.get("ph") == "X" and e["name"] == "grow"]
    (inner,) = [e for e in events if e.get("ph") == "X" and e["name"] == "time.sleep" and e["pid"] == grow["pid"]
                and grow["ts"] < e["ts"] < grow["ts"] + grow["dur"]]
    mine = [(e["ts"], e["args"][RSS]) for e in events
            if e.get("ph") == "C" and e["name"] == RSS and e["pid"] == grow["pid"]]
    assert [t for t, _ in mine] == sorted(t for t, _ in mine), mine
    held = [(t, v) for t, v in mine if inner["ts"] <= t <= inner["ts"] + inner["dur"]]
    # 0.4 s at one sample per 15 ms: about 26; 10 leaves room for a loaded machine
    assert len({t for t, _ in held}) >= 10, (inner, mine)
    assert min(v for _, v in held) >= 30 << 20, held
