"""Time conservation: in every busy thread of a CPU-bound threaded program,
the self times of its functions add up to the thread's wall time (1%)."""
import pytest

REPS = 60  # programs/cpu_threads.py
FIB17_CALLS = 5167  # 2*F(18)-1


@pytest.fixture(scope="module")
def cpu_threads(prog, traced_json):
    data, _ = traced_json(prog("cpu_threads.py"))
    return data


def test_thread_self_time_adds_up_to_wall_time(cpu_threads):
    busy = [t for t in cpu_threads["thread_list"] if t["wall_ns"] > 50_000_000]
    # each thread does ~0.1-0.2 s of traced fib, the main thread spans them all:
    # at least two threads are checked whatever the machine's speed
    assert len(busy) >= 2, cpu_threads["thread_list"]
    for t in busy:
        assert abs(t["self_ns"] - t["wall_ns"]) <= 0.01 * t["wall_ns"], t


def test_thread_totals_are_consistent(prog, cpu_threads):
    data = cpu_threads
    assert sum(t["events"] for t in data["thread_list"]) == data["events"]
    assert sum(t["lost"] for t in data["thread_list"]) == data["lost"] == 0
    assert data["threads"] == len(data["thread_list"]) == 4
    assert len({(t["pid"], t["tid"]) for t in data["thread_list"]}) == 4
    assert sorted(t["serial"] for t in data["thread_list"]) == [0, 1, 2, 3]
    fib = [f for f in data["functions"] if f["name"] == "fib" and f["file"] == prog("cpu_threads.py")]
    assert len(fib) == 1 and fib[0]["calls"] == 4 * REPS * FIB17_CALLS
    work = [f for f in data["functions"] if f["name"] == "work" and f["file"] == prog("cpu_threads.py")]
    assert len(work) == 1 and work[0]["calls"] == 4


def test_self_times_add_up_to_thread_self_times(cpu_threads):
    """The function table and the thread table account for the same measured
    time (the thread table is not overhead-corrected, docs/overhead.md)."""
    funcs = sum(f["raw_self_ns"] for f in cpu_threads["functions"])
    threads = sum(t["self_ns"] for t in cpu_threads["thread_list"])
    assert abs(funcs - threads) <= 0.01 * threads
