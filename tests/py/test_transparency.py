"""The traced program is unchanged: the same stdout bytes, exit code or
death by signal as untraced (argv, sys.path[0], __name__, __file__,
__main__, stdin, signal dispositions, sys.exit, uncaught exceptions, syntax
errors, atexit, fork, exec, os._exit, SIGINT to the group, SIGTERM to ulma,
death by its own signal, `ulma run -m`, `python -m ulma`), and the trace
stays readable however the program ended."""
import os
import select
import signal
import subprocess
import sys
import time

import pytest

from conftest import TIMEOUT, base_env


def _both(run_python, run_ulma, trace, args, cwd=None, **kw):
    plain = run_python(args, cwd=cwd, **kw)
    traced = run_ulma(["run", "--summary", "none", "-o", trace] + list(args), cwd=cwd, **kw)
    return plain, traced




@pytest.mark.parametrize(
    "how",
    [
        "relative",
        "absolute",
        "symlink",
        pytest.param("dot-slash"),
        pytest.param("from-elsewhere"),
    ],
)
def test_argv_path_name_file_are_unchanged(how, prog, run_python, run_ulma, trace_path, tmp_path):
    """argv[0] as given, sys.path[0] = the script's real directory, __name__,
    __file__, no ulma variable or fd left behind, stdin untouched."""
    cwd = os.path.dirname(prog("show_env.py"))
    script = "show_env.py"
    if how == "absolute":
        script = prog("show_env.py")
    elif how == "symlink":
        # sys.path[0] is the directory of the link's target, __file__ the link
        link = tmp_path / "linked_env.py"
        os.symlink(prog("show_env.py"), str(link))
        script, cwd = "linked_env.py", str(tmp_path)
    elif how == "dot-slash":
        script = "./show_env.py"
    elif how == "from-elsewhere":
        script = os.path.relpath(prog("show_env.py"), str(tmp_path))
        cwd = str(tmp_path)
    args = [script, "one", "two words", "--flag", "-o", "not-ulmas.trace", "-m", "x", "--", ""]
    plain, traced = _both(run_python, run_ulma, trace_path, args, cwd=cwd)
    assert plain.returncode == 0, plain.stderr
    assert traced.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout
    assert b"'two words'" in traced.stdout and b"name __main__" in traced.stdout


def test_module_mode_is_unchanged(prog, run_python, run_ulma, trace_path):
    """`ulma run -m mod` against `python -m mod`."""
    cwd = os.path.dirname(prog("show_env.py"))
    plain = run_python(["-m", "show_env", "x", "y"], cwd=cwd)
    traced = run_ulma(["run", "--summary", "none", "-o", trace_path, "-m", "show_env", "x", "y"], cwd=cwd)
    assert plain.returncode == 0, plain.stderr
    assert (traced.returncode, traced.stdout) == (0, plain.stdout), traced.stderr


@pytest.mark.parametrize("module", [False, True], ids=["script", "-m"])
def test_ps_shows_the_program_not_the_bootstrap(module, prog, run_python, run_ulma, trace_path):
    """/proc/PID/cmdline (ps, pgrep -f, top) is the untraced run's,
    `python script.py args` or `python -m mod args`, without ulma's `-c
    CODE`; the bytes that held it are NULs at the end (src/python/cmdline.c)."""
    import ast

    cwd = os.path.dirname(prog("show_cmdline.py"))
    args = (["-m", "show_cmdline"] if module else [prog("show_cmdline.py")]) + ["one", "two words", "", "-c", "x"]
    plain = run_python(args, cwd=cwd)
    traced = run_ulma(["run", "--summary", "none", "-o", trace_path] + args, cwd=cwd)
    assert plain.returncode == traced.returncode == 0, traced.stderr
    plain_cmdline, traced_cmdline = ast.literal_eval(plain.stdout.decode()), ast.literal_eval(traced.stdout.decode())
    assert traced_cmdline.startswith(plain_cmdline), traced_cmdline
    assert traced_cmdline[len(plain_cmdline):].strip(b"\0") == b"", traced_cmdline


