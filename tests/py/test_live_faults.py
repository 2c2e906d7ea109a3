"""The live view under job control and a full $TMPDIR (docs/live.md,
"Faults"), driven through a real terminal in tmux as tests/py/test_live.py
does, but with an interactive shell in the pane so that Ctrl-Z and `bg`
mean what they mean to a user.

Waiting is always "poll the screen until it shows X, fail after a generous
deadline": the deadline only catches hangs, nothing is timed."""
import os
import re
import shlex
import signal
import subprocess

import pytest

from conftest import TIMEOUT, base_env
from test_live import Pane, children, has_work, live_args, needs_tmux


class ShellPane(Pane):
    """An interactive bash in a tmux pane, in tmp_path: commands are typed."""

    def __init__(self, tmp_path, width=100, height=30):
        self.sock = "/tmp/ulma-live-%d-%x.sock" % (os.getpid(), id(self))
        env = base_env()
        exports = " ".join("%s=%s" % (k, shlex.quote(env[k])) for k in ("ULMA_PYTHON", "PATH") if k in env)
        shell = "cd %s && env %s PYTHONDONTWRITEBYTECODE=1 PS1='PROMPT$ ' bash --norc --noprofile -i" % (
            shlex.quote(str(tmp_path)), exports)
        self.tmux("new-session", "-d", "-x", str(width), "-y", str(height), shell)
        self.wait("the shell's prompt", lambda s: "PROMPT$" in s)

    def type(self, line):
        self.tmux("send-keys", "-l", line)
        self.tmux("send-keys", "Enter")


@needs_tmux
@pytest.mark.parametrize("stop_with", ["ctrl-z", "sigstop"])
def test_stop_then_bg_keeps_the_program_running(stop_with, ulma_bin, prog, tmp_path, report_json):
    """Ctrl-Z leaves the view and stops the job; `bg` continues it in the
    background: the view stays closed, the held output comes out, and the
    program, the relay and the monitor run on to a normal end instead of
    being stopped again by reading the terminal from the background.  The
    same after SIGSTOP to the job, which the monitor cannot see coming: it
    finds itself continued in the background."""
    trace, stop = str(tmp_path / "t.trace"), str(tmp_path / "stop")
    p = ShellPane(tmp_path)
    try:
        p.type(" ".join(shlex.quote(a) for a in live_args(ulma_bin, prog, trace, "--seconds", "60", "--stop", stop)))
        p.wait("the table", has_work)
        if stop_with == "ctrl-z":
            p.keys("C-z")
        else:
            monitor, = children(p.shell_pid())
            os.killpg(os.getpgid(monitor), signal.SIGSTOP)
        p.wait("the job stopped", lambda s: "Stopped" in s, history=True)
        p.type("bg")
        text = p.wait("the view closed and the held output",
                      lambda s: "live view closed" in s and "LIVE-WORKING" in s, history=True)
        assert "s sort:" not in p.screen(), "the view came back in the background"
        # the shell waits for the background job; the job must still be running to see the stop file
        p.type("wait %1; echo ULMA-EXIT=$?")
        open(stop, "w").close()
        text = p.wait("the program's end and ulma's exit", lambda s: re.search(r"ULMA-EXIT=\d", s), history=True)
        assert "ULMA-EXIT=0" in text, text
        assert text.find("LIVE-WORKING") < text.find("LIVE-DONE") < text.find("totals:"), text
        data, _ = report_json(trace)
        assert data["exit_status"] == 0
        assert any(f["name"] == "work" and f["calls"] > 0 for f in data["functions"])
    finally:
        p.close()


# --- a full $TMPDIR --------------------------------------------------------

LINES = 30000
LINE = re.compile(r"^LINE (\d{6}) x{58}$")


@pytest.fixture(params=["room-for-64k", "full"])
def tiny_tmpdir(request, tmp_path):
    """A tmpfs of 64 KiB as $TMPDIR, with room for some held output or none.
    Mounting needs root (CAP_SYS_ADMIN); elsewhere the test is skipped."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here: %s" % proc.stdout.decode(errors="replace").strip())
    try:
        if request.param == "full":
            fd = os.open(str(mnt / "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                while os.write(fd, b"\0" * 4096) > 0:
                    pass
            except OSError:
                pass
            os.close(fd)
        yield str(mnt)
    finally:
        subprocess.run(["umount", "-l", str(mnt)])


class TallPane(Pane):
    """A pane whose scrollback holds every line of a chatty program."""

    def __init__(self, tmp_path, args, env_extra, width=100, height=30):
        self.sock = "/tmp/ulma-live-%d-%x.sock" % (os.getpid(), id(self))
        conf = tmp_path / "tmux.conf"
        conf.write_text("set -g history-limit %d\n" % (LINES + 1000))
        env = base_env()
        exports = " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in
                           [(k, env[k]) for k in ("ULMA_PYTHON", "PATH") if k in env] + list(env_extra.items()))
        cmd = "cd %s && env %s PYTHONDONTWRITEBYTECODE=1 %s; echo ULMA-EXIT=$?; sleep %d" % (
            shlex.quote(str(tmp_path)), exports, " ".join(shlex.quote(a) for a in args), TIMEOUT)
        subprocess.run(["tmux", "-S", self.sock, "-f", str(conf), "new-session", "-d", "-x", str(width),
                        "-y", str(height), "sh -c %s" % shlex.quote(cmd)], check=True, timeout=30)

    def everything(self):
        return self.tmux("capture-pane", "-p", "-J", "-S", "-")


@needs_tmux
def test_full_tmpdir_loses_no_output(tiny_tmpdir, ulma_bin, prog, tmp_path, report_json):
    """The relay holds the program's output in $TMPDIR while the view is
    open.  When that file system is full, the output is not dropped: the
    view closes, a line says why, and every line comes out, in order."""
    trace = str(tmp_path / "t.trace")
    p = TallPane(tmp_path, [ulma_bin, "run", "--no-c-calls", "-o", trace, prog("print_lines.py"), str(LINES)],
                 {"TMPDIR": tiny_tmpdir})
    try:
        code, _ = p.wait_exit()
        text = p.everything()
        assert code == 0, text[-3000:]
        numbers = [int(m.group(1)) for m in (LINE.match(line) for line in text.splitlines()) if m]
        assert numbers == list(range(1, LINES + 1)), "lines lost, cut or out of order: %d of %d whole" % (
            len(numbers), LINES)
        assert "cannot hold the program's output in $TMPDIR (No space left on device)" in text, text[:3000]
        assert text.find("LINE %06d" % LINES) < text.find("LINES-DONE") < text.find("ULMA-EXIT=")
        data, _ = report_json(trace)
        assert data["exit_status"] == 0
    finally:
        p.close()
