"""A profiler the traced program runs itself does not switch ulma off, and
works as it does untraced (docs/hooks.md, "Coexisting with the program's
own profiler").

On 3.9-3.11 ulma's hook is a per-thread C profile function, the very slot
sys.setprofile, threading.setprofile and cProfile set; there what the
program sets is chained behind ulma's function (src/python/chain.h). On
3.12+ ulma is a sys.monitoring tool beside theirs. Each test runs a program
of tests/py/programs untraced and traced, with the real interpreter, and
checks that ulma counts every call exactly and that the program sees what
it sees untraced: its profilers' events and counts, getprofile(), the
exception a profile function raises.
"""
import subprocess
import sys
import time

import pytest

from conftest import TIMEOUT, base_env

PROFILE_FUNCTION_HOOK = sys.version_info < (3, 12)
REPLACED_WARNING = "replaced ulma's hook"

# Found while writing these tests, and left: on 3.12+ a profile function
# that raises on an event hides that event from ulma's tool, which CPython
# calls after the legacy profiler's.  (The other gap found then, that a
# profile function set while ulma watches calls was told of the return of
# its own sys.setprofile() call, is mended: src/python/setprofile_return.c.)
MONITORING_GAP = pytest.mark.xfail(
    not PROFILE_FUNCTION_HOOK, strict=True,
    reason="3.12+: an event the program's profile function raises on is hidden from ulma")


CALIBRATION_LINE = "cProfile saw ulma's start-up calibration: "


def _bare(name):
    """co_name from a reported name ('raising.<locals>.on' -> 'on'; 3.11+ names are qualified)."""
    return name.rsplit(".", 1)[-1]


def calls_in(data, path):
    counts = {}
    for f in data["functions"]:
        if f["file"] == path:
            counts[_bare(f["name"])] = counts.get(_bare(f["name"]), 0) + f["calls"]
    return counts


@pytest.fixture(scope="module")
def scenario(prog, run_python, run_ulma, report_json, tmp_path_factory):
    """scenario(name) -> (untraced run, traced run, report) of foreign_profiler.py NAME, run once each."""
    path = prog("foreign_profiler.py")
    done = {}

    def run(name):
        if name not in done:
            work = tmp_path_factory.mktemp(name)
            plain = run_python([path, name, str(work / "plain.pstats")])
            trace = str(work / "run.trace")
            traced = run_ulma(["run", "--no-live", "--lossless", "--summary", "none", "-o", trace, path, name,
                               str(work / "traced.pstats")])
            assert plain.returncode == 0, plain.stderr.decode(errors="replace")
            assert traced.returncode == 0, traced.stderr.decode(errors="replace")
            data, _ = report_json(trace)
            done[name] = (plain, traced, data, trace)
        return done[name]

    run.path = path
    return run


def test_setprofile_none_does_not_stop_tracing(scenario):
    """The issue's program: a() 1000 times, sys.setprofile(None), b() 1000 times."""
    plain, traced, data, _ = scenario("none")
    counts = calls_in(data, scenario.path)
    assert (counts.get("a"), counts.get("b")) == (1000, 1000), counts
    assert data["lost"] == 0 and data["warnings"] == "", (data["lost"], data["warnings"])
    assert traced.stdout == plain.stdout


def test_python_profile_function_runs_behind_ulma(scenario):
    """sys.setprofile(counter): ulma goes on counting, and the counter itself,
    which the interpreter runs with events off, is not recorded."""
    _, _, data, _ = scenario("python")
    counts = calls_in(data, scenario.path)
    assert (counts.get("a"), counts.get("b")) == (1000, 1000), counts
    assert "counter" not in counts, counts
    assert data["lost"] == 0 and data["warnings"] == ""


def test_python_profile_function_sees_what_it_sees_untraced(scenario):
    """Its events (calls, returns, C calls) and sys.getprofile() before, while
    and after it is set: on 3.12+ not the return of its own sys.setprofile()
    call, which ulma's tool watching calls made CPython report to it."""
    plain, traced, _, _ = scenario("python")
    assert b"events: [" in plain.stdout
    assert b"'c_return', 'setprofile'" not in plain.stdout, plain.stdout
    assert traced.stdout.decode() == plain.stdout.decode()


