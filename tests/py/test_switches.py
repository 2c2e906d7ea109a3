"""The time split from the scheduler's own context-switch records
(docs/time-split.md): exact on-CPU, runnable and blocked time per function
and the context switches each took, checked on the known answer of
programs/loop_sleep.py; the schedstat fallback still splits when asked
for; and `ulma report` gives the live numbers to the ns."""
import json

import pytest


def rows_of(data, path):
    out = {f["name"]: f for f in data["functions"] if f["file"] in (path, "~")}
    return out


@pytest.fixture(scope="module")
def switch_records(run_ulma, prog, tmp_path_factory):
    """Skip where this machine's kernel refuses perf_event_open (a seccomp
    filter, perf_event_paranoid 3): ulma then samples schedstat, which the
    other tests cover."""
    trace = str(tmp_path_factory.mktemp("probe") / "p.trace")
    proc = run_ulma(["run", "--split", "switches", "--summary", "json", "-o", trace, prog("exit3.py")])
    if b"no context-switch records" in proc.stderr:
        pytest.skip("the kernel refuses context-switch records here: %s" % proc.stderr.decode(errors="replace"))


@pytest.fixture(scope="module")
def switched(prog, traced_json, switch_records):
    data, proc = traced_json(prog("loop_sleep.py"))
    assert proc.returncode == 0, proc.stderr
    return rows_of(data, prog("loop_sleep.py")), data


def test_the_method_is_named(switched):
    _, data = switched
    assert data["split_method"] == "switches" and data["time_split"] is True
    assert data["switches_lost"] == 0
    assert data["monitor_cpu_ns"] > 0


def test_a_loop_between_sleeps_is_on_a_cpu(switched):
    """pure_loop never blocks: its time is on a CPU, or runnable when the
    machine is busy; at most 5% blocked (the issue's check: at least 95% on
    a CPU on a quiet machine)."""
    rows, _ = switched
    f = rows["pure_loop"]
    assert f["calls"] == 100
    assert f["blocked_ns"] <= 0.05 * f["self_ns"], f
    assert f["on_cpu_ns"] + f["runnable_ns"] >= 0.95 * f["self_ns"], f
    assert f["voluntary_switches"] <= 5, f


def test_a_sleep_between_loops_is_blocked(switched):
    rows, _ = switched
    f = rows["time.sleep"]
    assert f["calls"] == 100
    assert f["self_ns"] >= 100 * 10_000_000
    assert f["on_cpu_ns"] + f["runnable_ns"] <= 0.05 * f["self_ns"], f
    assert f["blocked_ns"] >= 0.95 * f["self_ns"], f
    assert f["voluntary_switches"] >= 100, f  # at least one per sleep
    assert f["total_voluntary_switches"] == f["voluntary_switches"], f


def test_totals_hold_the_switches_below(switched):
    rows, _ = switched
    module = rows["<module>"]
    assert module["total_voluntary_switches"] >= rows["time.sleep"]["voluntary_switches"], module
    assert module["total_blocked_ns"] >= rows["time.sleep"]["blocked_ns"], module


def test_schedstat_when_asked(prog, run_ulma, trace_path):
    """--split schedstat samples instead, as where perf_event_open is refused."""
    proc = run_ulma(["run", "--split", "schedstat", "--summary", "json", "-o", trace_path, prog("loop_sleep.py")])
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stderr)
    assert data["split_method"] == "schedstat" and data["time_split"] is True
    rows = rows_of(data, prog("loop_sleep.py"))
    assert "voluntary_switches" not in rows["time.sleep"]
    sleep = rows["time.sleep"]
    assert sleep["blocked_ns"] >= 0.5 * sleep["self_ns"], sleep  # sampled: smeared, but mostly blocked


@pytest.mark.parametrize("split", ["switches", "schedstat"])
def test_report_reproduces_the_live_split(prog, run_ulma, report_json, trace_path, split, switch_records):
    """`ulma run --summary json` and `ulma report` give the same numbers."""
    proc = run_ulma(["run", "--split", split, "--summary", "json", "-o", trace_path, prog("loop_sleep.py")])
    assert proc.returncode == 0, proc.stderr
    live = json.loads(proc.stderr)
    report, _ = report_json(trace_path)
    assert report["split_method"] == live["split_method"] == split
    key = lambda f: (f["file"], f["line"], f["name"])  # noqa: E731
    live_rows = {key(f): f for f in live["functions"]}
    fields = ["calls", "self_ns", "total_ns", "on_cpu_ns", "runnable_ns", "blocked_ns", "total_on_cpu_ns",
              "total_blocked_ns"]
    if split == "switches":
        fields += ["voluntary_switches", "involuntary_switches", "total_voluntary_switches"]
    for f in report["functions"]:
        assert {k: f[k] for k in fields} == {k: live_rows[key(f)][k] for k in fields}, f["name"]
    assert report["monitor_cpu_ns"] == live["monitor_cpu_ns"]
