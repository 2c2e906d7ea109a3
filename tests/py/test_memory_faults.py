"""`--memory` under hostile conditions (docs/memory.md, "Limits"): the
program replaces the allocator itself while traced (tracemalloc wraps
ulma's hooks, then puts them back, or stays on until after ulma stops);
the program forks while another thread allocates; threads allocate and
exit mid-run.  No crash, each kept block counted once, in the function
and process that made it."""
import json
import sys

import pytest

K = 500
OBJECT = 16  # sys.getsizeof(object()) on 64-bit CPython


def leaks_by_innermost(data):
    """{innermost function of a leak's stack: [blocks, bytes]} of Python's
    allocators (tracemalloc's tables are native mallocs of libpython)"""
    out = {}
    for leak in data["leaks"]:
        name = leak["stack"][-1] if leak["stack"] else ""
        row = out.setdefault(name, [0, 0])
        row[0] += leak["count"] - leak["native_count"]
        row[1] += leak["bytes"] - leak["native_bytes"]
    return out


def run_json(run_ulma, program, args, trace):
    # 3.12+ warns on stderr, where the summary goes, about a fork with threads
    proc = run_ulma(["run", "--memory", "--summary", "json", "-o", trace, program] + args,
                    env={"PYTHONWARNINGS": "ignore::DeprecationWarning"})
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return json.loads(proc.stderr), proc


@pytest.mark.parametrize("leave_on", [False, True])
def test_program_replaces_the_allocator(prog, run_ulma, report_json, tmp_path, leave_on):
    trace = str(tmp_path / "r.trace")
    data, proc = run_json(run_ulma, prog("mem_replaced.py"), [str(K)] + (["--leave-on"] if leave_on else []), trace)
    assert proc.stdout.decode().strip() == "tracemalloc saw True"
    leaks = leaks_by_innermost(data)
    assert leaks["before"] == [K, K * OBJECT], leaks.get("before")
    # tracemalloc keeps its tables in memory from the RAW allocator it
    # wrapped (ulma's): a few blocks while `during` runs, and while it is
    # on, one record per block it traces, live until tracemalloc stops.
    # Those are the program's allocations too; each of the objects passes
    # through both hooks and is counted once.
    traced = ["during", "after"] if leave_on else ["during"]
    for name in traced:
        count, size = leaks[name]
        low = 2 * K if leave_on else K
        assert low <= count <= low + 16 and low * OBJECT <= size <= low * OBJECT + 4096, (name, leaks[name])
    if not leave_on:
        assert leaks["after"] == [K, K * OBJECT], leaks.get("after")
    report, _ = report_json(trace)
    assert leaks_by_innermost(report) == leaks


def test_failed_allocations_are_none(prog, run_ulma, tmp_path):
    """A NULL result is no allocation; a failed realloc frees nothing."""
    data, proc = run_json(run_ulma, prog("mem_null.py"), [], str(tmp_path / "n.trace"))
    assert proc.stdout.decode().strip() == "ok"
    fs = {f["name"]: f for f in data["functions"]}
    assert data["alloc_bytes"] < 1 << 40, data["alloc_bytes"]
    assert fs["fail"]["alloc_bytes"] < 1 << 20, fs["fail"]
    # keep's 4096 bytes are still its own after the failed realloc (and the
    # int ctypes made of their address, a 47-bit int)
    assert leaks_by_innermost(data)["keep"] == [2, 4096 + sys.getsizeof(1 << 46)]


def test_fork_and_exiting_threads(prog, run_ulma, report_json, tmp_path):
    trace = str(tmp_path / "f.trace")
    data, proc = run_json(run_ulma, prog("mem_fork_threads.py"), [str(K)], trace)
    assert proc.stdout.decode().strip() == "done"
    assert data["processes"] == 2
    leaks = leaks_by_innermost(data)
    assert leaks["worker"] == [4 * K, 4 * K * OBJECT], leaks.get("worker")
    assert leaks["parent_work"] == [K, K * OBJECT]
    assert leaks["child_work"] == [K, K * OBJECT]
    fs = {f["name"]: f for f in data["functions"]}
    assert fs["worker"]["net_bytes"] == 4 * K * OBJECT
    churn = fs["churner"]
    assert churn["alloc_count"] > 0
    report, _ = report_json(trace)
    assert leaks_by_innermost(report) == leaks
    # the peak is taken in the order records are applied; a thread's chunk
    # ends after each drain that applied memory records, so the report
    # applies them in the monitor's order and finds the same peak, at the
    # same record (docs/memory.md, "Threads drain in any order")
    for key in ("peak_bytes", "peak_time_ns", "peak_pid", "unknown_frees", "alloc_count", "free_count"):
        assert report[key] == data[key], (key, report[key], data[key])
    holders = {f["name"]: f["peak_held_bytes"] for f in data["functions"]}
    assert {f["name"]: f["peak_held_bytes"] for f in report["functions"]} == holders
