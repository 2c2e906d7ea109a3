"""ulma writes only what it was asked to write.

The trace is created anew at its path: a symlink or hard link planted there
is replaced, and the file it pointed at keeps its bytes (src/core/safe_file.h).
The default trace (no -o) replaces no earlier one: an earlier ulma.trace
becomes ulma.trace.old, and comes back when the run never starts.
A device or FIFO of one's own is written into, not replaced, nor removed
when the run gives up.  An output
that is the script being run, or the trace being read, is refused before
anything is written, however it is spelled (relative, absolute, through a
symlink or a hard link)."""
import os
import stat
import sys
import threading

import pytest

PRECIOUS = b"precious: not a trace\n"


class FifoReader:
    """Reads a FIFO to its end in a thread.  bytes() waits for that; if
    nobody ever wrote to the FIFO, it unblocks the reader and returns b""."""

    def __init__(self, path):
        self.path, self.data = str(path), [b""]
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        with open(self.path, "rb") as f:
            self.data[0] = f.read()

    def bytes(self):
        self.thread.join(10)
        if self.thread.is_alive():  # still waiting for a writer to open it: be that writer
            os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
            self.thread.join(10)
        return self.data[0]


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
    reader = FifoReader(fifo)
    proc = run_ulma(["run", "--summary", "none", "-o", str(fifo), prog("make_marker.py"), str(tmp_path / "m")])
    data = reader.bytes()
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.lstat(str(fifo)).st_mode), "the FIFO was replaced"
    copy.write_bytes(data)
    _trace_ok(report_json, copy)


# --- the default output keeps the earlier trace -------------------------


def _marker_run(prog, run_ulma, tmp_path, *extra):
    return run_ulma(["run", "--summary", "none"] + list(extra) + [prog("make_marker.py"), "m"],
                    cwd=str(tmp_path))


def test_default_trace_keeps_the_earlier_one_as_old(prog, run_ulma, report_json, tmp_path):
    """With no -o, an earlier ulma.trace becomes ulma.trace.old (as perf
    keeps perf.data.old), and only one generation is kept."""
    first = _marker_run(prog, run_ulma, tmp_path)
    assert first.returncode == 0, first.stderr
    assert b".old" not in first.stderr
    first_bytes = (tmp_path / "ulma.trace").read_bytes()
    second = _marker_run(prog, run_ulma, tmp_path)
    assert second.returncode == 0, second.stderr
    assert b"the earlier ulma.trace is now ulma.trace.old" in second.stderr, second.stderr
    assert (tmp_path / "ulma.trace.old").read_bytes() == first_bytes
    second_bytes = (tmp_path / "ulma.trace").read_bytes()
    assert second_bytes != first_bytes
    _trace_ok(report_json, tmp_path / "ulma.trace")
    third = _marker_run(prog, run_ulma, tmp_path)
    assert third.returncode == 0, third.stderr
    assert (tmp_path / "ulma.trace.old").read_bytes() == second_bytes
    assert sorted(os.listdir(str(tmp_path))) == ["m", "ulma.trace", "ulma.trace.old"]


def test_a_trace_named_with_o_is_replaced(prog, run_ulma, tmp_path):
    """-o names what to write: the file there is replaced, no .old is made,
    even when it is spelled ulma.trace."""
    for name in ("ulma.trace", "t.trace"):
        (tmp_path / name).write_bytes(PRECIOUS)
        proc = _marker_run(prog, run_ulma, tmp_path, "-o", name)
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / name).read_bytes() != PRECIOUS
    assert sorted(os.listdir(str(tmp_path))) == ["m", "t.trace", "ulma.trace"]


def test_the_earlier_trace_stays_when_it_cannot_be_kept(prog, run_ulma, tmp_path):
    """ulma.trace.old is a directory: the rename fails, the run is refused
    before the program starts, and ulma.trace is left as it was."""
    (tmp_path / "ulma.trace").write_bytes(PRECIOUS)
    (tmp_path / "ulma.trace.old").mkdir()
    proc = _marker_run(prog, run_ulma, tmp_path)
    assert proc.returncode != 0
    assert b"cannot keep the earlier ulma.trace as ulma.trace.old" in proc.stderr, proc.stderr
    assert (tmp_path / "ulma.trace").read_bytes() == PRECIOUS
    assert not (tmp_path / "m").exists(), "the program ran"


def test_the_earlier_trace_is_put_back_when_the_run_never_starts(prog, run_ulma, tmp_path):
    """The new trace is given up, and the earlier one is ulma.trace again."""
    (tmp_path / "ulma.trace").write_bytes(PRECIOUS)
    proc = _marker_run(prog, run_ulma, tmp_path, "--python", "/nonexistent/python3")
    assert proc.returncode == 1, proc.stderr
    assert b"ulma.trace.old is back as ulma.trace" in proc.stderr, proc.stderr
    assert (tmp_path / "ulma.trace").read_bytes() == PRECIOUS
    assert sorted(os.listdir(str(tmp_path))) == ["ulma.trace"]


