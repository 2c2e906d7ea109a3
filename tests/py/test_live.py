"""The live view of `ulma run` (docs/live.md), driven through a real
terminal: tmux runs `ulma run` in a detached session, send-keys types, and
capture-pane reads the screen.  Plus the two SIGKILL cases (monitor killed,
program killed), which need no terminal, and the no-terminal case.

Waiting is always "poll the screen until it shows X, fail after a generous
deadline": the deadline only catches hangs, nothing is timed."""
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import TIMEOUT, base_env

HANG = 20  # seconds before a wait is declared hung
# function, file:line, calls, total, self, self %, then the shares the header names after "self %":
# cpu% run% blk% when the split is shown, gil% when GIL waits are told apart and the terminal is
# 100 columns wide or more, nat% when it is 100 columns wide or more (group 7, read by cells())
ROW = re.compile(r"^(\S+)\s+(\S+)\s+(\d+)\s+([\d.]+)s\s+([\d.]+)s\s+([\d.]+)%((?:\s+(?:\d+|-))*)$")

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def table(screen):
    """{function: (calls, total_s, self_s, pct)} from the live table on a screen."""
    rows = {}
    for line in screen.splitlines():
        m = ROW.match(line.rstrip())
        if m:
            rows[m.group(1)] = (int(m.group(3)), float(m.group(4)), float(m.group(5)), float(m.group(6)))
    return rows


def share_columns(header):
    """The names of the columns after "self %" in a header line, without the sort mark."""
    words = header.replace("*", "").split()
    return words[words.index("%") + 1:] if "%" in words else []


def cells(screen):
    """{function: {column: int, or None for "-"}} for the columns after self % (cpu%, run%, blk%,
    gil%, nat%, as the header names them).  A row with more or fewer of them than its header (a
    frame caught half drawn) is left out."""
    lines = screen.splitlines()
    names = share_columns(lines[1]) if len(lines) > 1 else []
    rows = {}
    for line in lines[2:]:
        m = ROW.match(line.rstrip())
        values = m.group(7).split() if m else []
        if m and len(values) == len(names):
            rows[m.group(1)] = {k: None if v == "-" else int(v) for k, v in zip(names, values)}
    return rows


def shares(screen):
    """{function: (cpu%, run%, blk%)} for the rows that show numbers there."""
    return {f: (c["cpu%"], c["run%"], c["blk%"]) for f, c in cells(screen).items() if c.get("cpu%") is not None}


def right_edges(line):
    """Where each word ends, "self %" counting as one word."""
    return [m.end() for m in re.finditer(r"\S+", line.replace("self %", "self_%"))]


