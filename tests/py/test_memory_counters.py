"""Memory over time (docs/memory.md, "Memory over time"): with --memory
the trace carries two counter marks per process, the live bytes of
Python's allocators and of native code, written whenever they moved by 64
KiB or 1/64; the timeline exports draw them without knowing about memory.
Known answer: a program that keeps 2000 bytes objects of 10000 bytes
(mem_sampled.py) shows a Python heap that climbs to that much, read back
from the Chrome export (JSON, Perfetto's and chrome://tracing's format)
and from the CTF export by babeltrace2 when it is installed."""
import json
import shutil
import subprocess

import pytest

KEPT = 2000 * (10000 + 33)  # sys.getsizeof(bytes(10000))
PY, NATIVE = "memory: Python heap (bytes)", "memory: native (bytes)"


@pytest.fixture(scope="module")
def trace(prog, run_ulma, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("counters") / "c.trace")
    proc = run_ulma(["run", "--memory", "--no-live", "--summary", "none", "-o", path, prog("mem_sampled.py"),
                     "2000", "10000", "100", "10"])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return path


def test_chrome_counter_tracks(trace, run_ulma, tmp_path):
    out = tmp_path / "c.json"
    proc = run_ulma(["export", trace, "--format", "chrome", "-o", str(out)])
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    counters = [e for e in events if e.get("ph") == "C"]
    python = [e["args"][PY] for e in counters if e["name"] == PY]
    native = [e["args"][NATIVE] for e in counters if e["name"] == NATIVE]
    assert len(python) == len(native) >= 10, (len(python), len(native))
    assert KEPT <= max(python) <= KEPT * 1.1, (max(python), KEPT)
    assert all(v >= 0 for v in native)
    times = [e["ts"] for e in counters if e["name"] == PY]
    assert times == sorted(times)


def test_without_memory_no_counters(prog, run_ulma, tmp_path):
    path = str(tmp_path / "n.trace")
    proc = run_ulma(["run", "--no-live", "--summary", "none", "-o", path, prog("mem_sampled.py"), "10", "10", "1", "1"])
    assert proc.returncode == 0
    out = tmp_path / "n.json"
    assert run_ulma(["export", path, "--format", "chrome", "-o", str(out)]).returncode == 0
    data = json.loads(out.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    assert not [e for e in events if e.get("ph") == "C" and e["name"].startswith("memory:")]


@pytest.mark.skipif(shutil.which("babeltrace2") is None, reason="babeltrace2 is not installed")
def test_ctf_counters_read_by_babeltrace2(trace, run_ulma, tmp_path):
    out = tmp_path / "ctf"
    proc = run_ulma(["export", trace, "--format", "ctf", "-o", str(out)])
    assert proc.returncode == 0, proc.stderr
    text = subprocess.run(["babeltrace2", str(out)], capture_output=True, text=True, timeout=120).stdout
    assert "memory: Python heap" in text, text[:2000]
