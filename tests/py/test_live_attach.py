"""Attaching to a running program (docs/live.md, "Attach"): `ulma run
--attachable` and ulma.attachable() leave a program untraced but
attachable; `ulma top PID [--once]` and `ulma record PID` attach, watch
or record, and detach; refusals are clear.

The control file's words are read directly (include/ulma/attach.h) to see
whether the program is attached.  Waits poll until a condition holds and
fail only after a deadline that catches hangs."""
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time

import pytest

from conftest import TIMEOUT, base_env
from test_live import Pane, has_work, needs_tmux

HANG = 20
STATE_DETACHED, STATE_ATTACHED = 0, 1


def control_path(pid):
    uid = os.getuid()
    run = "/run/user/%d" % uid
    if os.path.isdir(run) and os.stat(run).st_uid == uid:
        return "%s/ulma/%d" % (run, pid)
    return "/tmp/ulma-%d/%d" % (uid, pid)


def control(pid):
    """(monitor_pid, want, state) from pid's control file."""
    with open(control_path(pid), "rb") as f:
        return struct.unpack_from("<III", f.read(), 40)


def wait_for(what, pred):
    deadline = time.monotonic() + HANG
    while not pred():
        if time.monotonic() > deadline:
            pytest.fail("never happened: " + what)
        time.sleep(0.02)


class Program:
    """live_work.py running attachable until its stop file appears."""

    def __init__(self, prog, ulma_bin, tmp_path, via_run):
        self.stop = str(tmp_path / "stop")
        work = [prog("live_work.py"), "--seconds", "60", "--stop", self.stop, "--code", "5"]
        if via_run:
            argv = [ulma_bin, "run", "--attachable"] + work
        else:
            argv = [sys.executable] + work + ["--attachable", "1"]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=base_env())
        self.out = b""
        while b"LIVE-WORKING\n" not in self.out:
            line = self.proc.stdout.readline()
            if not line:
                self.kill()
                pytest.fail("the program ended early: %r %r" % (self.out, self.proc.stderr.read()))
            self.out += line
        self.pid = int(self.out.split(b"pid=")[1].split()[0])

    def finish(self):
        open(self.stop, "w").close()
        out, err = self.proc.communicate(timeout=TIMEOUT)
        return self.proc.returncode, (self.out + out).decode(), err.decode(errors="replace")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def program(prog, ulma_bin, tmp_path):
    started = []

    def start(via_run=True):
        p = Program(prog, ulma_bin, tmp_path, via_run)
        started.append(p)
        return p

    yield start
    for p in started:
        p.kill()


def ulma(ulma_bin, *args, **kw):
    return subprocess.run([ulma_bin] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=base_env(),
                          timeout=TIMEOUT, **kw)


@pytest.mark.parametrize("via_run", [True, False], ids=["run-attachable", "ulma.attachable"])
def test_top_once_and_record(program, ulma_bin, tmp_path, report_json, via_run):
    p = program(via_run)
    assert control(p.pid) == (0, 0, STATE_DETACHED)

    top = ulma(ulma_bin, "top", p.pid, "--once")
    assert top.returncode == 0, top.stderr.decode()
    text = top.stdout.decode()
    assert " work " in text and " leaf " in text and "live_work.py" in text, text
    assert control(p.pid) == (0, 0, STATE_DETACHED), "top --once did not detach"

    trace = str(tmp_path / "r.trace")
    rec = ulma(ulma_bin, "record", p.pid, "-d", "1", "-o", trace)
    assert rec.returncode == 0, rec.stderr.decode()
    # the summary names the trace, its size and bytes per event, as `ulma run`'s does
    trace_line = [l for l in rec.stderr.decode().splitlines() if l.startswith("trace:")]
    assert trace_line and trace in trace_line[0] and "bytes/event" in trace_line[0], rec.stderr.decode()
    data, _ = report_json(trace)
    assert any(f["name"] == "leaf" and f["calls"] > 0 for f in data["functions"])
    assert control(p.pid) == (0, 0, STATE_DETACHED)

    # the program ends while a recorder is attached: the recorder says so and keeps the trace
    trace2 = str(tmp_path / "r2.trace")
    rec = subprocess.Popen([ulma_bin, "record", str(p.pid), "-d", "60", "-o", trace2],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=base_env())
    wait_for("the recorder attached", lambda: control(p.pid) == (rec.pid, 1, STATE_ATTACHED))
    code, out, err = p.finish()
    _, rec_err = rec.communicate(timeout=TIMEOUT)
    assert rec.returncode == 0 and "ended" in rec_err.decode(), rec_err
    data, _ = report_json(trace2)
    assert any(f["name"] == "work" and f["calls"] > 0 for f in data["functions"])

    # the program itself is untouched
    assert code == 5, err
    lines = [l for l in out.splitlines() if not l.startswith("LIVE-ATTACHABLE")]
    assert lines[0].startswith("LIVE-START") and lines[1:] == ["LIVE-WORKING", "LIVE-DONE"], out
    assert not os.path.exists(control_path(p.pid)), "control file left behind"