# What tracing needs loaded before the program starts (docs/design.md, "What
# the program sees"): ulma itself, atexit to stop tracing after the
# program's own exit handlers, and on 3.9-3.11 _lsprof, whose Profiler.enable
# is intercepted so a cProfile the program runs does not take ulma's hook.
LOADED_BY_ULMA = {"ulma", "ulma._boot", "ulma._ulma", "atexit"} | ({"_lsprof"} if sys.version_info < (3, 12) else set())


@pytest.mark.parametrize("module", [False, True], ids=["script", "-m"])
def test_orig_argv_and_loaded_modules_are_an_untraced_runs(module, prog, run_python, run_ulma, trace_path):
    """sys.orig_argv is `[python, script, args...]` (or the -m form), not
    ulma's `-c` bootstrap, and the program starts with the modules an
    untraced run has, plus only what tracing needs (no threading)."""
    import json

    cwd = os.path.dirname(prog("show_start.py"))
    args = (["-m", "show_start"] if module else [prog("show_start.py")]) + ["one", "-c", "x", ""]
    plain = run_python(args, cwd=cwd)
    traced = run_ulma(["run", "--summary", "none", "-o", trace_path] + args, cwd=cwd)
    assert plain.returncode == traced.returncode == 0, traced.stderr
    untraced, seen = json.loads(plain.stdout), json.loads(traced.stdout)
    assert seen["argv"] == untraced["argv"]
    assert seen["orig_argv"] == untraced["orig_argv"]
    if sys.version_info >= (3, 10):
        assert seen["orig_argv"] == [sys.executable] + args
    missing = set(untraced["modules"]) - set(seen["modules"])
    extra = set(seen["modules"]) - set(untraced["modules"])
    assert missing == set(), missing
    assert extra <= LOADED_BY_ULMA, sorted(extra - LOADED_BY_ULMA)


def test_threads_started_with_thread_directly(prog, run_python, run_ulma, trace_path, report_json):
    """A thread started by _thread.start_new_thread, not threading, is traced
    like any other (3.9-3.11: it starts under ulma's hook, without ulma
    importing threading), and its errors read as untraced: an exception as
    unraisable "in thread started by" the program's function, SystemExit
    silently."""
    import re

    plain, traced = _both(run_python, run_ulma, trace_path, [prog("raw_threads.py")])
    assert plain.returncode == traced.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout == b"worker 5050\nthreading loaded: False\n"

    def unraisable(err):
        return re.sub(rb"0x[0-9a-f]+", b"0x?", err)

    assert re.search(rb"in thread started by:? <function boom", plain.stderr), plain.stderr
    assert unraisable(traced.stderr) == unraisable(plain.stderr)
    data, _ = report_json(trace_path)
    calls = {f["name"]: f["calls"] for f in data["functions"] if f["file"] == prog("raw_threads.py")}
    assert (calls.get("work"), calls.get("leaf"), calls.get("boom"), calls.get("leave")) == (1, 100, 1, 1), calls


def test_main_module_namespace_is_unchanged(prog, run_python, run_ulma, trace_path):
    plain, traced = _both(run_python, run_ulma, trace_path, [prog("main_globals.py")])
    assert plain.returncode == traced.returncode == 0
    assert traced.stdout == plain.stdout


def test_stdin_is_passed_through(prog, run_python, run_ulma, trace_path):
    data = "h\u00e9llo w\u00f6rld\n".encode() * 1000 + bytes(range(256))
    plain, traced = _both(run_python, run_ulma, trace_path, [prog("echo_stdin.py")], input=data)
    assert plain.returncode == traced.returncode == 0
    assert traced.stdout == plain.stdout
    assert traced.stdout.startswith(data)


def test_sys_exit_code_is_passed_through(prog, run_python, run_ulma, trace_path, report_json):
    plain, traced = _both(run_python, run_ulma, trace_path, [prog("exit3.py")])
    assert plain.returncode == 3
    assert traced.returncode == 3
    assert traced.stdout == plain.stdout == b"leaving\n"
    data, _ = report_json(trace_path)
    assert data["complete"] is True and data["exit_status"] == 3


