"""`ulma report` on traces at the edges of what the format can say.  A
trace's ticks are whatever its file holds: a report of times near 2^64
must finish (text, JSON and HTML), not loop on wrapped arithmetic.  The
traces are made by hand (trace_builder.py), as `ulma run` never writes
such times; the deadline only catches a hang."""
import json

import pytest

from trace_builder import trace

TOP = 2**64 - 1
HANG = 30  # seconds: a report of four events takes milliseconds
pytestmark = pytest.mark.once("hand-made traces, ulma's C reader only")


@pytest.fixture
def far_trace(tmp_path):
    """main runs from tick 10 to near 2^64; late runs for 100 ticks near the end."""
    path = tmp_path / "far.trace"
    events = [(10, "enter", 1), (TOP - 300, "enter", 2), (TOP - 200, "exit"), (TOP - 100, "exit")]
    path.write_bytes(trace(0, 0, TOP - 1, TOP - 1, events, func_names=("main", "late")))
    return path


@pytest.mark.parametrize("form", ["text", "json", "html"])
def test_report_of_times_near_2_to_64_finishes(form, far_trace, run_ulma, tmp_path):
    if form == "html":
        args = ["report", str(far_trace), "--html", str(tmp_path / "far.html")]
    else:
        args = ["report", str(far_trace), "--format", form]
    proc = run_ulma(args, timeout=HANG)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    if form == "json":
        data = json.loads(proc.stdout)
        late = [f for f in data["functions"] if f["name"] == "late"]
        assert late and late[0]["calls"] == 1, data["functions"]
    elif form == "text":
        assert b"late" in proc.stdout and b"main" in proc.stdout
    else:
        assert (tmp_path / "far.html").read_bytes().startswith(b"<!DOCTYPE html>")