def test_profile_default_keeps_the_earlier_trace(run_python, report_json, tmp_path):
    """ulma.profile() with no output: the same rule as `ulma run`."""
    code = ("import ulma\n"
            "def work(): return sum(range(100))\n"
            "for _ in range(2):\n"
            "    with ulma.profile(summary='none'):\n"
            "        work()\n")
    proc = run_python(["-c", code], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert b"the earlier ulma.trace is now ulma.trace.old" in proc.stderr, proc.stderr
    for name in ("ulma.trace", "ulma.trace.old"):
        data, _ = report_json(str(tmp_path / name))  # a block's trace: no exit status
        assert any(f["name"].endswith("work") and f["calls"] == 1 for f in data["functions"]), name


@pytest.mark.parametrize("python", ["missing", "without-ulma"])
def test_a_device_written_into_survives_a_run_that_never_starts(python, prog, run_ulma, tmp_path):
    """`-o /dev/null` with an interpreter that cannot run the program: the
    trace is given up, and a file ulma made would be removed, but the device
    it wrote into stays.  (A device node of the test's own: a copy of
    /dev/null's, made with mknod, where that is permitted.)"""
    null = _device(tmp_path)
    if python == "missing":
        interpreter = "/nonexistent/python3"
    else:
        interpreter = str(tmp_path / "python-without-site")
        with open(interpreter, "w") as f:
            f.write('#!/bin/sh\nexec "%s" -S "$@"\n' % sys.executable)
        os.chmod(interpreter, 0o755)
    proc = run_ulma(["run", "--python", interpreter, "-o", str(null), prog("make_marker.py"), str(tmp_path / "m")])
    assert proc.returncode == 1, proc.stderr
    assert stat.S_ISCHR(os.lstat(str(null)).st_mode), "the device was removed"


def _device(tmp_path):
    null = tmp_path / "null"
    try:
        os.mknod(str(null), stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError as exc:
        pytest.skip("cannot make a device node here: %s" % exc)
    return null


@pytest.mark.parametrize("fmt", ["pstats", "folded", "html"])
def test_export_into_a_device_writes_into_it(fmt, small_trace, run_ulma, tmp_path):
    """`ulma export ... -o /dev/null` wrote a temporary file and renamed it
    over the device (as root: /dev/null became a regular file).  A device
    or FIFO is written into, as for `-o -`."""
    null = _device(tmp_path)
    proc = run_ulma(["export", str(small_trace), "--format", fmt, "-o", str(null)])
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(os.lstat(str(null)).st_mode), "the device was replaced"
    assert sorted(os.listdir(str(tmp_path))) == ["null"]


def test_export_into_a_fifo(small_trace, run_ulma, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    reader = FifoReader(fifo)
    proc = run_ulma(["export", str(small_trace), "--format", "folded", "-o", str(fifo)])
    data = reader.bytes()
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.lstat(str(fifo)).st_mode), "the FIFO was replaced"
    assert b"fib (" in data


# --- an output that is an input ------------------------------------------


def _refused(proc, *words):
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 2, (proc.returncode, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ulma: "), err
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0], err
    return lines[0]


def _script(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("open('marker', 'w').close()\n")
    return script, script.read_bytes()


@pytest.mark.parametrize("spelling", ["same", "absolute", "dot-slash", "symlink", "hard-link"])
def test_run_refuses_a_trace_that_is_the_script(spelling, run_ulma, tmp_path):
    script, source = _script(tmp_path)
    output = {"same": "prog.py", "absolute": str(script), "dot-slash": "./sub/../prog.py",
              "symlink": "link.py", "hard-link": "hard.py"}[spelling]
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.py").symlink_to("prog.py")
    os.link(str(script), str(tmp_path / "hard.py"))
    proc = run_ulma(["run", "-o", output, "prog.py"], cwd=str(tmp_path))
    _refused(proc, "script", "-o")
    assert script.read_bytes() == source, "the script was overwritten"
    assert not (tmp_path / "marker").exists(), "the program ran"
    assert sorted(os.listdir(str(tmp_path))) == ["hard.py", "link.py", "prog.py", "sub"]


def test_run_refuses_the_script_named_through_a_symlink(run_ulma, tmp_path):
    script, source = _script(tmp_path)
    (tmp_path / "link.py").symlink_to("prog.py")
    proc = run_ulma(["run", "-o", "prog.py", "link.py"], cwd=str(tmp_path))
    _refused(proc, "script")
    assert script.read_bytes() == source


@pytest.fixture(scope="module")
def small_trace(prog, run_ulma, tmp_path_factory):
    trace = tmp_path_factory.mktemp("small") / "x.trace"
    proc = run_ulma(["run", "--summary", "none", "-o", str(trace), prog("fib_calls.py")])
    assert proc.returncode == 0, proc.stderr
    return trace


@pytest.mark.parametrize("spelling", ["same", "absolute", "symlink", "hard-link"])
@pytest.mark.parametrize("fmt", ["pstats", "html"])
def test_export_refuses_an_output_that_is_its_input(spelling, fmt, small_trace, run_ulma, tmp_path):
    trace = tmp_path / "x.trace"
    trace.write_bytes(small_trace.read_bytes())
    (tmp_path / "link.trace").symlink_to("x.trace")
    os.link(str(trace), str(tmp_path / "hard.trace"))
    output = {"same": "x.trace", "absolute": str(trace), "symlink": "link.trace", "hard-link": "hard.trace"}[spelling]
    proc = run_ulma(["export", "x.trace", "--format", fmt, "-o", output], cwd=str(tmp_path))
    _refused(proc, "trace", output)
    assert trace.read_bytes() == small_trace.read_bytes(), "the trace was replaced"
    assert sorted(os.listdir(str(tmp_path))) == ["hard.trace", "link.trace", "x.trace"]


def test_report_html_refuses_its_own_trace(small_trace, run_ulma, tmp_path):
    trace = tmp_path / "x.trace"
    trace.write_bytes(small_trace.read_bytes())
    proc = run_ulma(["report", "x.trace", "--html", "./x.trace"], cwd=str(tmp_path))
    assert proc.returncode != 0
    assert b"being read" in proc.stderr, proc.stderr
    assert trace.read_bytes() == small_trace.read_bytes()
    assert os.listdir(str(tmp_path)) == ["x.trace"]