class Pane:
    """`ulma run ...` in a tmux pane of its own server; the shell prints
    ULMA-EXIT=<status> when ulma ends, and the pane stays for reading."""

    def __init__(self, tmp_path, args, width=100, height=30):
        # a socket of our own, removed in close() (unix socket paths are short: not in tmp_path)
        self.sock = "/tmp/ulma-live-%d-%x.sock" % (os.getpid(), id(self))
        env = base_env()
        exports = " ".join("%s=%s" % (k, shlex.quote(env[k])) for k in ("ULMA_PYTHON", "PATH") if k in env)
        cmd = "cd %s && env %s PYTHONDONTWRITEBYTECODE=1 %s; echo ULMA-EXIT=$?; sleep %d" % (
            shlex.quote(str(tmp_path)), exports, " ".join(shlex.quote(a) for a in args), TIMEOUT)
        self.tmux("new-session", "-d", "-x", str(width), "-y", str(height), "sh -c %s" % shlex.quote(cmd))

    def tmux(self, *args):
        return subprocess.run(["tmux", "-S", self.sock, "-f", "/dev/null"] + list(args), check=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30).stdout.decode()

    def screen(self):
        """What the terminal shows now (the alternate screen while the view is open)."""
        return self.tmux("capture-pane", "-p")

    def history(self):
        """The main screen and its scrollback."""
        return self.tmux("capture-pane", "-p", "-S", "-200")

    def keys(self, *keys):
        self.tmux("send-keys", *keys)

    def shell_pid(self):
        return int(self.tmux("display-message", "-p", "#{pane_pid}").strip())

    def tty(self):
        return self.tmux("display-message", "-p", "#{pane_tty}").strip()

    def wait(self, what, pred, history=False):
        """Poll the screen until pred(text) is true; return the text."""
        deadline = time.monotonic() + HANG
        while True:
            text = self.history() if history else self.screen()
            if pred(text):
                return text
            if time.monotonic() > deadline:
                pytest.fail("the terminal never showed %s; it shows:\n%s" % (what, text))
            time.sleep(0.05)

    def wait_exit(self):
        text = self.wait("ulma's exit", lambda s: "ULMA-EXIT=" in s, history=True)
        return int(re.search(r"ULMA-EXIT=(\d+)", text).group(1)), text

    def close(self):
        subprocess.run(["tmux", "-S", self.sock, "kill-server"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30)
        try:
            os.unlink(self.sock)
        except OSError:
            pass


@pytest.fixture
def pane(tmp_path):
    panes = []

    def start(args, **kw):
        p = Pane(tmp_path, args, **kw)
        panes.append(p)
        return p

    yield start
    for p in panes:
        p.close()


def live_args(ulma_bin, prog, trace, *program_args, opts=()):
    return [ulma_bin, "run", "-o", trace] + list(opts) + [prog("live_work.py")] + list(program_args)


def has_work(screen):
    return "work" in table(screen) and "leaf" in table(screen)


def terminal_restored(p):
    modes = subprocess.run(["stty", "-a", "-F", p.tty()], stdout=subprocess.PIPE, timeout=30).stdout.decode()
    flags = modes.split()
    return "icanon" in flags and "echo" in flags and "isig" in flags


def children(pid):
    """Direct children of pid, from /proc."""
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry))
    return kids


@needs_tmux
def test_table_shows_the_program_and_changes(pane, ulma_bin, prog, tmp_path, report_json):
    trace = str(tmp_path / "t.trace")
    p = pane(live_args(ulma_bin, prog, trace, "--seconds", "3"))
    first = p.wait("the table with work and leaf", has_work)
    lines = first.splitlines()
    for word in ("elapsed", "events/s", "lost", "threads", "processes", "trace"):
        assert word in lines[0], "status line lacks %r: %r" % (word, lines[0])
    for word in ("function", "file:line", "calls", "total", "self", "self %"):
        assert word in lines[1], "header lacks %r: %r" % (word, lines[1])
    assert table(first)["work"][0] > 0
    assert "live_work.py:" in first
    calls = table(first)["work"][0]
    p.wait("the call count of work changing", lambda s: has_work(s) and table(s)["work"][0] != calls)

    code, text = p.wait_exit()
    assert code == 0, text
    # the view is gone; the program's output, held meanwhile, comes before the summary
    assert "s sort:" not in text
    start, done, totals = text.find("LIVE-START"), text.find("LIVE-DONE"), text.find("totals:")
    assert 0 <= start < done < totals, text
    assert "isatty=True" in text, "the program no longer sees a terminal:\n" + text
    assert terminal_restored(p)
    data, _ = report_json(trace)
    assert any(f["name"] == "work" and f["calls"] > calls for f in data["functions"])


