"""`ulma export` as a command: every failure is one "ulma: ..." line with
exit status 1 (2 for a usage error), an output is never left half-written
under its final name, a previous file under that name survives a failed
export, and a trace cut short still exports what it holds."""
import marshal
import os

import pytest

from export_helpers import FILE_FORMATS, export_trace, no_temp_files, run_export  # noqa: F401


def _one_line_error(proc, code):
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == code, (proc.returncode, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("ulma: "), err
    assert "Traceback" not in err
    return lines[0]


pytestmark = pytest.mark.once("ulma export's errors on trace files: C, the same on every Python")


@pytest.fixture(scope="module")
def fib(export_trace):
    return export_trace("fib_calls.py")


@pytest.mark.parametrize("fmt", FILE_FORMATS)
def test_missing_trace(fmt, run_ulma, tmp_path):
    out = tmp_path / "out"
    proc = run_ulma(["export", str(tmp_path / "nope.trace"), "--format", fmt, "-o", str(out)])
    line = _one_line_error(proc, 1)
    assert "nope.trace" in line and "No such file" in line
    assert os.listdir(str(tmp_path)) == []


@pytest.mark.parametrize("fmt", FILE_FORMATS)
def test_corrupt_trace_keeps_the_previous_output(fmt, run_ulma, fib, tmp_path):
    """A trace damaged in the middle: error, and the file already under the
    output name is untouched (the export went to a temporary name)."""
    with open(fib["trace"], "rb") as f:
        data = bytearray(f.read())
    data[len(data) // 2] ^= 0xFF
    bad = tmp_path / "bad.trace"
    bad.write_bytes(bytes(data))
    out = tmp_path / "out"
    out.write_bytes(b"previous")
    proc = run_ulma(["export", str(bad), "--format", fmt, "-o", str(out)])
    line = _one_line_error(proc, 1)
    assert "not a readable ulma trace" in line and "checksum" in line, line
    assert out.read_bytes() == b"previous"
    assert no_temp_files(tmp_path) == []


def test_foreign_file(run_ulma, tmp_path):
    foreign = tmp_path / "x.trace"
    foreign.write_bytes(b"this is not a trace at all\n" * 10)
    proc = run_ulma(["export", str(foreign), "--format", "pstats", "-o", str(tmp_path / "o")])
    assert "bad magic" in _one_line_error(proc, 1)
    assert sorted(os.listdir(str(tmp_path))) == ["x.trace"]


def test_unknown_format(run_ulma, fib, tmp_path):
    proc = run_ulma(["export", fib["trace"], "--format", "svg", "-o", str(tmp_path / "o")])
    line = _one_line_error(proc, 1)
    assert "'svg'" in line and "pstats" in line
    assert os.listdir(str(tmp_path)) == []


@pytest.mark.parametrize("where", ["missing-dir", "is-a-dir"])
def test_unwritable_output(where, run_ulma, fib, tmp_path):
    if where == "missing-dir":
        out = tmp_path / "no" / "such" / "out.pstats"
    else:
        out = tmp_path / "adir"
        out.mkdir()
        (out / "keep").write_bytes(b"")
    proc = run_ulma(["export", fib["trace"], "--format", "pstats", "-o", str(out)])
    line = _one_line_error(proc, 1)
    assert line.startswith("ulma: cannot write '%s'" % out), line
    assert no_temp_files(tmp_path) == []
    if where == "is-a-dir":
        assert os.listdir(str(out)) == ["keep"]


@pytest.mark.parametrize(
    "args, words",
    [
        (["--format", "pstats"], "-o"),
        (["-o", "x"], "--format"),
        (["--format", "pstats", "-o", "x", "--from", "soon"], "--from"),
        (["--format", "pstats", "-o", "x", "--to", "5 ms"], "--to"),
        (["--format", "pstats", "-o", "x", "--min-duration", "-1"], "--min-duration"),
        (["--format", "pstats", "-o", "x", "--from", "2s", "--to", "1s"], "--from"),
        (["--format", "pstats", "-o", "x", "--thread", "abc"], "--thread"),
        (["--format", "pstats", "-o", "x", "--process", "-4"], "--process"),
    ],
)
def test_usage_errors(args, words, run_ulma, fib, tmp_path):
    proc = run_ulma(["export", fib["trace"]] + args, cwd=str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.decode()
    assert err.startswith("ulma: ") and words in err.splitlines()[0], err
    assert os.listdir(str(tmp_path)) == []


def test_no_trace_and_two_traces(run_ulma, fib, tmp_path):
    assert run_ulma(["export", "--format", "pstats", "-o", "x"], cwd=str(tmp_path)).returncode == 2
    proc = run_ulma(["export", fib["trace"], fib["trace"], "--format", "pstats", "-o", "x"], cwd=str(tmp_path))
    assert proc.returncode == 2
    assert os.listdir(str(tmp_path)) == []


def test_help_lists_every_format(run_ulma):
    proc = run_ulma(["export", "--help"])
    assert proc.returncode == 0
    for fmt in FILE_FORMATS:
        assert ("  %s " % fmt).encode() in proc.stdout
    assert b"export" in run_ulma(["--help"]).stdout


def test_stdout_output(run_ulma, fib):
    proc = run_ulma(["export", fib["trace"], "--format", "pstats", "-o", "-"])
    assert proc.returncode == 0, proc.stderr
    stats = marshal.loads(proc.stdout)
    assert stats[(fib["path"], 4, "fib")][1] == 10 * 21891


def test_output_mode_is_an_ordinary_file(run_export, fib, tmp_path):
    out = tmp_path / "o.pstats"
    old = os.umask(0o022)
    try:
        run_export(fib["trace"], "pstats", out)
    finally:
        os.umask(old)
    assert os.stat(str(out)).st_mode & 0o777 == 0o644


@pytest.mark.parametrize("fmt", FILE_FORMATS)
def test_cut_trace_exports_what_it_holds(fmt, run_ulma, fib, tmp_path):
    """The first half of a trace: a warning, exit 0, a non-empty export."""
    with open(fib["trace"], "rb") as f:
        data = f.read()
    cut = tmp_path / "cut.trace"
    cut.write_bytes(data[: len(data) // 2])
    out = tmp_path / "out"
    proc = run_ulma(["export", str(cut), "--format", fmt, "-o", str(out)])
    assert proc.returncode == 0, proc.stderr
    assert b"incomplete" in proc.stderr
    assert out.stat().st_size > 0
    assert no_temp_files(tmp_path) == []
