"""Frames already running when tracing starts (src/python/open_frames.c).

Attaching to a process (`ulma record PID`) or opening an inline block finds
each thread inside frames whose entry was never seen.  They are recorded as
entered at the start, once, and closed when tracing stops: a thread that
sits in one all along (here a waiter blocked on an event) shows for the
whole span, the calls made from them hang from them, and ulma's own frames
(`ulma run`'s bootstrap, the inline block's machinery) never appear."""
import os
import subprocess
import sys

import pytest

from conftest import TIMEOUT, base_env

RECORD_S = 1.0


def folded(ulma_bin, trace, tmp_path):
    out = tmp_path / "t.folded"
    proc = subprocess.run([ulma_bin, "export", trace, "--format", "folded", "-o", str(out)],
                          capture_output=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    return [line.rsplit(" ", 1)[0].split(";") for line in out.read_text().splitlines()]


def ours(data, path):
    return {f["name"]: f for f in data["functions"] if f["file"] == path}


@pytest.mark.parametrize("via_run", [True, False], ids=["run-attachable", "ulma.attachable"])
def test_attach_records_the_frames_already_running(prog, ulma_bin, tmp_path, report_json, via_run):
    path = prog("open_frames.py")
    stop = tmp_path / "stop"
    args = [path, "--stop", str(stop)]
    argv = [ulma_bin, "run", "--attachable"] + args if via_run else [sys.executable] + args + ["--attachable", "1"]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=base_env())
    try:
        ready = proc.stdout.readline().decode()
        assert ready.startswith("READY pid="), (ready, proc.stderr.read())
        pid = ready.split("=")[1].strip()
        trace = str(tmp_path / "att.trace")
        rec = subprocess.run([ulma_bin, "record", pid, "-d", str(RECORD_S), "-o", trace, "--summary", "none"],
                             stdin=subprocess.DEVNULL, capture_output=True, env=base_env(), timeout=TIMEOUT)
        assert rec.returncode == 0, rec.stderr
    finally:
        stop.touch()
        out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0 and out.decode().splitlines() == ["DONE"], (out, err)

    data, _ = report_json(trace, raw=True)
    rows = ours(data, path)
    span = data["duration_ns"]
    for name in ("<module>", "main", "serve", "waiter"):
        assert name in rows and rows[name]["calls"] == 1, (name, sorted(rows))
        # open from the attach to the detach
        assert rows[name]["total_ns"] >= 0.8 * span, (name, rows[name], span)
    assert rows["handle"]["calls"] > 10 and rows["leaf"]["calls"] > 10 * 50 - 1, rows
    # the waiter never ran: its thread's time is blocked time
    waiting = [f for f in data["functions"] if f["total_ns"] >= 0.8 * span and f["calls"] == 1
               and f["file"] != path and f["self_ns"] >= 0.5 * span]
    assert waiting and all(f["blocked_ns"] >= 0.9 * f["self_ns"] for f in waiting), waiting
    assert not any(f["file"].endswith("_boot.py") or f["file"] == "<string>" for f in data["functions"]), \
        [f["name"] + " " + f["file"] for f in data["functions"]]

    stacks = [[frame.split(" (")[0] for frame in s] for s in folded(ulma_bin, trace, tmp_path)]
    leaf_stacks = [s for s in stacks if s[-1] == "leaf"]
    assert leaf_stacks, stacks
    for s in leaf_stacks:  # every call hangs from the frames that were running
        assert s[:4] == ["<module>", "main", "serve", "handle"], s


def test_idle_threads_leave_rings_for_busy_ones(prog, ulma_bin, tmp_path, report_json):
    """With 100 idle threads (and the waiter) the frames of each are recorded
    at the attach (at most half of the session's 1024 rings go to threads
    already running); the busy main thread still gets a ring at its first
    event and loses nothing."""
    path = prog("open_frames.py")
    stop = tmp_path / "stop"
    proc = subprocess.Popen([sys.executable, path, "--stop", str(stop), "--attachable", "1", "--idle", "100"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=base_env())
    try:
        pid = proc.stdout.readline().decode().split("=")[1].strip()
        trace = str(tmp_path / "idle.trace")
        rec = subprocess.run([ulma_bin, "record", pid, "-d", "1", "-o", trace, "--summary", "none"],
                             stdin=subprocess.DEVNULL, capture_output=True, env=base_env(), timeout=TIMEOUT)
        assert rec.returncode == 0, rec.stderr
    finally:
        stop.touch()
        proc.communicate(timeout=TIMEOUT)
    data, _ = report_json(trace)
    rows = ours(data, path)
    assert rows["waiter"]["calls"] == 101, rows["waiter"]
    assert rows["handle"]["calls"] > 10, rows
    assert data["lost"] == 0 and data["warnings"] == "", (data["lost"], data["warnings"])


def test_top_shows_a_blocked_thread_at_once(prog, ulma_bin, tmp_path):
    """The live table of `ulma top` has the waiter, which makes no call while attached."""
    path = prog("open_frames.py")
    stop = tmp_path / "stop"
    proc = subprocess.Popen([sys.executable, path, "--stop", str(stop), "--attachable", "1"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=base_env())
    try:
        pid = proc.stdout.readline().decode().split("=")[1].strip()
        top = subprocess.run([ulma_bin, "top", pid, "--once"], stdin=subprocess.DEVNULL, capture_output=True,
                             env=base_env(), timeout=TIMEOUT)
        assert top.returncode == 0, top.stderr
    finally:
        stop.touch()
        proc.communicate(timeout=TIMEOUT)
    lines = top.stdout.decode().splitlines()
    header = next(line for line in lines if line.split()[:1] == ["calls"]).split()
    k = header.index("function") - 2  # "total ms" and "self ms" are two words each in the header
    rows = {line.split()[k]: line.split() for line in lines
            if len(line.split()) > k + 1 and line.split()[0].isdigit()}
    assert rows["waiter"][0] == "1" and float(rows["waiter"][1]) > 500, rows.get("waiter")  # calls, total ms
    assert rows["main"][0] == "1" and rows["serve"][0] == "1", top.stdout.decode()


def test_inline_block_records_its_callers(prog, tmp_path, report_json):
    path = prog("open_frames.py")
    trace = str(tmp_path / "inline.trace")
    proc = subprocess.run([sys.executable, path, "--inline", trace], stdin=subprocess.DEVNULL, capture_output=True,
                          env=base_env(), timeout=TIMEOUT)
    lines = proc.stdout.decode().splitlines()
    assert proc.returncode == 0 and lines[0].startswith("READY pid=") and lines[1:] == ["DONE"], proc
    data, _ = report_json(trace, raw=True)
    rows = ours(data, path)
    span = data["duration_ns"]
    for name in ("<module>", "main", "serve", "waiter"):
        assert name in rows and rows[name]["calls"] == 1, (name, sorted(rows))
    # the block's caller (serve) is open for the whole block, sleep included
    assert rows["serve"]["total_ns"] >= 0.8 * span, (rows["serve"], span)
    assert rows["waiter"]["total_ns"] >= 0.8 * span, (rows["waiter"], span)
    assert rows["handle"]["calls"] == 200, rows["handle"]
    # the block's own machinery is not recorded
    assert not any(os.path.basename(os.path.dirname(f["file"])) == "ulma" for f in data["functions"]), \
        [f["name"] + " " + f["file"] for f in data["functions"]]
