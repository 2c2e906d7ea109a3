"""Where the time goes: on-CPU, runnable and blocked time per function, from
schedstat samples, checked on programs whose answers are known (docs/time-split.md).
Thresholds are the issue's, and are wide enough for a noisy machine."""
import json
import os

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


@pytest.fixture(scope="module")
def split(prog, traced_json):
    data, proc = traced_json(prog("time_split.py"))
    assert proc.stdout == b"done\n"
    assert data["time_split"] is True
    return {f["name"]: f for f in data["functions"] if f["file"] == prog("time_split.py")}, data


def test_parts_add_up_to_self_and_total(split):
    rows, data = split
    for f in data["functions"]:
        assert f["on_cpu_ns"] + f["runnable_ns"] + f["blocked_ns"] == f["self_ns"], f
        assert f["total_on_cpu_ns"] + f["total_runnable_ns"] + f["total_blocked_ns"] == f["total_ns"], f


def test_a_sleeping_function_is_blocked(split):
    rows, _ = split
    f = rows["sleeper"]
    assert f["total_ns"] >= 380_000_000
    assert f["total_blocked_ns"] >= 0.85 * f["total_ns"], f


def test_a_cpu_bound_function_is_on_cpu(split):
    """burner() never blocks: the time it does not spend waiting for a CPU
    (runnable, when the machine is busy) it spends on one.  On an idle
    machine that makes it at least 85% on-CPU, the issue's check."""
    rows, _ = split
    f = rows["burner"]
    assert f["total_blocked_ns"] <= 0.15 * f["total_ns"], f
    assert f["total_on_cpu_ns"] >= 0.85 * (f["total_ns"] - f["total_runnable_ns"]), f


def test_four_gil_bound_threads_mostly_wait(split):
    rows, _ = split
    f = rows["spin"]
    assert f["calls"] == 4
    waiting = f["runnable_ns"] + f["blocked_ns"]
    assert waiting >= 0.40 * f["self_ns"], f


def test_report_reproduces_the_live_split(prog, run_ulma, report_json, trace_path):
    """`ulma run --summary json` and `ulma report` give the same numbers."""
    proc = run_ulma(["run", "--lossless", "--summary", "json", "-o", trace_path, prog("time_split.py")])
    assert proc.returncode == 0
    live = json.loads(proc.stderr)
    report, _ = report_json(trace_path)
    key = lambda f: (f["file"], f["line"], f["name"])  # noqa: E731
    live_rows = {key(f): f for f in live["functions"]}
    for f in report["functions"]:
        g = live_rows[key(f)]
        for field in ("calls", "self_ns", "on_cpu_ns", "runnable_ns", "total_on_cpu_ns"):
            assert f[field] == g[field], (field, f, g)
    assert report["parallelism"] == live["parallelism"]


def test_a_short_program_has_its_cpu_time_and_parallelism(run_ulma, tmp_path):
    """A program of a few ms on one thread: its CPU time is the time its
    frames spent on a CPU (it read 0 when the thread had a single schedstat
    sample), and parallelism is that over the traced span, its first event
    to its last (the session's wall time, interpreter start-up included,
    made it 0.00)."""
    script = tmp_path / "short.py"
    script.write_text("def f():\n    return sum(i * i for i in range(20000))\nf()\n")
    proc = run_ulma(["run", "--summary", "json", "-o", str(tmp_path / "t.trace"), str(script)])
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stderr)
    if not data["time_split"]:
        pytest.skip("no on-CPU split here (docs/time-split.md)")
    (t,) = data["thread_list"]
    # its span less its time off a CPU: its frames' on-CPU time, and any time with no frame open
    assert t["on_cpu_ns"] > 0, t
    assert abs(t["cpu_ns"] - (t["on_cpu_ns"] + t["wall_ns"] - t["self_ns"])) <= 2, t
    assert abs(data["parallelism"] - t["cpu_ns"] / t["wall_ns"]) <= 0.0006, (data["parallelism"], t)
    assert t["wall_ns"] < data["duration_ns"]


def test_the_monitors_share_is_given_for_a_program_of_substance(run_ulma, tmp_path):
    """The summary gives the monitor's CPU as a share of the program's only
    from 0.1 s of it: for a few ms, the monitor's start-up is all the share
    says (a 6-event script read 6762%)."""
    short, longer = tmp_path / "short.py", tmp_path / "longer.py"
    short.write_text("print('hi')\n")
    longer.write_text("import time\n"
                      "def spin():\n"
                      "    end = time.process_time() + 0.3\n"
                      "    while time.process_time() < end:\n"
                      "        pass\n"
                      "spin()\n")
    lines = {}
    for script in (short, longer):
        proc = run_ulma(["run", "--no-live", "-o", str(tmp_path / "t.trace"), str(script)])
        assert proc.returncode == 0, proc.stderr
        (lines[script],) = [ln for ln in proc.stderr.decode().splitlines() if ln.startswith("monitor: ")]
    assert "of the program's" not in lines[short], lines[short]
    assert "% of the program's" in lines[longer], lines[longer]


def _parallelism(run_ulma, tmp_path, mode):
    trace = str(tmp_path / (mode + ".trace"))
    # --no-c-calls: two CPU-bound workers on two cores leave the monitor no
    # spare core for every builtin call (docs/time-split.md)
    proc = run_ulma(["run", "--no-c-calls", "--summary", "json", "-o", trace,
                     os.path.join(EXAMPLES, "parallel_mergesort.py"), mode])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stderr)["parallelism"]


