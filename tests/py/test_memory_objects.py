"""Objects per type (`ulma run --memory` on Python 3.13+, docs/memory.md,
"Objects"), with known answers: N lists made in a function are N `list`
created there, K instances of a user class K of it, D dicts made and
dropped D `dict` created; per type the run's totals, the most left at the
end first; `ulma report` agrees.  Before 3.13 there is no hook: the JSON
says objects_counted false and lists none.

Destroyed counts are checked only where CPython reports them: 3.13.0-3.13.2
free objects from the eval loop without the DESTROY event (cpython#130382).
"""
import json
import sys

import pytest

N, K, D = 1000, 700, 500
HAS_REFTRACER = sys.version_info >= (3, 13)


@pytest.fixture(scope="module")
def runs(prog, run_ulma, report_json, tmp_path_factory):
    trace = str(tmp_path_factory.mktemp("objects") / "o.trace")
    proc = run_ulma(["run", "--memory", "--no-live", "--summary", "json", "-o", trace, prog("mem_objects.py"),
                     str(N), str(K), str(D)])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    report, _ = report_json(trace)
    return json.loads(proc.stderr), report


def created_in(data, function):
    f = next(f for f in data["functions"] if f["name"] == function)
    return {o["type"]: o["created"] for o in f["objects"]}


@pytest.mark.skipif(not HAS_REFTRACER, reason="objects are counted from 3.13 on (PyRefTracer)")
def test_n_objects_of_each_type_created_where_made(runs):
    live, _ = runs
    assert live["objects_counted"] is True
    assert created_in(live, "make_lists")["list"] == N
    assert created_in(live, "make_points")["Point"] == K
    assert created_in(live, "churn")["dict"] == D
    assert "Point" not in created_in(live, "make_lists")


@pytest.mark.skipif(not HAS_REFTRACER, reason="objects are counted from 3.13 on (PyRefTracer)")
def test_types_largest_live_first(runs):
    live, _ = runs
    types = {o["type"]: o for o in live["objects"]}
    assert types["list"]["created"] >= N and types["Point"]["created"] == K
    assert types["Point"]["destroyed"] == 0, "all kept"
    nets = [o["created"] - o["destroyed"] for o in live["objects"]]
    assert nets == sorted(nets, reverse=True)
    assert live["objects_created"] == sum(o["created"] for o in live["objects"]) or len(live["objects"]) == 200
    # the kept lists and points are among the most left
    top = [o["type"] for o in live["objects"][:5]]
    assert "list" in top and "Point" in top, top


def test_report_agrees(runs):
    live, report = runs
    for key in ("objects_counted", "objects_created", "objects_destroyed", "objects"):
        assert live[key] == report[key], key
    for name in ("make_lists", "make_points", "churn"):
        assert created_in(live, name) == created_in(report, name)


@pytest.mark.skipif(HAS_REFTRACER, reason="3.13+ counts objects")
def test_before_313_objects_are_not_counted(runs):
    live, _ = runs
    assert live["objects_counted"] is False and live["objects"] == []
    assert all(f["objects"] == [] for f in live["functions"] if "objects" in f)
