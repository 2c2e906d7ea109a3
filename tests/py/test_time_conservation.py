"""Time conservation: in every busy thread of a CPU-bound threaded program,
the self times of its functions add up to the thread's wall time (1%)."""


def test_thread_self_time_adds_up_to_wall_time(prog, traced_json):
    data, _ = traced_json(prog("cpu_threads.py"))
    busy = [t for t in data["thread_list"] if t["wall_ns"] > 50_000_000]
    # main + 3 workers, each doing ~100 ms of traced fib: the check is not vacuous
    assert len(busy) >= 4, data["thread_list"]
    for t in busy:
        assert abs(t["self_ns"] - t["wall_ns"]) <= 0.01 * t["wall_ns"], t


def test_thread_totals_are_consistent(prog, traced_json):
    """Per-thread events and losses add up to the run's totals."""
    data, _ = traced_json(prog("cpu_threads.py"))
    assert sum(t["events"] for t in data["thread_list"]) == data["events"]
    assert sum(t["lost"] for t in data["thread_list"]) == data["lost"] == 0
    assert data["threads"] == len(data["thread_list"]) == 4
    assert len({(t["pid"], t["tid"]) for t in data["thread_list"]}) == 4
    assert sorted(t["serial"] for t in data["thread_list"]) == [0, 1, 2, 3]
    fib = [f for f in data["functions"] if f["name"] == "fib" and f["file"] == prog("cpu_threads.py")]
    # 4 threads x 30 reps x fib(17), which makes 2*F(18)-1 = 5167 calls
    assert len(fib) == 1 and fib[0]["calls"] == 4 * 30 * 5167