def test_seed_000_threads_do_not_run_in_parallel(run_ulma, tmp_path):
    assert _parallelism(run_ulma, tmp_path, "threads") <= 1.2


def _untraced_parallelism():
    """CPU time over wall time of the untraced processes version."""
    import subprocess
    import sys
    import time

    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, os.path.join(EXAMPLES, "parallel_mergesort.py"), "processes"],
                            stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    assert status == 0
    return (usage.ru_utime + usage.ru_stime) / wall


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two CPUs")
def test_seed_000_processes_do(run_ulma, tmp_path):
    # other load on the machine can only lower parallelism, never raise it:
    # the best of three runs measures what the program can do, and a machine
    # too busy to show it even untraced cannot judge ulma
    untraced = max(_untraced_parallelism() for _ in range(2))
    if untraced < 1.6:
        pytest.skip("the machine is too busy: untraced, the workers reached only %.2f" % untraced)
    # 1.4, well clear of the threads version's ceiling of 1.2: CI once saw
    # 1.496 while other jobs shared the machine
    best = 0.0
    for _ in range(3):
        best = max(best, _parallelism(run_ulma, tmp_path, "processes"))
        if best >= 1.4:
            break
    assert best >= 1.4, "traced %.2f, untraced %.2f" % (best, untraced)


def test_report_shows_cpu_lanes_and_process_rows(run_ulma, report_json, tmp_path):
    """`ulma report` draws one CPU lane per thread and a row per process."""
    trace = str(tmp_path / "lanes.trace")
    proc = run_ulma(["run", "--no-c-calls", "--summary", "none", "-o", trace,
                     os.path.join(EXAMPLES, "parallel_mergesort.py"), "processes"])
    assert proc.returncode == 0, proc.stderr
    data, _ = report_json(trace)
    assert data["processes"] >= 3  # the parent and two workers
    lanes = [t["lane"] for t in data["thread_list"]]
    assert all(len(lane) == 64 and set(lane) <= set("0123456789. ") for lane in lanes), lanes
    # every thread's lane spans its life (non-blank); a thread shows a CPU
    # digit only if it had CPU time (how much shows depends on machine load)
    for t in data["thread_list"]:
        assert t["lane"].strip(), t
        if any(ch.isdigit() for ch in t["lane"]):
            assert t["cpu_ns"] > 0, t
    assert any(ch.isdigit() for ch in "".join(lanes)), lanes
    text = run_ulma(["report", trace]).stdout.decode()
    assert "cpu lanes over" in text
    # under "pid threads events lost self ms cpu ms command", up to the lanes
    lines = text.splitlines()
    first = [i for i, line in enumerate(lines) if line.split()[:2] == ["pid", "threads"]][0] + 1
    rows = [line.split() for line in lines[first:first + data["processes"]]]
    assert len({r[0] for r in rows}) == data["processes"], text
    assert rows[0][0] == str(data["thread_list"][0]["pid"]) and rows[0][6:] == ["parallel_mergesort.py", "processes"], text


@pytest.fixture(scope="module")
def gil(prog, traced_json):
    data, proc = traced_json(prog("gil_wait.py"))
    assert proc.stdout == b"done\n"
    assert data["gil_split"] is True, "the monitor could not read /proc/PID/task/TID/syscall"
    return {f["name"]: f for f in data["functions"] if f["file"] == prog("gil_wait.py")}, data


def test_gil_waits_are_part_of_blocked_time(gil):
    _, data = gil
    for f in data["functions"]:
        assert 0 <= f["gil_ns"] <= f["blocked_ns"], f
        assert 0 <= f["total_gil_ns"] <= f["total_blocked_ns"], f
    assert all("gil_ns" in t for t in data["thread_list"])


def test_threads_fighting_for_the_gil_wait_for_it(gil):
    """Two CPU-bound threads, one GIL: what keeps each off a CPU is the GIL."""
    rows, _ = gil
    f = rows["spin"]
    assert f["calls"] == 2
    assert f["blocked_ns"] >= 0.2 * f["self_ns"], f
    assert f["gil_ns"] >= 0.6 * f["blocked_ns"], f


def test_a_lock_or_a_sleep_is_not_the_gil(gil):
    """Blocked as long as the spinners run, but on a lock and in a sleep.
    Waking up, each must take the GIL back from a spinner, which can take
    a while (tens of ms on 3.11): that part is GIL time, the rest is not."""
    rows, _ = gil
    f = rows["sleeper"]
    assert f["total_blocked_ns"] >= 0.8 * f["total_ns"], f
    assert f["total_blocked_ns"] - f["total_gil_ns"] >= 0.8 * 300_000_000, f
    f = rows["lock_waiter"]
    assert f["total_blocked_ns"] >= 0.8 * f["total_ns"], f
    assert f["total_gil_ns"] <= 0.3 * f["total_blocked_ns"], f


def test_the_summary_shows_the_gil_column(prog, run_ulma):
    proc = run_ulma(["run", "--no-live", "-o", os.devnull, prog("gil_wait.py")])
    text = proc.stderr.decode()
    assert "gil%" in text and "gil% of it waiting for the GIL" in text, text
