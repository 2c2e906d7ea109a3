"""Python thread names, recorded by ulma itself (docs/live.md, "Thread
names"): no call of ulma.thread_name in these programs, yet the JSON
report's thread_list, the text summary, the Chrome export's thread_name
metadata and the Perfetto export (decoded by perfetto_wire.py) name every
thread as threading does, with renames, odd names, the main thread and
threads already running when an inline profile starts.  Call counts are
what they are without names."""
import collections
import json

import pytest

from export_helpers import export_trace, run_export  # noqa: F401
from perfetto_wire import Trace

FIB10_CALLS = 177
NAMES = {"MainThread", "worker-1", "renamed", "late"}


def cut(name):
    """The odd name as ulma.thread_name would give it: its lone surrogate
    replaced by "?" (UTF-8 with errors="replace"), cut to 65,535 bytes."""
    return name.startswith("odd-?-yyyy") and name.endswith("...") and len(name.encode()) <= 65535


@pytest.fixture(scope="module")
def named(export_trace):
    return export_trace("thread_names.py")


def names_of(report):
    return [t.get("name") for t in report["thread_list"]]


def test_json_names_every_thread(named):
    names = names_of(named["report"])
    assert len(names) == 5
    assert NAMES <= set(names)
    assert sum(1 for n in names if n and cut(n)) == 1
    assert "before" not in names and "early" not in names  # the last name is the name


def test_call_counts_unchanged(named):
    calls = collections.Counter()
    for f in named["report"]["functions"]:
        calls[f["name"]] += f["calls"]
    assert calls["fib"] == 4 * FIB10_CALLS
    assert calls["work"] == 3 and calls["rename_self"] == 1


def test_summary_shows_the_names(named, run_ulma):
    proc = run_ulma(["report", named["trace"]])
    assert proc.returncode == 0
    lanes = proc.stdout.decode().split("cpu lanes over", 1)[1].split("\nparallelism", 1)[0]
    shown = [line.rsplit("|", 1)[1].strip() for line in lanes.splitlines()[1:]]
    assert NAMES <= set(shown)
    assert sum(1 for n in shown if n.startswith("odd-?-yyy") and n.endswith("...")) == 1


def test_chrome_thread_name_metadata(named, run_export, tmp_path):
    out = tmp_path / "t.json"
    run_export(named["trace"], "chrome", out)
    with open(str(out)) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    names = [e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"]
    assert NAMES <= set(names)
    assert any(cut(n) for n in names)


def test_perfetto_thread_names(named, run_export, tmp_path):
    out = tmp_path / "t.pftrace"
    run_export(named["trace"], "perfetto", out)
    with open(str(out), "rb") as f:
        wire = Trace(f.read())
    names = set(wire.thread_names.values())
    assert NAMES <= names
    assert any(cut(n) for n in names)


def test_threads_running_before_an_inline_profile(run_python, report_json, prog, tmp_path):
    trace = str(tmp_path / "inline.trace")
    proc = run_python([prog("thread_names_inline.py"), trace])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    report, _ = report_json(trace)
    names = names_of(report)
    assert "boss" in names and "idle-worker" in names
    calls = {f["name"]: f["calls"] for f in report["functions"]}
    assert calls["fib"] == FIB10_CALLS


def test_main_thread_named_without_threading(run_ulma, report_json, tmp_path):
    script = tmp_path / "plain.py"
    script.write_text("import sys\nassert 'threading' not in sys.modules\n"
                      "def f():\n    return 1\nf()\nassert 'threading' not in sys.modules\n")
    trace = str(tmp_path / "plain.trace")
    proc = run_ulma(["run", "--summary", "none", "-o", trace, str(script)])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    report, _ = report_json(trace)
    assert names_of(report) == ["MainThread"]
