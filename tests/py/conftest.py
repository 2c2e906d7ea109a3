"""Shared fixtures for the end-to-end suite.

Every test runs the real `ulma` program installed beside the interpreter
that runs pytest (pip puts it in the venv's bin folder) and traces
programs with that same interpreter (ULMA_PYTHON=sys.executable).  The
helpers only start processes and parse their output; they assert nothing
about ulma's behaviour themselves.
"""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
TIMEOUT = 60  # seconds for any single process; a hang fails the test, not the suite


def program_path(name):
    """Absolute path of tests/py/programs/NAME."""
    return os.path.join(PROGRAMS, name)


def base_env(extra=None):
    env = dict(os.environ)
    env["ULMA_PYTHON"] = sys.executable
    env.pop("ULMA_SESSION_FD", None)
    env.pop("PYTHONSTARTUP", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # keep tests/py/programs free of __pycache__
    if extra:
        env.update(extra)
    return env


def _run(argv, cwd=None, env=None, timeout=TIMEOUT, **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    if "input" not in kw:
        kw.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(argv, cwd=cwd, env=base_env(env), timeout=timeout, **kw)


@pytest.fixture(scope="session")
def ulma_bin():
    """The `ulma` program belonging to the running interpreter."""
    path = os.path.join(os.path.dirname(sys.executable), "ulma")
    if not os.access(path, os.X_OK):
        pytest.fail("no ulma program at %s: run `pip install .` in this environment" % path)
    return path


@pytest.fixture(scope="session")
def run_ulma(ulma_bin):
    """run_ulma(args, cwd=None, **kw) -> CompletedProcess of `ulma ARGS`
    (bytes stdout/stderr captured, stdin from /dev/null unless input= is given)."""

    def run(args, cwd=None, **kw):
        return _run([ulma_bin] + list(args), cwd=cwd, **kw)

    return run


@pytest.fixture(scope="session")
def run_python():
    """run_python(args, cwd=None, **kw): the same interpreter, untraced."""

    def run(args, cwd=None, **kw):
        return _run([sys.executable] + list(args), cwd=cwd, **kw)

    return run


@pytest.fixture
def trace_path(tmp_path):
    """Where a test's trace goes (not created in advance)."""
    return str(tmp_path / "out.trace")


@pytest.fixture(scope="session")
def report_json(run_ulma):
    """report_json(trace, raw=False) -> (dict, CompletedProcess) of `ulma report TRACE
    --format json` (with --no-correction if raw: times as measured, as the exports
    carry them); fails the test if the report does not succeed or is not JSON."""

    def report(trace, raw=False):
        proc = run_ulma(["report", trace, "--format", "json"] + (["--no-correction"] if raw else []))
        assert proc.returncode == 0, (
            "ulma report failed (%d): %s" % (proc.returncode, proc.stderr.decode(errors="replace"))
        )
        try:
            data = json.loads(proc.stdout)
        except ValueError as exc:
            pytest.fail("ulma report --format json printed invalid JSON (%s):\n%s" % (exc, proc.stdout[:2000]))
        return data, proc

    return report


@pytest.fixture(scope="session")
def traced_json(run_ulma, report_json, tmp_path_factory):
    """traced_json(program, *args, lossless=True, cwd=None) -> (report dict, run process).
    Runs `ulma run [--lossless] -o TRACE program args` then `ulma report`."""

    def traced(program, *args, lossless=True, cwd=None, **kw):
        trace = str(tmp_path_factory.mktemp("trace") / "run.trace")
        opts = ["run", "-o", trace] + (["--lossless"] if lossless else [])
        proc = run_ulma(opts + [program] + list(args), cwd=cwd, **kw)
        assert proc.returncode == 0, (
            "ulma run failed (%d): %s" % (proc.returncode, proc.stderr.decode(errors="replace"))
        )
        data, _ = report_json(trace)
        return data, proc

    return traced


@pytest.fixture(scope="session")
def prog():
    """prog(name) -> absolute path of tests/py/programs/NAME."""
    return program_path


# `make test` runs this suite once per Python (3.9-3.13).  A test of what no
# interpreter changes (the C reader and exporters on hand-made traces, an
# export file read by babeltrace2, otf2-print, Chromium or the Perfetto trace
# processor, argument errors) is marked @pytest.mark.once("why") and runs on
# one of them: the Makefile names it in ULMA_TEST_ONCE_ON ("3.13", the newest
# present) and the others skip it with the reason.  Without the variable
# (pytest run by hand) every test runs.  Whatever depends on the interpreter
# (hooks, call counts, monitoring, calibration, memory hooks, lines,
# transparency) stays unmarked and runs on every Python.
ONCE_ON = os.environ.get("ULMA_TEST_ONCE_ON", "")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "once(reason): independent of the Python version; make test runs it on one Python only")


def pytest_collection_modifyitems(config, items):
    here = "%d.%d" % sys.version_info[:2]
    if not ONCE_ON or ONCE_ON == here:
        return
    for item in items:
        marker = item.get_closest_marker("once")
        if marker is not None:
            why = marker.args[0] if marker.args else "independent of the Python version"
            item.add_marker(pytest.mark.skip(reason="once per make test, on Python %s: %s" % (ONCE_ON, why)))