def test_profile_function_of_every_thread_sees_what_it_sees_untraced(scenario):
    """threading.setprofile_all_threads(counter) (3.12+): counter is not told
    of the return of the sys._setprofileallthreads() call that set it."""
    plain, traced, data, _ = scenario("all_threads")
    if not PROFILE_FUNCTION_HOOK:
        assert b"('c_call', '_setprofileallthreads'), 1)" in plain.stdout, plain.stdout
        assert b"'c_return', '_setprofileallthreads'" not in plain.stdout, plain.stdout
    assert traced.stdout.decode() == plain.stdout.decode()
    assert calls_in(data, scenario.path).get("a") == (None if PROFILE_FUNCTION_HOOK else 100)


def test_python_profile_function_over_cprofile_sees_what_it_sees_untraced(scenario):
    """The same, set while cProfile is enabled: on 3.12+ cProfile watches
    calls, so untraced too the profile function is told of its own
    sys.setprofile()'s return, and traced it still is."""
    plain, traced, data, _ = scenario("python_over_cprofile")
    if not PROFILE_FUNCTION_HOOK:
        assert b"('c_return', 'setprofile'), 1)" in plain.stdout, plain.stdout
    assert traced.stdout.decode() == plain.stdout.decode()
    counts = calls_in(data, scenario.path)
    assert (counts.get("a"), counts.get("b")) == (1000, 1000), counts


def test_cprofile_stats_equal_untraced_ones(scenario):
    """cProfile's runcall, with-block, enable/disable (twice into one
    profiler) and cProfile.run: pstats call counts and callers are those of
    the untraced run, and ulma counts every call, during and after."""
    plain, traced, data, _ = scenario("cprofile")
    assert b"('leaf', 200, 200, [('work', 200)])" in plain.stdout, plain.stdout
    assert traced.stdout.decode() == plain.stdout.decode()
    counts = calls_in(data, scenario.path)
    assert (counts.get("work"), counts.get("leaf"), counts.get("tail")) == (5, 200 + 50 + 10 + 5 + 30, 100), counts
    assert data["lost"] == 0 and data["warnings"] == ""


def test_pure_python_profile_module_works_as_untraced(scenario, prog, run_python, run_ulma, tmp_path):
    """profile.Profile().runcall(): the same stats; its dispatcher asserts
    that every return matches a call it saw."""
    path = prog("foreign_profiler.py")
    plain = run_python([path, "pyprofile"])
    traced = run_ulma(["run", "--no-live", "--summary", "none", "-o", str(tmp_path / "t.trace"), path, "pyprofile"])
    assert plain.returncode == 0, plain.stderr
    assert traced.returncode == 0, traced.stderr.decode(errors="replace")
    assert traced.stdout.decode() == plain.stdout.decode()


def test_tracing_goes_on_after_a_profile_function_raised(scenario):
    """CPython unsets a Python profile function that raises; ulma's stays."""
    _, _, data, _ = scenario("raising")
    counts = calls_in(data, scenario.path)
    assert (counts.get("after"), counts.get("returns")) == (300, 1), counts
    assert data["lost"] == 0 and data["warnings"] == ""