def test_uncaught_exception_exits_1(prog, run_python, run_ulma, trace_path, report_json):
    plain, traced = _both(run_python, run_ulma, trace_path, [prog("raises.py")])
    assert plain.returncode == traced.returncode == 1
    assert traced.stdout == plain.stdout == b"computing\n"
    err = traced.stderr.decode()
    assert "ZeroDivisionError" in err and "raises.py" in err and "in divide" in err
    data, _ = report_json(trace_path)
    assert data["exit_status"] == 1
    divide = [f for f in data["functions"] if f["name"] == "divide"]
    assert len(divide) == 1 and divide[0]["calls"] == 1


@pytest.mark.parametrize("program", ["raises.py", "wait_for_sigint.py"])
def test_uncaught_exception_leaves_ulmas_frames_out_of_the_profile(program, prog, run_ulma, ulma_bin, trace_path,
                                                                   report_json):
    """The report of an uncaught exception is ulma's work, as the rest of its
    bootstrap: neither its function nor a sys.exit of its own is in the
    profile (the traceback printing itself, sys.excepthook, is the
    interpreter's, as untraced)."""
    if program == "raises.py":
        traced = run_ulma(["run", "--summary", "none", "-o", trace_path, prog(program)])
        assert traced.returncode == 1, traced.stderr
    else:  # KeyboardInterrupt: ulma reports it, then dies by SIGINT
        rc, _, err = _interrupt([ulma_bin, "run", "--summary", "none", "-o", trace_path, prog(program)])
        assert rc == -signal.SIGINT and b"KeyboardInterrupt" in err, err
    data, _ = report_json(trace_path)
    ours = [f for f in data["functions"] if "ulma" in os.path.basename(os.path.dirname(f["file"]))
            or f["name"] in ("_report", "sys.exit")]
    assert ours == [], ours


def test_uncaught_exception_traceback_is_the_programs(prog, run_python, run_ulma, trace_path):
    plain, traced = _both(run_python, run_ulma, trace_path, [prog("raises.py")])
    err = traced.stderr.decode()
    assert "_boot.py" not in err
    assert traced.stderr == plain.stderr


def test_sys_exit_with_message(prog, run_python, run_ulma, trace_path):
    plain, traced = _both(run_python, run_ulma, trace_path, [prog("exit_message.py")])
    assert plain.returncode == traced.returncode == 1
    assert traced.stdout == plain.stdout == b"out\n"
    assert traced.stderr == plain.stderr == b"fatal: something went wrong\n"


def test_syntax_error_exits_1(prog, run_python, run_ulma, trace_path):
    plain, traced = _both(run_python, run_ulma, trace_path, [prog("syntax_error.py")])
    assert plain.returncode == traced.returncode == 1
    assert traced.stdout == plain.stdout == b""
    assert b"SyntaxError" in traced.stderr and b"syntax_error.py" in traced.stderr


def test_syntax_error_message_is_pythons(prog, run_python, run_ulma, trace_path):
    plain, traced = _both(run_python, run_ulma, trace_path, [prog("syntax_error.py")])
    assert b"_boot.py" not in traced.stderr
    program_lines = [line for line in traced.stderr.splitlines(True) if not line.startswith(b"ulma: ")]
    assert b"".join(program_lines) == plain.stderr


def test_syntax_error_does_not_blame_the_installation(prog, run_ulma, trace_path):
    traced = run_ulma(["run", "--summary", "none", "-o", trace_path, prog("syntax_error.py")])
    assert traced.returncode == 1
    assert b"importable" not in traced.stderr and b"never started" not in traced.stderr


def test_fork_in_the_program(prog, run_python, run_ulma, trace_path, report_json):
    """A forked child runs, prints and exits (through the inherited atexit
    handlers) exactly as untraced; the parent's trace stays readable."""
    plain, traced = _both(run_python, run_ulma, trace_path, [prog("fork_child.py")])
    assert plain.returncode == traced.returncode == 0
    assert traced.stdout == plain.stdout
    assert plain.stdout.count(b"atexit in") == 2
    data, _ = report_json(trace_path)
    assert data["complete"] is True and data["exit_status"] == 0


