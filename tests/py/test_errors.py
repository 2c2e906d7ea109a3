"""Errors: bad scripts, unwritable outputs, unreadable or damaged traces and
bad options end with a documented exit code and a one-line "ulma: ..."
message, never a crash or a Python traceback; a truncated trace still
reports what it holds."""
import os
import random
import shutil

import pytest


def _one_line_error(proc, code):
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == code, (proc.returncode, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("ulma: "), err
    assert "Traceback" not in err
    assert proc.stdout == b""
    return lines[0]


# --- ulma run ------------------------------------------------------------


@pytest.mark.parametrize("with_output", [False, True])
def test_run_missing_script(with_output, run_ulma, tmp_path):
    args = ["run"] + (["-o", "named.trace"] if with_output else []) + ["no_such_script.py", "x"]
    proc = run_ulma(args, cwd=str(tmp_path))
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert "no_such_script.py" in err and err.startswith("ulma: ")
    assert "Traceback" not in err
    assert os.listdir(str(tmp_path)) == [], "a trace was created for a program that never ran"


def test_run_directory_as_script(run_ulma, tmp_path):
    (tmp_path / "pkgdir").mkdir()
    proc = run_ulma(["run", "pkgdir"], cwd=str(tmp_path))
    assert proc.returncode == 2
    assert "pkgdir" in proc.stderr.decode()
    assert sorted(os.listdir(str(tmp_path))) == ["pkgdir"]


@pytest.mark.parametrize("output", ["/nonexistent/dir/x.trace", "{tmp}"])
def test_run_unwritable_output_does_not_run_the_program(output, prog, run_ulma, tmp_path):
    marker = tmp_path / "marker"
    output = output.format(tmp=str(tmp_path))  # a directory is not writable as a file
    proc = run_ulma(["run", "-o", output, prog("make_marker.py"), str(marker)], cwd=str(tmp_path))
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert err.startswith("ulma: ") and output in err, err
    assert not marker.exists(), "the program ran although its trace could not be written"


def test_run_with_missing_interpreter(prog, run_ulma, tmp_path):
    marker = tmp_path / "marker"
    out = tmp_path / "x.trace"
    proc = run_ulma(
        ["run", "--python", "/nonexistent/python3", "-o", str(out), prog("make_marker.py"), str(marker)],
        cwd=str(tmp_path),
    )
    assert proc.returncode > 0
    err = proc.stderr.decode()
    assert "/nonexistent/python3" in err and err.startswith("ulma: ")
    assert not marker.exists()
    assert not out.exists(), "a trace was left behind by a run that never started"


def test_run_with_interpreter_lacking_ulma(prog, run_ulma, tmp_path):
    """An interpreter that cannot import ulma: the program does not run and
    ulma says why."""
    import sys

    fake = tmp_path / "python-without-site"
    fake.write_text('#!/bin/sh\nexec "%s" -S "$@"\n' % sys.executable)
    fake.chmod(0o755)
    marker = tmp_path / "marker"
    proc = run_ulma(
        ["run", "--python", str(fake), "-o", str(tmp_path / "x.trace"), prog("make_marker.py"), str(marker)],
        cwd=str(tmp_path),
    )
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "cannot load the ulma package" in err and str(fake) in err, err
    assert not (tmp_path / "x.trace").exists()
    assert not marker.exists()


@pytest.mark.parametrize("code", [0, 1, 3])
def test_run_with_a_program_that_is_not_python(code, prog, run_ulma, tmp_path):
    """`--python /bin/true` (or anything that never runs ulma's bootstrap):
    ulma says the program never started tracing, keeps no empty trace, and
    exits with the program's own status, not an empty summary and 0."""
    fake = tmp_path / "not-python"
    fake.write_text("#!/bin/sh\nexit %d\n" % code)
    fake.chmod(0o755)
    python = {0: "/bin/true", 1: "/bin/false"}.get(code, str(fake))
    out = tmp_path / "x.trace"
    proc = run_ulma(["run", "--python", python, "-o", str(out), prog("make_marker.py"), str(tmp_path / "m")],
                    cwd=str(tmp_path))
    line = _one_line_error(proc, code)
    assert "never started tracing" in line and python in line and "status %d" % code in line, line
    assert "calls" not in proc.stderr.decode()  # no summary of nothing
    assert not out.exists(), "an empty trace was left behind"


@pytest.mark.parametrize(
    "opts", [["--ring-records", "100"], ["--ring-records", "32"], ["--limit", "x"], ["--limit", "0"], ["--bogus"]]
)
def test_run_bad_options(opts, prog, run_ulma, tmp_path):
    marker = tmp_path / "marker"
    proc = run_ulma(["run"] + opts + [prog("make_marker.py"), str(marker)], cwd=str(tmp_path))
    assert proc.returncode == 2
    assert b"ulma" in proc.stderr
    assert not marker.exists()
    assert os.listdir(str(tmp_path)) == []


def test_run_without_script(run_ulma, tmp_path):
    proc = run_ulma(["run"], cwd=str(tmp_path))
    assert proc.returncode == 2
    assert b"ulma: " in proc.stderr
    assert os.listdir(str(tmp_path)) == []


def test_run_bad_summary_option(prog, run_ulma, tmp_path):
    marker = tmp_path / "marker"
    proc = run_ulma(["run", "--summary", "xml", prog("make_marker.py"), str(marker)], cwd=str(tmp_path))
    assert proc.returncode == 2
    assert b"xml" in proc.stderr
    assert not marker.exists()


# ulma report and the reader on trace files: C, the same on every Python
TRACE_FILES = pytest.mark.once("the C reader on trace files, and usage errors")


@TRACE_FILES
def test_unknown_command(run_ulma):
    proc = run_ulma(["frobnicate"])
    assert proc.returncode == 2
    assert b"frobnicate" in proc.stderr


# --- ulma report on things that are not traces ------------------------------


@TRACE_FILES
def test_report_missing_file(run_ulma, tmp_path):
    line = _one_line_error(run_ulma(["report", str(tmp_path / "absent.trace")]), 1)
    assert "absent.trace" in line


def _bad_trace(kind, tmp_path):
    path = tmp_path / ("bad-%s.trace" % kind)
    rng = random.Random(20240607)
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "random":
        path.write_bytes(bytes(rng.getrandbits(8) for _ in range(64 * 1024)))
    elif kind == "text":
        path.write_text("calls total self\n" * 200)
    elif kind == "magic-then-garbage":
        path.write_bytes(b"ULMATRC\x01" + b"\x01\x00\x00\x00" + bytes(4) + bytes(rng.getrandbits(8) for _ in range(4096)))
    elif kind == "wrong-version":
        path.write_bytes(b"ULMATRC\x01" + b"\x63\x00\x00\x00" + bytes(4) + bytes(64))
    elif kind == "header-only":
        path.write_bytes(b"ULMATRC\x01" + b"\x01\x00\x00\x00" + bytes(4))
    elif kind == "directory":
        path.mkdir()
    return str(path)


@TRACE_FILES
@pytest.mark.parametrize(
    "kind", ["empty", "random", "text", "magic-then-garbage", "wrong-version", "header-only", "directory"]
)
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_report_rejects_non_traces(kind, fmt, run_ulma, tmp_path):
    path = _bad_trace(kind, tmp_path)
    line = _one_line_error(run_ulma(["report", path, "--format", fmt]), 1)
    assert os.path.basename(path) in line


# a trace that is not a regular file: `ulma report`, `report --html` and
# `export` each refuse it at once, with what it is
READERS = {
    "report": lambda path, out: ["report", path],
    "report-json": lambda path, out: ["report", path, "--format", "json"],
    "report-html": lambda path, out: ["report", path, "--html", out],
    "export": lambda path, out: ["export", path, "--format", "folded", "-o", out],
}


@TRACE_FILES
@pytest.mark.parametrize("reader", sorted(READERS))
def test_directory_as_trace_says_so(reader, run_ulma, tmp_path):
    (tmp_path / "traces").mkdir()
    out = str(tmp_path / "out")
    line = _one_line_error(run_ulma(READERS[reader](str(tmp_path / "traces"), out)), 1)
    assert "traces" in line and "is a directory" in line, line
    assert "Input/output error" not in line, line
    assert not os.path.exists(out)


@TRACE_FILES
@pytest.mark.parametrize("reader", sorted(READERS))
def test_fifo_as_trace_is_refused_without_waiting_for_a_writer(reader, run_ulma, tmp_path):
    """A FIFO nobody writes to: open() would wait forever.  (A hang fails
    the test through the process timeout, not a timing assertion.)"""
    fifo = tmp_path / "pipe.trace"
    os.mkfifo(str(fifo))
    out = str(tmp_path / "out")
    line = _one_line_error(run_ulma(READERS[reader](str(fifo), out)), 1)
    assert "pipe.trace" in line and "FIFO" in line and "not a regular file" in line, line
    assert not os.path.exists(out)


# --- ulma report on damaged real traces -----------------------------------------


@pytest.fixture(scope="module")
def big_trace(prog, run_ulma, report_json, tmp_path_factory):
    """A real trace of a few hundred kilobytes, and its full report."""
    path = str(tmp_path_factory.mktemp("big") / "fib.trace")
    proc = run_ulma(["run", "--lossless", "--summary", "none", "-o", path, prog("fib_calls.py")])
    assert proc.returncode == 0, proc.stderr
    data, _ = report_json(path)
    assert data["complete"] is True
    assert os.path.getsize(path) > 200 * 1024
    return path, data


@TRACE_FILES
def test_truncated_trace_reports_what_it_holds(big_trace, run_ulma, tmp_path):
    import json

    path, full = big_trace
    half = str(tmp_path / "half.trace")
    with open(path, "rb") as f:
        blob = f.read()
    with open(half, "wb") as f:
        f.write(blob[: len(blob) // 2])
    proc = run_ulma(["report", half, "--format", "json"])
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    assert "incomplete" in err and "Traceback" not in err
    data = json.loads(proc.stdout)
    assert data["complete"] is False
    assert data["exit_status"] == -1
    assert 0 < data["events"] < full["events"]
    assert data["functions"], "no function survived the cut"
    text = run_ulma(["report", half])
    assert text.returncode == 0
    assert b"incomplete" in text.stdout and b"incomplete" in text.stderr


@TRACE_FILES
@pytest.mark.parametrize("cut", [16, 17, 100, 1000])
def test_trace_cut_early_is_an_error_or_empty_report(cut, big_trace, run_ulma, tmp_path):
    """A cut before or inside the first chunk leaves no session record."""
    path, _ = big_trace
    short = str(tmp_path / "short.trace")
    with open(path, "rb") as f:
        blob = f.read(cut)
    with open(short, "wb") as f:
        f.write(blob)
    proc = run_ulma(["report", short, "--format", "json"])
    assert proc.returncode in (0, 1), proc.returncode  # never a signal
    if proc.returncode == 1:
        _one_line_error(proc, 1)
    else:
        assert b"incomplete" in proc.stderr


@TRACE_FILES
def test_corrupted_byte_is_detected(big_trace, run_ulma, tmp_path):
    """One flipped byte in the middle fails the chunk checksum: an error, not a wrong report."""
    path, _ = big_trace
    bad = str(tmp_path / "flipped.trace")
    shutil.copy(path, bad)
    with open(bad, "r+b") as f:
        f.seek(os.path.getsize(bad) // 2)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0x40]))
    line = _one_line_error(run_ulma(["report", bad, "--format", "json"]), 1)
    assert "flipped.trace" in line


# --- ulma report options -------------------------------------------------------


@TRACE_FILES
def test_report_unknown_format(big_trace, run_ulma):
    path, _ = big_trace
    proc = run_ulma(["report", path, "--format", "yaml"])
    assert proc.returncode == 2
    assert b"yaml" in proc.stderr
    assert proc.stdout == b""


@TRACE_FILES
@pytest.mark.parametrize(
    "args",
    [["report"], ["report", "a.trace", "b.trace"], ["report", "--limit", "0", "a.trace"], ["report", "--bogus", "x"]],
)
def test_report_usage_errors(args, run_ulma, tmp_path):
    proc = run_ulma(args, cwd=str(tmp_path))
    assert proc.returncode == 2
    assert b"ulma: " in proc.stderr or b"usage" in proc.stderr
