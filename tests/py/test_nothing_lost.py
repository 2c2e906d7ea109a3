"""Nothing lost by default (docs/design.md): the benchmark workloads,
traced whole by `ulma run` or inside `with ulma.profile():`, on a quiet
machine and with another process keeping a core busy, record every event;
`--may-drop` (or `lossless=False`) still drops and counts when a ring is
full."""
import json
import os
import subprocess
import sys

import pytest

from conftest import TIMEOUT, base_env

WORKLOADS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "workloads")
NAMES = ["mergesort", "threads", "numeric", "bootstrap"]  # fib: beside a busy core, below


@pytest.fixture
def busy_core():
    """Another process spinning on one core for the test's duration."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    yield
    spinner.kill()
    spinner.wait()


def workload(name):
    return os.path.abspath(os.path.join(WORKLOADS, name + ".py"))


def inline(prog, trace, script):
    proc = subprocess.run([sys.executable, prog("run_inline.py"), trace, script], stdin=subprocess.DEVNULL,
                          capture_output=True, env=base_env(), timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.parametrize("name", NAMES)
def test_run_loses_nothing(run_ulma, report_json, trace_path, name):
    proc = run_ulma(["run", "--summary", "json", "-o", trace_path, workload(name)])
    assert proc.returncode == 0, proc.stderr
    live = json.loads(proc.stderr)
    assert live["lost"] == 0 and live["events"] > 0 and live["warnings"] == "", (live["lost"], live["warnings"])
    report, _ = report_json(trace_path)
    assert report["lost"] == 0 and report["events"] == live["events"]


@pytest.mark.parametrize("name", ["fib", "threads"])
def test_run_loses_nothing_beside_a_busy_core(run_ulma, trace_path, busy_core, name):
    proc = run_ulma(["run", "--summary", "json", "-o", trace_path, workload(name)])
    assert proc.returncode == 0, proc.stderr
    live = json.loads(proc.stderr)
    assert live["lost"] == 0 and live["warnings"] == "", (live["lost"], live["warnings"])


@pytest.mark.parametrize("name", ["mergesort", "threads"])
def test_an_inline_block_loses_nothing(prog, report_json, trace_path, name):
    inline(prog, trace_path, workload(name))
    report, _ = report_json(trace_path)
    assert report["lost"] == 0 and report["events"] > 0 and report["warnings"] == "", (report["lost"],
                                                                                      report["warnings"])


def test_an_inline_block_loses_nothing_beside_a_busy_core(prog, report_json, trace_path, busy_core):
    inline(prog, trace_path, workload("fib"))
    report, _ = report_json(trace_path)
    assert report["lost"] == 0 and report["warnings"] == "", (report["lost"], report["warnings"])


def test_may_drop_counts_what_it_drops(prog, run_ulma, report_json, trace_path):
    """Tiny rings and --may-drop: events are lost, and the count says how
    many.  (Any call-heavy program fills a 64-record ring: fib_calls.py's
    437k events take 0.2 s, where the mergesort workload took 10 s.)"""
    proc = run_ulma(["run", "--may-drop", "--ring-records", "64", "--summary", "json", "-o", trace_path,
                     prog("fib_calls.py")])
    assert proc.returncode == 0, proc.stderr
    live = json.loads(proc.stderr)
    assert live["lost"] > 0, live["lost"]
    report, _ = report_json(trace_path)
    assert report["lost"] == live["lost"] and report["events"] == live["events"]