def test_exec_in_the_program(prog, run_python, run_ulma, trace_path, report_json):
    """The program replaces itself with another one: its exit code is ulma's."""
    plain, traced = _both(run_python, run_ulma, trace_path, [prog("exec_shell.py")])
    assert plain.returncode == traced.returncode == 6
    assert traced.stdout == plain.stdout == b"before exec\nreplaced\n"
    data, _ = report_json(trace_path)
    assert data["complete"] is True and data["exit_status"] == 6


def test_atexit_handlers_run(prog, run_python, run_ulma, trace_path, report_json):
    plain, traced = _both(run_python, run_ulma, trace_path, [prog("atexit_prints.py")])
    assert plain.returncode == traced.returncode == 0
    assert traced.stdout == plain.stdout == b"main done\nhandler second 42\nhandler first\n"
    data, _ = report_json(trace_path)
    # handlers run before tracing stops, so they are in the trace
    names = {f["name"]: f["calls"] for f in data["functions"] if f["file"] == prog("atexit_prints.py")}
    assert names.get("first") == 1 and names.get("second") == 1, names


def test_os_exit_code_and_trace(prog, run_python, run_ulma, trace_path, report_json):
    plain, traced = _both(run_python, run_ulma, trace_path, [prog("os_exit.py")])
    assert plain.returncode == traced.returncode == 5
    assert traced.stdout == plain.stdout
    data, _ = report_json(trace_path)
    assert data["exit_status"] == 5 and data["complete"] is True
    work = [f for f in data["functions"] if f["name"] == "work" and f["file"] == prog("os_exit.py")]
    assert len(work) == 1 and work[0]["calls"] == 1


def _wait_ready(proc, deadline):
    buf = b""
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            return buf
        ready, _, _ = select.select([proc.stdout], [], [], left)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                return buf
            buf += chunk
    return buf


def _default_sigint():
    """SIGINT back to its default in the child: a suite started in the
    background (`cmd &`) ignores it, and a Python started with it ignored
    never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(argv):
    """Start argv in its own session, wait for "ready", SIGINT the group."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=base_env(),
        start_new_session=True,
        preexec_fn=_default_sigint,
    )
    try:
        first = _wait_ready(proc, time.monotonic() + TIMEOUT)
        assert first == b"ready\n", first
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, first + out, err


def test_sigint_to_process_group(prog, ulma_bin, trace_path, report_json):
    script = prog("wait_for_sigint.py")
    plain_rc, plain_out, plain_err = _interrupt([sys.executable, script])
    assert plain_rc == -signal.SIGINT, plain_err
    rc, out, err = _interrupt([ulma_bin, "run", "--lossless", "-o", trace_path, script])
    assert rc == -signal.SIGINT, err
    assert out == plain_out == b"ready\n"
    assert b"KeyboardInterrupt" in err
    data, _ = report_json(trace_path)
    assert data["complete"] is True
    assert data["exit_status"] == 128 + signal.SIGINT
    nap = [f for f in data["functions"] if f["name"] == "nap" and f["file"] == script]
    assert len(nap) == 1 and nap[0]["calls"] >= 1


def test_sigterm_to_monitor_is_forwarded(prog, ulma_bin, trace_path, report_json):
    """A process manager signals the monitor only: the program gets SIGTERM,
    dies of it, and ulma dies of it too after finishing the trace."""
    script = prog("wait_for_sigterm.py")
    proc = subprocess.Popen(
        [ulma_bin, "run", "--summary", "none", "-o", trace_path, script],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=base_env(),
        start_new_session=True,
        preexec_fn=_default_sigint,
    )
    try:
        first = _wait_ready(proc, time.monotonic() + TIMEOUT)
        assert first == b"ready\n", first
        time.sleep(0.1)  # stay clear of the start-up race test_sigterm_during_start_up covers
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == -signal.SIGTERM, err
    assert out == b""
    data, _ = report_json(trace_path)
    assert data["complete"] is True
    assert data["exit_status"] == 128 + signal.SIGTERM
    assert any(f["name"] == "nap" and f["file"] == script for f in data["functions"])