@pytest.mark.parametrize("through", ["interpreter", "forking shim"])
def test_run_attachable_says_the_pid_to_attach_to(through, prog, ulma_bin, tmp_path):
    """`ulma run --attachable x.py &`: `$!` is ulma's pid, the interpreter's
    only if nothing on the way forks (a pyenv shim or a wrapper script may).
    One line on stderr at start names the pid `ulma top` takes, and ps
    shows that process as `python x.py args`, not ulma's bootstrap code."""
    python = sys.executable
    if through == "forking shim":
        shim = tmp_path / "python-shim"
        shim.write_text('#!/bin/sh\n"%s" "$@"\n' % sys.executable)  # no exec: python is sh's child
        shim.chmod(0o755)
        python = str(shim)
    stop = str(tmp_path / "stop")
    work = [prog("live_work.py"), "--seconds", "60", "--stop", stop, "--code", "5", "two words", ""]
    proc = subprocess.Popen([ulma_bin, "run", "--attachable", "--python", python] + work,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=base_env())
    try:
        said = proc.stderr.readline().decode()
        m = re.fullmatch(r"ulma: attach with `ulma top (\d+)`\n", said)
        assert m, said
        pid = int(m.group(1))
        out = b""
        while b"LIVE-WORKING\n" not in out:
            line = proc.stdout.readline()
            assert line, (out, proc.stderr.read())
            out += line
        assert int(out.split(b"pid=")[1].split()[0]) == pid, "not the program's pid"
        assert (pid == proc.pid) == (through == "interpreter")
        top = ulma(ulma_bin, "top", pid, "--once")
        assert top.returncode == 0 and " work " in top.stdout.decode(), top.stderr.decode()
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmdline = f.read()
        # freed bytes at the end are NULs (cmdline.c): the arguments are those of `python x.py ...`
        args = cmdline.rstrip(b"\0").split(b"\0")
        assert args == [os.fsencode(a) for a in [sys.executable] + work[:-1]], args
        if shutil.which("ps"):
            ps = subprocess.run(["ps", "-ww", "-o", "args=", "-p", str(pid)], stdout=subprocess.PIPE, timeout=TIMEOUT)
            assert ps.stdout.decode().rstrip() == " ".join([sys.executable] + work).rstrip(), ps.stdout
    finally:
        open(stop, "w").close()
        out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 5, err


@pytest.mark.parametrize("round", range(3))
def test_a_program_that_ends_as_it_is_attached(prog, ulma_bin, tmp_path, report_json, round):
    """The program ends a moment after it attached, maybe before the recorder
    has looked: the attach still counts, the recorder keeps what was traced,
    says the process ended and exits 0 (it once failed with 'process N ended'
    and no trace)."""
    proc = subprocess.Popen([sys.executable, prog("exit_when_attached.py")], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=base_env())
    try:
        line = proc.stdout.readline()
        assert line.startswith(b"ATTACHABLE pid="), (line, proc.stderr.read())
        trace = str(tmp_path / "r.trace")
        rec = ulma(ulma_bin, "record", proc.pid, "-d", "30", "-o", trace)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 7, (out, err)
    assert rec.returncode == 0, rec.stderr.decode()
    assert ("process %d ended" % proc.pid).encode() in rec.stderr, rec.stderr
    data, _ = report_json(trace)
    assert any(f["name"] == "work" and f["calls"] >= 5 for f in data["functions"]), data["functions"]


def test_refusals(program, prog, ulma_bin, tmp_path, report_json):
    plain = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=base_env())
    try:
        r = ulma(ulma_bin, "top", plain.pid, "--once")
        assert r.returncode == 1 and b"is not attachable" in r.stderr, r.stderr
    finally:
        plain.kill()
        plain.wait()

    gone = max(int(e) for e in os.listdir("/proc") if e.isdigit()) + 100000
    r = ulma(ulma_bin, "top", gone, "--once")
    assert r.returncode == 1 and b"no process" in r.stderr, r.stderr

    p = program()
    r = ulma(ulma_bin, "top", p.pid)  # no terminal here
    assert r.returncode == 1 and b"needs a terminal" in r.stderr, r.stderr
    assert control(p.pid) == (0, 0, STATE_DETACHED)

    # one monitor at a time; Ctrl-C (SIGINT) ends the first one cleanly
    trace = str(tmp_path / "r.trace")
    rec = subprocess.Popen([ulma_bin, "record", str(p.pid), "-d", "60", "-o", trace], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=base_env())
    try:
        wait_for("the recorder attached", lambda: control(p.pid) == (rec.pid, 1, STATE_ATTACHED))
        r = ulma(ulma_bin, "top", p.pid, "--once")
        assert r.returncode == 1, r.stderr
        assert ("already traced by another ulma (pid %d)" % rec.pid).encode() in r.stderr, r.stderr
        rec.send_signal(signal.SIGINT)
        rec.communicate(timeout=TIMEOUT)
    finally:
        if rec.poll() is None:
            rec.kill()
    assert rec.returncode == 0
    assert control(p.pid) == (0, 0, STATE_DETACHED)
    data, _ = report_json(trace)
    assert any(f["name"] == "work" for f in data["functions"])
    code, _, err = p.finish()
    assert code == 5, err