@MONITORING_GAP
def test_raising_profile_function_behaves_as_untraced(scenario, ulma_bin, tmp_path):
    """Raising on a call, a C call and a return: the exception reaches the
    program where it does untraced, getprofile() is None afterwards, the
    function saw the same events; and ulma records each of those calls once,
    closed where it ended (the calls that follow are not inside it)."""
    plain, traced, data, trace = scenario("raising")
    assert plain.stdout.decode().count("caught: ") == 3, plain.stdout
    assert traced.stdout.decode() == plain.stdout.decode()
    counts = calls_in(data, scenario.path)
    assert (counts.get("boom"), counts.get("<lambda>"), counts.get("returns")) == (1, 1, 1), counts
    out = tmp_path / "t.folded"
    proc = subprocess.run([ulma_bin, "export", trace, "--format", "folded", "-o", str(out)],
                          capture_output=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    stacks = [[frame.split(" (")[0] for frame in line.rsplit(" ", 1)[0].split(";")]
              for line in out.read_text().splitlines()]
    mine = [s for s in ([_bare(name) for name in s] for s in stacks) if "raising" in s]
    assert any(s[-1] == "boom" for s in mine) and any(s[-2:] == ["<lambda>", "len"] for s in mine), mine
    for s in mine:  # a call left open would hold the calls after it
        for name in ("boom", "<lambda>", "returns", "after"):
            assert name not in s or s[s.index(name) - 1] == "raising", s


def test_threading_setprofile_reaches_new_threads(scenario):
    """threading.setprofile(hook): the next thread runs under hook (and
    sys.getprofile() there is hook), threading.getprofile() returns what
    the program set, None included; ulma traces every thread throughout."""
    plain, traced, data, _ = scenario("threads")
    assert b"hook saw: [('hooked', 100)]" in plain.stdout, plain.stdout
    assert traced.stdout.decode() == plain.stdout.decode()
    counts = calls_in(data, scenario.path)
    assert (counts.get("run"), counts.get("work"), counts.get("leaf")) == (3, 160, 480), counts
    assert "hook" not in counts, counts
    assert data["lost"] == 0 and data["warnings"] == ""


def test_hook_replaced_behind_ulmas_back_is_warned(scenario, run_ulma):
    """A C call of PyEval_SetProfile (as yappi makes) takes ulma's hook off
    the thread on 3.9-3.11: the calls made until the program next sets a
    profile function through Python are missing, and the summary says so.
    On 3.12+ it does not touch ulma's tool."""
    _, traced, data, trace = scenario("replaced")
    assert traced.stdout == b"done\n"
    counts = calls_in(data, scenario.path)
    if PROFILE_FUNCTION_HOOK:
        assert (counts.get("a"), counts.get("b"), counts.get("c")) == (100, None, 100), counts
        assert REPLACED_WARNING in data["warnings"], data["warnings"]
        text = run_ulma(["report", trace])
        assert text.returncode == 0
        warnings = [line for line in text.stdout.decode().splitlines() if line.startswith("warnings:")]
        assert warnings and REPLACED_WARNING in warnings[0], text.stdout.decode()
    else:
        assert (counts.get("a"), counts.get("b"), counts.get("c")) == (100, 100, 100), counts
        assert data["warnings"] == "", data["warnings"]


@pytest.fixture(scope="module")
def inline(prog, run_python, report_json, tmp_path_factory):
    """profiler_around_tracing.py inline, untraced and with two ulma.profile() blocks."""
    path = prog("profiler_around_tracing.py")
    work = tmp_path_factory.mktemp("inline")
    first, second = str(work / "first.trace"), str(work / "second.trace")
    plain = run_python([path, "inline", "--untraced"])
    traced = run_python([path, "inline", first, second])
    assert plain.returncode == 0, plain.stderr
    assert traced.returncode == 0, traced.stderr.decode(errors="replace")
    return path, plain.stdout.decode().splitlines(), traced.stdout.decode().splitlines(), first, second


def test_inline_blocks_hand_the_programs_profilers_back(inline, report_json):
    """cProfile enabled around a `with ulma.profile():` block counts what it
    counts untraced, and a profile function set inside a block goes on
    counting after it."""
    path, plain, traced, first, second = inline
    assert "counted by the profile function set in the block: [('<genexpr>', 8), ('after_block', 3), " \
           "('leaf', 7), ('work', 1)]" in plain, plain
    assert traced == plain  # cProfile did not count ulma's start-up calibration either
    assert CALIBRATION_LINE + "False" in traced
    data, _ = report_json(first)
    assert {k: v for k, v in calls_in(data, path).items() if k in ("work", "leaf")} == {"work": 1, "leaf": 20}
    data, _ = report_json(second)
    counts = calls_in(data, path)
    assert (counts.get("work"), counts.get("leaf")) == (2, 12), counts
    assert "counter" not in counts and data["warnings"] == "", (counts, data["warnings"])


def watched_block(prog, run_python, tmp_path, mode):
    """watched_block.py in mode MODE: (its output lines, its trace)."""
    trace = str(tmp_path / (mode + ".trace"))
    proc = run_python([prog("watched_block.py"), mode, trace])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout.decode().splitlines(), trace


def test_the_programs_tracer_does_not_see_the_calibration(prog, run_python, report_json, tmp_path):
    """A sys.settrace function of the program's runs around a block: it sees
    the program's calls, the block's included, and none of the loops the
    block's start and stop run to measure the hook's cost (calibrate.c); the
    cost is measured."""
    out, trace = watched_block(prog, run_python, tmp_path, "settrace")
    assert out == ["saw ulma's calibration: False", "work: 3 leaf: 35"], out
    data, _ = report_json(trace)
    assert data["overhead_ns_per_event"] > 0 and data["warnings"] == "", data["warnings"]


@pytest.mark.parametrize("mode", ["profile-thread", "profile-ends"])
def test_cprofile_with_threads_does_not_see_the_calibration(prog, run_python, report_json, tmp_path, mode):
    """cProfile runs around a block while a second thread lives.  On 3.12+
    cProfile is a sys.monitoring tool that watches every thread, so the
    measure runs only when this thread is the process's only one: with the
    second thread alive all along, the hook's cost is not measured, and the
    report says so; when it ends inside the block, the stop measures it.
    cProfile never sees the loops and counts what it counts untraced."""
    out, trace = watched_block(prog, run_python, tmp_path, mode)
    assert out == ["saw ulma's calibration: False", "work: 3 leaf: 35"], out
    data, _ = report_json(trace)
    counts = calls_in(data, prog("watched_block.py"))
    assert (counts.get("work"), counts.get("leaf")) == (1, 10), counts
    if mode == "profile-thread" and not PROFILE_FUNCTION_HOOK:
        assert data["overhead_ns_per_event"] == 0, data["overhead_ns_per_event"]
        assert "the hook's cost was not measured" in data["warnings"], data["warnings"]
    else:
        assert data["overhead_ns_per_event"] > 0 and data["warnings"] == "", data["warnings"]


def test_attach_and_detach_leave_cprofile_counting(prog, ulma_bin, tmp_path, report_json):
    """`ulma record PID` attaches to, then detaches from, a program whose main
    thread runs under cProfile all along: cProfile sees every call the
    program made, before, during and after, and none of the loops that
    measure the hook's cost (on 3.12+ they are not run: the main thread
    would run unseen by cProfile meanwhile, test_cprofile_with_threads_...)."""
    path = prog("profiler_around_tracing.py")
    stop = tmp_path / "stop"
    proc = subprocess.Popen([sys.executable, path, "attach", str(stop)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=base_env())
    try:
        ready = proc.stdout.readline().decode()
        assert ready.startswith("READY pid="), (ready, proc.stderr.read())
        trace = str(tmp_path / "att.trace")
        rec = subprocess.run([ulma_bin, "record", ready.split("=")[1].strip(), "-d", "0.5", "-o", trace,
                              "--summary", "none"], stdin=subprocess.DEVNULL, capture_output=True, env=base_env(),
                             timeout=TIMEOUT)
        assert rec.returncode == 0, rec.stderr
        time.sleep(0.2)  # some calls after the detach too
    finally:
        stop.touch()
        out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err
    made, seen = [int(word) for word in out.decode().replace(",", " ").split() if word.isdigit()]
    assert seen == made > 0, out
    data, _ = report_json(trace)
    counts = calls_in(data, path)
    assert 0 < counts.get("work", 0) < made, (counts, made)
    assert data["lost"] == 0, data["lost"]
    if PROFILE_FUNCTION_HOOK:
        assert data["warnings"] == "" and data["overhead_ns_per_event"] > 0, data["warnings"]
    else:  # cProfile watches every thread, the main thread runs: the hook's cost is not measured
        assert "the hook's cost was not measured" in data["warnings"], data["warnings"]
        assert data["overhead_ns_per_event"] == 0, data["overhead_ns_per_event"]