def _no_core():
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def test_sigterm_during_start_up(prog, ulma_bin, tmp_path):
    """SIGTERM sent to ulma at any moment of its start-up ends it by SIGTERM,
    whether it arrives before the program starts or after."""
    trace = str(tmp_path / "t.trace")
    for i in range(100):
        delay = i * 0.00025  # sweep the first 25 ms
        proc = subprocess.Popen(
            [ulma_bin, "run", "--summary", "none", "-o", trace, prog("sleep_briefly.py")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=base_env(),
            start_new_session=True,
            preexec_fn=_default_sigint,
        )
        try:
            time.sleep(delay)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=TIMEOUT)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        assert proc.returncode == -signal.SIGTERM, (
            "SIGTERM sent %.2f ms after start was lost: ulma exited %d, the program printed %r"
            % (delay * 1000, proc.returncode, out)
        )


@pytest.mark.parametrize("signame", ["SIGKILL", "SIGTERM", "SIGSEGV", "SIGABRT"])
def test_killed_by_own_signal(signame, prog, run_python, run_ulma, trace_path, report_json):
    """The program dies of a signal: ulma dies of the same one, and the trace
    (finished by the monitor) holds every call made before the death."""
    sig = getattr(signal, signame)
    args = [prog("sigkill_self.py"), signame]
    plain, traced = _both(run_python, run_ulma, trace_path, args, preexec_fn=_no_core)
    assert plain.returncode == -sig
    assert traced.returncode == -sig, traced.stderr
    assert traced.stdout == plain.stdout == b"fib 610\n"
    data, _ = report_json(trace_path)
    assert data["complete"] is True
    assert data["exit_status"] == 128 + sig
    fib = [f for f in data["functions"] if f["name"] == "fib" and f["file"] == prog("sigkill_self.py")]
    assert len(fib) == 1 and fib[0]["calls"] == 1973  # 2*F(16)-1: none lost to the death


def test_signal_state_is_inherited(prog, run_python, run_ulma, trace_path):
    """Ignored and blocked signals of ulma's caller reach the program as they
    would untraced (nohup, background jobs)."""

    def ignore_some():
        for s in (signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGTERM):
            signal.signal(s, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR2])

    for preexec in (None, ignore_some):
        plain, traced = _both(run_python, run_ulma, trace_path, [prog("show_signals.py")], preexec_fn=preexec)
        assert plain.returncode == traced.returncode == 0
        assert traced.stdout == plain.stdout
    assert b"SIGINT 1" in plain.stdout  # the second run really had SIGINT ignored


def test_python_dash_m_ulma(prog, run_python, trace_path, report_json):
    """`python -m ulma run` finds its program and this interpreter by itself."""
    script = prog("show_env.py")
    plain = run_python([script, "a"])
    env = base_env()
    env.pop("ULMA_PYTHON")
    traced = subprocess.run(
        [sys.executable, "-m", "ulma", "run", "-o", trace_path, script, "a"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
        timeout=TIMEOUT,
    )
    assert traced.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout
    assert b"events:" in traced.stderr
    data, _ = report_json(trace_path)
    assert any(f["file"] == script for f in data["functions"])


def test_ulma_without_ulma_python_uses_its_own_interpreter(prog, ulma_bin, trace_path, tmp_path):
    """Without ULMA_PYTHON or --python, `ulma run` runs the python3 installed beside it."""
    script = tmp_path / "prefix.py"
    script.write_text("import sys\nprint(sys.prefix)\n")
    env = base_env()
    env.pop("ULMA_PYTHON")
    env["PATH"] = "/nonexistent"  # not the PATH's python3
    traced = subprocess.run(
        [ulma_bin, "run", "-o", trace_path, str(script)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
        timeout=TIMEOUT,
    )
    assert traced.returncode == 0, traced.stderr
    assert traced.stdout.decode().strip() == sys.prefix
