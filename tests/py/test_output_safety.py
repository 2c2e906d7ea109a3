"""ulma writes only what it was asked to write.

The trace is created anew at its path: a symlink or hard link planted there
is replaced, and the file it pointed at keeps its bytes (src/core/safe_file.h).
A device or FIFO of one's own is written into, not replaced.  An output
that is the script being run, or the trace being read, is refused before
anything is written, however it is spelled (relative, absolute, through a
symlink or a hard link)."""
import os
import stat
import subprocess
import threading

import pytest

PRECIOUS = b"precious: not a trace\n"


def _trace_ok(report_json, path):
    data, _ = report_json(str(path))
    assert data["exit_status"] == 0
    return data


# --- the trace file ------------------------------------------------------


def test_trace_replaces_a_planted_symlink(prog, run_ulma, report_json, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_bytes(PRECIOUS)
    (tmp_path / "ulma.trace").symlink_to(victim)
    proc = run_ulma(["run", "--summary", "none", prog("make_marker.py"), str(tmp_path / "marker")],
                    cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert victim.read_bytes() == PRECIOUS, "the trace was written through the symlink"
    assert stat.S_ISREG(os.lstat(str(tmp_path / "ulma.trace")).st_mode)
    _trace_ok(report_json, tmp_path / "ulma.trace")
    assert sorted(os.listdir(str(tmp_path))) == ["marker", "ulma.trace", "victim.txt"]


def test_trace_replaces_a_dangling_symlink_without_creating_its_target(prog, run_ulma, report_json, tmp_path):
    target = tmp_path / "made-by-someone-else"
    (tmp_path / "t.trace").symlink_to(target)
    proc = run_ulma(["run", "--summary", "none", "-o", "t.trace", prog("make_marker.py"), "marker"],
                    cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert not target.exists()
    _trace_ok(report_json, tmp_path / "t.trace")


def test_trace_over_a_hard_link_leaves_the_other_name_alone(prog, run_ulma, report_json, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_bytes(PRECIOUS)
    os.link(str(victim), str(tmp_path / "t.trace"))
    proc = run_ulma(["run", "--summary", "none", "-o", "t.trace", prog("make_marker.py"), "marker"],
                    cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert victim.read_bytes() == PRECIOUS, "the trace truncated the hard link's other name"
    _trace_ok(report_json, tmp_path / "t.trace")


def test_trace_into_a_fifo_of_ones_own(prog, run_ulma, report_json, tmp_path):
    """As `-o /dev/null` does: the special file is written into, not replaced."""
    fifo, copy = tmp_path / "fifo", tmp_path / "copy.trace"
    os.mkfifo(str(fifo))
    data = []
    reader = threading.Thread(target=lambda: data.append(open(str(fifo), "rb").read()))
    reader.start()
    proc = run_ulma(["run", "--summary", "none", "-o", str(fifo), prog("make_marker.py"), str(tmp_path / "m")])
    reader.join(60)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.lstat(str(fifo)).st_mode), "the FIFO was replaced"
    copy.write_bytes(data[0])
    _trace_ok(report_json, copy)
