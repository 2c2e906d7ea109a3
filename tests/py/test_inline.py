"""Inline tracing (docs/inline.md): `with ulma.profile(TRACE):` traces the
block, in this process and in every Python process started inside it, and
nothing before or after; the program's output and exit code are its own."""
import json
import os
import subprocess
import sys

import pytest

from conftest import TIMEOUT, base_env


def _run(prog, trace, summary):
    return subprocess.run([sys.executable, prog("inline_profile.py"), str(trace), summary],
                          stdin=subprocess.DEVNULL, capture_output=True, env=base_env(), timeout=TIMEOUT)


@pytest.fixture(scope="module")
def inline(prog, tmp_path_factory, report_json):
    trace = tmp_path_factory.mktemp("inline") / "block.trace"
    proc = _run(prog, trace, "json")
    data, _ = report_json(str(trace))
    return proc, data


def test_the_program_is_unchanged(inline):
    proc, _ = inline
    assert proc.returncode == 3, proc.stderr
    out = proc.stdout.decode().splitlines()
    assert out == ["subprocess said child 45", "fork 45", "spawn 45", "forkserver 45",
                   "session path left: False"], out


def test_the_block_and_its_children_are_traced(inline, prog):
    _, data = inline
    path = prog("inline_profile.py")
    ours = {f["name"]: f for f in data["functions"] if f["file"] == path}
    rows = {name: f["calls"] for name, f in ours.items()}
    assert rows.get("inside") == 1, rows
    assert rows.get("forked") == 1, rows      # a fork that left by os._exit
    assert rows.get("child_main") == 1, rows  # a Python subprocess
    assert rows.get("pool_work") == 18, rows  # fork, spawn and forkserver pools
    assert "before" not in rows and "after" not in rows, rows
    # main was running when the block began: entered then, once (the forked children,
    # which are inside it too, do not count it again)
    assert rows.get("main") == 1, rows
    assert ours["main"]["total_ns"] >= ours["inside"]["total_ns"] > 0, (ours["main"], ours["inside"])
    assert not any(f["name"] in ("profile.stop", "profile.__exit__", "stop", "__exit__") and
                   "ulma" in f["file"] for f in data["functions"])
    # the program, the fork, the subprocess, 2 workers per pool and the forkserver
    assert data["processes"] >= 9, data["processes"]
    assert data["lost"] == 0 and data["complete"] is True


def test_the_summary_comes_at_the_end_of_the_block(inline, prog):
    proc, data = inline
    summary = json.loads(proc.stderr)
    assert summary["events"] == data["events"]
    assert {f["name"] for f in summary["functions"]} == {f["name"] for f in data["functions"]}


def test_no_monitor_no_start(prog, tmp_path):
    """An unwritable trace: the block raises before anything is traced."""
    proc = _run(prog, tmp_path / "no-such-dir" / "t.trace", "none")
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "cannot write the trace" in err and "RuntimeError: ulma: the monitor did not start" in err, err


def test_not_inside_ulma_run(run_ulma, tmp_path):
    """Under `ulma run` the process is already traced: the block refuses."""
    script = tmp_path / "nested.py"
    script.write_text("import ulma\n"
                      "try:\n"
                      "    ulma.profile(%r).start()\n"
                      "except RuntimeError as e:\n"
                      "    print('refused:', e)\n" % str(tmp_path / "inner.trace"))
    proc = run_ulma(["run", "--no-live", "--summary", "none", "-o", str(tmp_path / "outer.trace"), str(script)])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"refused: ulma: this process is already being traced\n", proc.stdout
    assert not os.path.exists(tmp_path / "inner.trace")


def test_bad_arguments_are_refused(run_python, ulma_bin):
    proc = run_python(["-c", "import ulma\n"
                             "try:\n"
                             "    ulma.profile('x.trace', summary='xml')\n"
                             "except ValueError as e:\n"
                             "    print(e)\n"])
    assert proc.stdout == b"ulma.profile: summary must be 'text', 'json' or 'none', not 'xml'\n", proc.stdout
    r = subprocess.run([ulma_bin, "__host"], stdin=subprocess.DEVNULL, capture_output=True, env=base_env(),
                       timeout=TIMEOUT)
    assert r.returncode == 2 and b"which process? give its PID" in r.stderr, r.stderr