@needs_tmux
def test_keys_sort_pause_clear_scroll(pane, ulma_bin, prog, tmp_path, report_json):
    trace, stop = str(tmp_path / "t.trace"), str(tmp_path / "stop")
    # 12 lines: fewer than the program's functions, so there is something to scroll.  Raw
    # times: corrected, leaf's self time can be 0 (the hook's cost is most of it), which
    # sorts it below the 9 rows on show (CI once waited 20 s for it on 3.11)
    p = pane(live_args(ulma_bin, prog, trace, "--seconds", "60", "--stop", stop, opts=["--no-correction"]),
             height=12)
    p.wait("the table", has_work)

    p.keys("s")
    s = p.wait("sorting by total", lambda s: "sort: total" in s)
    assert "total*" in s.splitlines()[1]
    p.keys("s")
    p.wait("sorting by calls", lambda s: "sort: calls" in s and "calls*" in s)
    rows = [ROW.match(l.rstrip()) for l in p.screen().splitlines()]
    counts = [int(m.group(3)) for m in rows if m]
    assert counts == sorted(counts, reverse=True), counts

    p.keys("Down")
    p.wait("the table scrolled by one row", lambda s: "rows 2-" in s)
    p.keys("Up")
    p.wait("the table scrolled back", lambda s: "rows 1-" in s)

    p.keys("p")
    paused = p.wait("the view paused", lambda s: "PAUSED" in s and has_work(s))
    time.sleep(1.2)  # two refresh periods: a running view would have changed
    assert p.screen() == paused, "the paused view still changes"
    before = table(paused)["work"][0]
    assert before > 0

    p.keys("c")
    cleared = p.wait("the cleared table", lambda s: "cleared" in s)
    assert table(cleared).get("work", (0,))[0] == 0, "c did not reset the counts:\n" + cleared
    assert table(cleared).get("leaf", (0,))[0] == 0, cleared
    p.keys("p")
    p.wait("counting again after the clear", lambda s: "PAUSED" not in s and has_work(s))

    open(stop, "w").close()
    code, text = p.wait_exit()
    assert code == 0, text
    # clearing the view leaves the trace and the final summary whole
    data, _ = report_json(trace)
    work = [f for f in data["functions"] if f["name"] == "work"]
    assert work and work[0]["calls"] > before


@needs_tmux
def test_q_closes_the_view_and_the_program_runs_on(pane, ulma_bin, prog, tmp_path, report_json):
    trace, stop, pidfile = str(tmp_path / "t.trace"), str(tmp_path / "stop"), str(tmp_path / "pid")
    p = pane(live_args(ulma_bin, prog, trace, "--seconds", "60", "--stop", stop, "--pidfile", pidfile))
    p.wait("the table", has_work)
    p.keys("q")
    text = p.wait("the main screen with the held output",
                  lambda s: "live view closed" in s and "LIVE-WORKING" in s, history=True)
    assert "s sort:" not in p.screen()
    assert "LIVE-DONE" not in text and "ULMA-EXIT" not in text
    with open(pidfile) as f:
        os.kill(int(f.read()), 0)  # still running
    assert terminal_restored(p)

    open(stop, "w").close()
    code, text = p.wait_exit()
    assert code == 0, text
    assert text.find("LIVE-WORKING") < text.find("LIVE-DONE") < text.find("totals:"), text
    data, _ = report_json(trace)
    assert any(f["name"] == "work" for f in data["functions"])
    assert data["exit_status"] == 0


@needs_tmux
def test_fits_80x24_and_follows_resize(pane, ulma_bin, prog, tmp_path):
    trace, stop = str(tmp_path / "t.trace"), str(tmp_path / "stop")
    p = pane(live_args(ulma_bin, prog, trace, "--seconds", "60", "--stop", stop), width=80, height=24)
    screen = p.wait("the table", has_work)
    lines = screen.split("\n")
    assert "trace" in lines[0], "status line cut short: %r" % lines[0]
    for word in ("function", "file:line", "calls", "total", "self", "self %"):
        assert word in lines[1], "header lacks %r at 80 columns: %r" % (word, lines[1])
    assert "nat%" not in lines[1], "nat% at 80 columns: %r" % lines[1]
    assert "q close view" in lines[23], "no key line at the bottom: %r" % lines[23]
    assert all(len(l) <= 80 for l in lines)
    assert re.search(r"live_work\.py:\d+", screen), "no file:line at 80 columns"
    # a resize redraws at the new size: the key line moves to the new bottom
    p.tmux("resize-window", "-x", "100", "-y", "30")
    wide = p.wait("the view redrawn at 100x30",
                  lambda s: len(s.split("\n")) >= 30 and "q close view" in s.split("\n")[29])
    assert wide.split("\n")[1].split()[-1] == "nat%", wide  # the native share, last, once there is room
    open(stop, "w").close()
    code, text = p.wait_exit()
    assert code == 0, text