def test_another_users_process(ulma_bin):
    if os.geteuid() == 0:
        other = subprocess.Popen(["sleep", "60"], preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
        pid = other.pid
    else:
        other, pid = None, 1
    try:
        r = ulma(ulma_bin, "top", pid, "--once")
        assert r.returncode == 1 and b"belongs to another user" in r.stderr, r.stderr
    finally:
        if other:
            other.kill()
            other.wait()


def test_monitor_killed_while_attached(program, ulma_bin, tmp_path):
    """The program notices the silent heartbeat, detaches by itself, gives
    the claim back, and runs on to its normal end."""
    p = program()
    rec = subprocess.Popen([ulma_bin, "record", str(p.pid), "-d", "60", "-o", str(tmp_path / "r.trace"),
                            "--lossless"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, env=base_env())
    wait_for("the recorder attached", lambda: control(p.pid) == (rec.pid, 1, STATE_ATTACHED))
    rec.kill()
    rec.wait()
    wait_for("the program detached by itself", lambda: control(p.pid) == (0, 0, STATE_DETACHED))
    top = ulma(ulma_bin, "top", p.pid, "--once")  # and it can be attached again
    assert top.returncode == 0 and b" work " in top.stdout, top.stderr
    code, out, err = p.finish()
    assert code == 5 and out.rstrip().endswith("LIVE-DONE"), (out, err)


@needs_tmux
def test_top_q_detaches(program, ulma_bin, tmp_path):
    p = program()
    pane = Pane(tmp_path, [ulma_bin, "top", str(p.pid)], width=100, height=24)
    try:
        pane.wait("the table", has_work)
        assert control(p.pid)[2] == STATE_ATTACHED
        pane.keys("q")
        code, text = pane.wait_exit()
        assert code == 0 and "detached from process %d" % p.pid in text, text
    finally:
        pane.close()
    assert control(p.pid) == (0, 0, STATE_DETACHED)
    code, out, err = p.finish()
    assert code == 5, err


# the control directory's bad states, each made by a shell in a private mount namespace
UNUSABLE_DIRS = {
    "another user's": "mkdir -m 0700 {dir} && chown 65534 {dir}",
    "a symlink": "mkdir -m 0700 /tmp/elsewhere && ln -s /tmp/elsewhere {dir}",
    "open to others": "mkdir -m 0755 {dir}",
}


@pytest.mark.parametrize("state", sorted(UNUSABLE_DIRS))
def test_run_attachable_with_an_unusable_control_dir_runs_untraced(state, ulma_bin, prog):
    """The control directory is refused, so the program is not attachable
    (no other local user may stop it this way), but it still runs, untraced,
    with its own output and exit code, after a one-line warning; no
    traceback.  In a mount namespace of the test's own, /run is a fresh
    tmpfs (so there is no runtime directory) and /tmp an overlay of itself
    whose changes stay in that tmpfs: the machine's real control directory
    is untouched, and whatever else lives in /tmp (this checkout, say) is
    still there."""
    if os.geteuid() != 0 or subprocess.run(["unshare", "-m", "true"], stderr=subprocess.DEVNULL).returncode:
        pytest.skip("needs root and unshare for a private /tmp")
    control_dir = "/tmp/ulma-%d" % os.getuid()
    setup = " && ".join([
        "mount -t tmpfs tmpfs /run",
        "mkdir /run/upper /run/work",
        "mount -t overlay overlay -o lowerdir=/tmp,upperdir=/run/upper,workdir=/run/work /tmp",
        "rm -rf %s" % control_dir,
        UNUSABLE_DIRS[state].format(dir=control_dir),
    ])
    script = '{ %s; } || exit 99; exec "$0" run --attachable "$1"' % setup
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, ulma_bin,
                           prog("exit3.py")], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=base_env(), timeout=TIMEOUT)
    err = proc.stderr.decode(errors="replace")
    if proc.returncode == 99:
        pytest.skip("cannot make a private /tmp here: " + err.strip())
    assert proc.returncode == 3, err
    assert proc.stdout == b"leaving\n"
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("ulma: cannot use %s for the control file" % control_dir), err
    assert lines[0].endswith("the program runs untraced and cannot be attached"), err
