"""Threads by the thousand: short-lived threads lose nothing (a recycled
slot is not cleared in the monitor's loop, and its pages go back), and 300
threads alive at once are all traced whole."""


def ours(data, path):
    return {f["name"]: f for f in data["functions"] if f["file"] == path}


def test_a_thousand_short_threads_lose_nothing(prog, traced_json):
    path = prog("thread_waves.py")
    data, _ = traced_json(path)
    rows = ours(data, path)
    assert data["lost"] == 0 and data["warnings"] == "", (data["lost"], data["warnings"])
    assert rows["worker"]["calls"] == 1000, rows["worker"]
    assert rows["leaf"]["calls"] == 500_000, rows["leaf"]
    assert data["threads"] == 1001


def test_three_hundred_threads_at_once(prog, traced_json):
    path = prog("many_threads.py")
    data, proc = traced_json(path)
    assert proc.stdout == b"joined 300\n"
    rows = ours(data, path)
    assert data["lost"] == 0 and data["warnings"] == "", (data["lost"], data["warnings"])
    assert rows["worker"]["calls"] == 300, rows["worker"]
    assert rows["leaf"]["calls"] == 300 * 200, rows["leaf"]
    assert data["threads"] == 301