@needs_tmux
def test_cpu_run_blk_columns(pane, ulma_bin, prog, tmp_path):
    """cpu% run% blk% at 80x24, aligned with their headers: a function that
    sleeps is blocked, one that computes is on a CPU.  The table sums from
    the start, so a spell of load on the machine (which makes a computing
    function runnable rather than on a CPU) fades out: the shares are
    waited for, not read once."""
    trace, stop = str(tmp_path / "t.trace"), str(tmp_path / "stop")
    p = pane([ulma_bin, "run", "--no-c-calls", "-o", trace, prog("live_split.py"), "--stop", stop],
             width=80, height=24)

    def settled(s):
        rows, split = table(s), shares(s)
        return all(f in split and rows[f][2] >= 1.0 for f in ("sleeper", "busy"))

    screen = p.wait("a second of self time each in sleeper and busy, with cpu% run% blk%", settled)
    lines = screen.split("\n")
    assert all(len(l) <= 80 for l in lines)
    header = lines[1].rstrip()
    assert header.split()[-3:] == ["cpu%", "run%", "blk%"], header
    assert re.search(r"live_split\.py:\d+", screen), "no file:line at 80 columns"
    for line in lines[2:]:
        m = ROW.match(line.rstrip())
        if m:  # every number ends under its header's last character, and file:line starts under its own
            assert right_edges(line)[2:] == right_edges(header)[2:], "\n".join([header, line])
            assert line.index(m.group(2), len(m.group(1))) == header.index("file:line"), "\n".join([header, line])
    for name, (cpu, run, blk) in shares(screen).items():
        assert 98 <= cpu + run + blk <= 102, (name, cpu, run, blk)

    # busy never blocks: on a CPU, or waiting for one when the machine is busy
    p.wait("sleeper at least 70% blocked and busy at most 30%",
           lambda s: settled(s) and shares(s)["sleeper"][2] >= 70 and shares(s)["busy"][2] <= 30 and
           shares(s)["busy"][0] >= 30)

    p.keys("s", "s", "s")  # self -> total -> calls -> cpu
    by_cpu = p.wait("sorting by on-CPU time", lambda s: "sort: cpu" in s and settled(s))
    assert "cpu%*" in by_cpu.splitlines()[1], by_cpu
    first = ROW.match(by_cpu.splitlines()[2].rstrip())
    assert first and first.group(1) == "busy", by_cpu

    open(stop, "w").close()
    code, text = p.wait_exit()
    assert code == 0, text


@needs_tmux
def test_gil_column_when_wide_enough(pane, ulma_bin, prog, tmp_path):
    """gil%, the part of self time spent waiting for the GIL, comes after blk%
    at 100 columns or more: two threads that contend for the GIL wait for it,
    and the process row says so too.  At 80 columns there is no room for it."""
    trace, stop = str(tmp_path / "t.trace"), str(tmp_path / "stop")
    p = pane([ulma_bin, "run", "--no-c-calls", "-o", trace, prog("live_gil.py"), "--stop", stop],
             width=120, height=24)

    def gil_of(s):
        gil = cells(s).get("contend", {}).get("gil%")
        return [gil] if gil is not None else []

    # the waits fall where the GIL is asked back: in contend's loop, forced by the switch interval
    screen = p.wait("contend waiting for the GIL at least 20% of its self time",
                    lambda s: gil_of(s) and gil_of(s)[0] >= 20)
    lines = screen.split("\n")
    assert lines[1].split()[-5:] == ["cpu%", "run%", "blk%", "gil%", "nat%"], lines[1]
    for name, c in cells(screen).items():  # gil% is a part of blk%
        if c["gil%"] is not None:
            assert c["gil%"] <= c["blk%"] + 1, (name, c)
    for line in lines[2:]:  # and every number lines up under its header
        if ROW.match(line.rstrip()):
            assert right_edges(line)[2:] == right_edges(lines[1])[2:], "\n".join([lines[1], line])
    p.keys("v")
    procs = p.wait("the process row with its gil%", lambda s: any(
        r["gil"] not in (None, "-") and int(r["gil"]) >= 10 for r in processes(s).values()))
    assert procs.split("\n")[1].split()[-3:] == ["gil%", "nat%", "command"], procs
    p.keys("v")
    p.tmux("resize-window", "-x", "80", "-y", "24")
    narrow = p.wait("the table redrawn at 80 columns", lambda s: all(len(l) <= 80 for l in s.split("\n"))
                    and "contend" in table(s))
    assert narrow.split("\n")[1].split()[-3:] == ["cpu%", "run%", "blk%"], narrow
    open(stop, "w").close()
    code, text = p.wait_exit()
    assert code == 0, text


