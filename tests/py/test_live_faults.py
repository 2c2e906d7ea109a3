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

import pytest

from conftest import base_env
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
