"""Trace compactness: a call-heavy program (fib(20) x 10) costs at most
3 bytes per event, and its event count is exactly two per call."""

FIB_CALLS = 10 * 21891


def test_bytes_per_event_on_call_heavy_program(prog, traced_json):
    data, proc = traced_json(prog("fib_calls.py"))
    fib = [f for f in data["functions"] if f["name"] == "fib" and f["file"] == prog("fib_calls.py")]
    assert len(fib) == 1 and fib[0]["calls"] == FIB_CALLS
    assert data["lost"] == 0
    assert data["events"] >= 2 * FIB_CALLS
    assert data["bytes_per_event"] <= 3.0, data["bytes_per_event"]
    # the same figure in the text summary ulma run printed
    assert b"bytes/event" in proc.stderr


def test_dropping_mode_never_invents_calls(prog, run_ulma, report_json, trace_path):
    """With --may-drop and the smallest ring, events are dropped; the trace
    stays readable, losses are counted per thread, and no function gets more
    calls than it made.  (Without --may-drop the program waits for room:
    nothing is lost, and a 64-record ring made this run take 15-20 s.)"""
    proc = run_ulma(["run", "--may-drop", "--ring-records", "64", "--summary", "none", "-o", trace_path,
                     prog("fib_calls.py")])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"fib 67650\n"
    data, _ = report_json(trace_path)
    assert data["complete"] is True
    # the total also holds drops no thread could report (a ring still full at its exit)
    assert sum(t["lost"] for t in data["thread_list"]) <= data["lost"]
    assert data["lost"] > 0 and data["events"] > 0
    fib = [f for f in data["functions"] if f["name"] == "fib" and f["file"] == prog("fib_calls.py")]
    assert len(fib) <= 1 and (not fib or fib[0]["calls"] <= FIB_CALLS)