@needs_tmux
def test_native_column(pane, ulma_bin, prog, tmp_path):
    """nat%, the part of a row's total time with a C function or native code
    on top, comes last from 100 columns on: the caller of a C builtin that
    computes reads high, a loop of Python bytecode low, and the process, which
    spends half its time in each, in between.  At 80 columns the table keeps
    its own columns and leaves nat% out.  The shares do not depend on the
    machine's load (time off the CPU counts for the frame on top), so they
    are read once both functions have half a second of total time."""
    trace, stop = str(tmp_path / "t.trace"), str(tmp_path / "stop")
    p = pane([ulma_bin, "run", "-o", trace, prog("live_native.py"), "--stop", stop], width=110, height=24)

    def settled(s):
        rows, c = table(s), cells(s)
        return all(f in rows and rows[f][1] >= 0.5 and c.get(f, {}).get("nat%") is not None
                   for f in ("in_c", "in_python", "builtins.sum"))

    screen = p.wait("in_c and in_python with half a second of total time each, and nat%", settled)
    lines = screen.split("\n")
    assert all(len(l) <= 110 for l in lines)
    assert lines[1].split()[-1] == "nat%", lines[1]
    c = cells(screen)
    assert c["in_c"]["nat%"] >= 80, screen  # its time is in sum(), a C builtin below it
    assert c["builtins.sum"]["nat%"] >= 80, screen
    assert c["in_python"]["nat%"] <= 20, screen
    for line in lines[2:]:  # every number ends under its header's last character
        if ROW.match(line.rstrip()):
            assert right_edges(line)[2:] == right_edges(lines[1])[2:], "\n".join([lines[1], line])

    p.keys("v")
    procs = p.wait("the process row with its nat%", lambda s: any(r["nat"] is not None for r in processes(s).values()))
    assert procs.split("\n")[1].split()[-2:] == ["nat%", "command"], procs
    (row,) = processes(procs).values()
    assert 20 <= int(row["nat"]) <= 80, procs

    p.keys("v")
    p.tmux("resize-window", "-x", "80", "-y", "24")
    narrow = p.wait("the table redrawn at 80 columns", lambda s: all(len(l) <= 80 for l in s.split("\n"))
                    and "in_c" in table(s) and "function" in s.split("\n")[1])
    header = narrow.split("\n")[1]
    assert "nat%" not in header, header
    expected = ["cpu%", "run%", "blk%"] if "cpu%" in header else ["self", "%"]
    assert header.replace("*", "").split()[-len(expected):] == expected, header
    assert "in_c" in cells(narrow), narrow  # its row has a number under each of those headers
    open(stop, "w").close()
    code, text = p.wait_exit()
    assert code == 0, text


# pid, threads, events, lost, self, state, then what the header names before "command": cpus cpu%
# run% blk% when the split is shown, gil% and nat% as for functions; then the command
PROC_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+([\d.]+)s\s+(run|ended)"
                      r"((?:\s+(?:[\d.]+|-))*)\s+([^\s\d].*)$")
PROC_KEYS = {"cpus": "cpus", "cpu%": "cpu", "run%": "run", "blk%": "blk", "gil%": "gil", "nat%": "nat"}


def processes(screen):
    """{pid: dict of the row} from the process view on a screen; a column not shown is None."""
    lines = screen.splitlines()
    header = lines[1].replace("*", "").split() if len(lines) > 1 else []
    names = header[header.index("state") + 1:header.index("command")] if "command" in header else []
    rows = {}
    for line in lines[2:]:
        m = PROC_ROW.match(line.rstrip())
        values = m.group(7).split() if m else []
        if m and len(values) == len(names):
            row = dict(threads=int(m.group(2)), self=float(m.group(5)), state=m.group(6), command=m.group(8))
            row.update({key: None for key in PROC_KEYS.values()})
            row.update({PROC_KEYS[k]: v for k, v in zip(names, values)})
            rows[int(m.group(1))] = row
    return rows


@needs_tmux
def test_process_view(pane, ulma_bin, prog, tmp_path):
    """v shows one row per process with its totals: two workers that compute
    are mostly on a CPU, the parent that waits for them is blocked; a worker
    that ends says so and keeps its row; v again shows the functions."""
    stop, end, pids_file = (str(tmp_path / n) for n in ("stop", "end", "pids"))
    trace = str(tmp_path / "t.trace")
    p = pane([ulma_bin, "run", "--no-c-calls", "-o", trace, prog("live_procs.py"), "--stop", stop, "--end", end,
              "--pids", pids_file], width=80, height=24)
    deadline = time.monotonic() + HANG
    while not os.path.exists(pids_file):
        assert time.monotonic() < deadline, "the workers never started"
        time.sleep(0.05)
    parent, *workers = (int(x) for x in open(pids_file).read().split())
    p.wait("the function table", lambda s: "function" in s)
    p.keys("v")

    def settled(s):
        rows = processes(s)
        return (all(pid in rows and rows[pid]["self"] >= 1.0 and rows[pid]["cpu"] not in (None, "-")
                    for pid in [parent] + workers))

    screen = p.wait("three processes with a second of self time each", settled)
    lines = screen.split("\n")
    assert all(len(l) <= 80 for l in lines)
    assert lines[1].split()[:3] == ["pid", "thr", "events"] and "command" in lines[1], lines[1]
    assert "v functions" in lines[-1] or "v functions" in screen, screen
    rows = processes(screen)
    assert set(rows) == {parent, *workers}, screen
    for pid in [parent] + workers:
        assert rows[pid]["state"] == "run", screen
        assert "live_procs.py" in rows[pid]["command"], screen  # without the interpreter's name
        assert not rows[pid]["command"].startswith("python"), screen

    def shares_settled(s):
        rows = processes(s)
        # workers never block: on a CPU, or waiting for one on a busy machine
        return (settled(s) and int(rows[parent]["blk"]) >= 70 and
                all(int(rows[w]["cpu"]) + int(rows[w]["run"]) >= 80 and int(rows[w]["cpu"]) >= 20 and
                    float(rows[w]["cpus"]) >= 0.15 for w in workers))

    p.wait("workers on a CPU or runnable, the parent blocked", shares_settled)

    open(stop, "w").close()
    ended = p.wait("the workers ended, their rows kept",
                   lambda s: all(processes(s).get(w, {}).get("state") == "ended" for w in workers))
    assert processes(ended)[parent]["state"] == "run", ended

    p.keys("v")
    p.wait("the function table again", lambda s: "function" in s.split("\n")[1] and "spin" in table(s))
    open(end, "w").close()
    code, text = p.wait_exit()
    assert code == 0, text


@needs_tmux
def test_control_characters_in_names_never_reach_the_terminal(pane, ulma_bin, prog, tmp_path):
    """programs/control_names.py's functions (C1, U+2028, U+2029, bidi
    controls, an escape sequence): the view shows each as '?', and the
    bytes the terminal receives (tmux's pipe-pane) never hold them raw."""
    trace, stop, raw = str(tmp_path / "t.trace"), str(tmp_path / "stop"), tmp_path / "raw"
    p = pane([ulma_bin, "run", "-o", trace, prog("control_names.py"), stop], width=120, height=30)
    p.tmux("pipe-pane", "-o", "cat > %s" % shlex.quote(str(raw)))
    shown = ["ls?x", "ps?x", "nel?x", "csi?x", "rlo?x", "lri?x", "esc?]0;T?x"]
    p.wait("every name, controls shown as '?'", lambda s: all(name in s for name in shown))
    deadline = time.monotonic() + HANG  # a frame drawn since the pipe started
    while b"ls?x" not in (raw.read_bytes() if raw.exists() else b""):
        assert time.monotonic() < deadline, "no frame reached the pipe"
        time.sleep(0.05)
    open(stop, "w").close()
    code, text = p.wait_exit()
    assert code == 0, text
    data = raw.read_bytes()
    found = [c for c in (b"\xe2\x80\xa8", b"\xe2\x80\xa9", b"\xc2\x85", b"\xc2\x9b", b"\xe2\x80\xae",
                         b"\xe2\x81\xa6", b"\x1b]0;T") if c in data]
    assert found == [], found


@needs_tmux
def test_no_live_draws_nothing(pane, ulma_bin, prog, tmp_path):
    trace, stop = str(tmp_path / "t.trace"), str(tmp_path / "stop")
    p = pane(live_args(ulma_bin, prog, trace, "--seconds", "60", "--stop", stop, opts=["--no-live"]))
    text = p.wait("the program's own output", lambda s: "LIVE-WORKING" in s)
    assert "s sort:" not in text and "events/s" not in text
    open(stop, "w").close()
    code, text = p.wait_exit()
    assert code == 0 and "totals:" in text, text


@needs_tmux
def test_program_killed_under_the_view(pane, ulma_bin, prog, tmp_path, report_json):
    trace, pidfile = str(tmp_path / "t.trace"), str(tmp_path / "pid")
    p = pane(live_args(ulma_bin, prog, trace, "--seconds", "60", "--pidfile", pidfile))
    p.wait("the table", has_work)
    with open(pidfile) as f:
        os.kill(int(f.read()), signal.SIGKILL)
    code, text = p.wait_exit()
    assert code == 128 + signal.SIGKILL, text
    assert "killed by signal 9" in text and "LIVE-WORKING" in text, text
    assert "s sort:" not in text
    assert terminal_restored(p)
    data, _ = report_json(trace)
    assert any(f["name"] == "work" and f["calls"] > 0 for f in data["functions"])


@needs_tmux
def test_monitor_killed_under_the_view(pane, ulma_bin, prog, tmp_path):
    """The relay restores the terminal the dead monitor left raw, shows the
    held output, and the program runs on to its end."""
    trace, stop = str(tmp_path / "t.trace"), str(tmp_path / "stop")
    p = pane(live_args(ulma_bin, prog, trace, "--seconds", "60", "--stop", stop, opts=["--lossless"]))
    p.wait("the table", has_work)
    monitors = [c for c in children(p.shell_pid())]
    assert len(monitors) == 1, monitors
    os.kill(monitors[0], signal.SIGKILL)
    text = p.wait("the relay's note and the held output",
                  lambda s: "monitor ended unexpectedly" in s and "LIVE-WORKING" in s, history=True)
    assert "s sort:" not in p.screen()
    assert terminal_restored(p)
    open(stop, "w").close()
    p.wait("the program's end", lambda s: "LIVE-DONE" in s, history=True)


def test_monitor_killed_program_unharmed(prog, ulma_bin, tmp_path):
    """SIGKILL to the monitor: the program (lossless, tiny rings, so its
    writers soon find the rings full and nobody draining them) still runs
    to the end with its own output and exit code."""
    trace = str(tmp_path / "t.trace")
    proc = subprocess.run(
        [sys.executable, prog("live_orphan_driver.py"), ulma_bin, trace, prog("live_work.py"),
         "--seconds", "3", "--code", "7"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=base_env(),
        timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    res = json.loads(proc.stdout)
    assert res["monitor"] == -signal.SIGKILL, res
    assert res["status"] == 7, res
    lines = res["stdout"].splitlines()
    assert lines[0].startswith("LIVE-START pid=") and lines[1:] == ["LIVE-WORKING", "LIVE-DONE"], res


def test_program_killed_monitor_reports(prog, ulma_bin, tmp_path, report_json):
    """SIGKILL to the program: the monitor notices, writes what it has,
    says how the program ended and ends the same way."""
    trace = str(tmp_path / "t.trace")
    proc = subprocess.Popen([ulma_bin, "run", "-o", trace, prog("live_work.py"), "--seconds", "60"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=base_env())
    try:
        out = b""
        while b"LIVE-WORKING" not in out:
            line = proc.stdout.readline()
            assert line, "the program ended early"
            out += line
        os.kill(int(out.split(b"pid=")[1].split()[0]), signal.SIGKILL)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    err = err.decode(errors="replace")
    assert "killed by signal 9" in err, err
    assert "\x1b" not in err, "escape sequences without a terminal"
    data, _ = report_json(trace)
    assert data["complete"] and data["exit_status"] == 128 + signal.SIGKILL
    work = [f for f in data["functions"] if f["name"] == "work"]
    assert work and work[0]["calls"] > 0
