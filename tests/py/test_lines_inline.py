"""Choosing code from the program (docs/lines.md): @ulma.lines marks a
function for every tracing session of the process, at once if one runs;
ulma.profile(lines=[...]) takes functions (through the decorators that
wrap them) and patterns; `ulma record PID --lines` chooses code in a
process it attaches to, and the choice ends with the recording."""
import subprocess
import sys

import pytest

import ulma
from conftest import TIMEOUT, base_env
from lines_helpers import line_of, line_tables
from test_live_attach import Program, ulma as run_ulma_cmd


def test_a_block_with_functions_and_patterns(prog, report_json, tmp_path):
    trace = str(tmp_path / "block.trace")
    proc = subprocess.run([sys.executable, prog("lines_inline.py"), "block", trace], capture_output=True,
                          stdin=subprocess.DEVNULL, env=base_env(), timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert b"matched no function" not in proc.stderr, proc.stderr
    data, _ = report_json(trace)
    tables = line_tables(data, prog("lines_inline.py"))
    # the function under the decorator, not the decorator's wrapper
    first = line_of(prog("lines_inline.py"), "t = 0", after="def wrapped(n):")
    assert tables["wrapped"] == {first: 1, first + 1: 4, first + 2: 3, first + 3: 1}, tables
    assert set(tables) == {"wrapped", "marked", "by_pattern", "late"}, set(tables)
    assert tables["late"] == {line_of(prog("lines_inline.py"), "return n - 1"): 1}


def test_a_marked_function_under_ulma_run(prog, run_ulma, report_json, tmp_path):
    trace = str(tmp_path / "run.trace")
    proc = run_ulma(["run", "--no-live", "-o", trace, prog("lines_inline.py"), "run"])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    data, _ = report_json(trace)
    assert set(line_tables(data)) == {"marked", "late"}, set(line_tables(data))


def test_code_from_a_command_line(report_json, tmp_path):
    trace = str(tmp_path / "c.trace")
    code = ("import sys, ulma\n"
            "def f(n):\n"
            "    return n + 1\n"
            "with ulma.profile(sys.argv[1], summary='none', lines=[f]):\n"
            "    f(1)\n")
    proc = subprocess.run([sys.executable, "-c", code, trace], capture_output=True, stdin=subprocess.DEVNULL,
                          env=base_env(), timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    data, _ = report_json(trace)
    assert line_tables(data) == {"f": {3: 1}}


@pytest.mark.parametrize("bad, error", [([""], ValueError), ([42], TypeError), (["ok", len], TypeError)])
def test_bad_choices_are_refused(bad, error, tmp_path):
    with pytest.raises(error, match="lines"):
        ulma.profile(str(tmp_path / "x.trace"), lines=bad)
    with pytest.raises(TypeError, match="lines"):
        ulma.lines(42)


def test_record_chooses_code_until_it_detaches(prog, ulma_bin, tmp_path, report_json):
    p = Program(prog, ulma_bin, tmp_path, via_run=True)
    try:
        traces = [str(tmp_path / "with.trace"), str(tmp_path / "without.trace")]
        rec = run_ulma_cmd(ulma_bin, "record", p.pid, "-d", "0.5", "-o", traces[0], "--lines", "work")
        assert rec.returncode == 0, rec.stderr.decode()
        rec = run_ulma_cmd(ulma_bin, "record", p.pid, "-d", "0.5", "-o", traces[1])
        assert rec.returncode == 0, rec.stderr.decode()
        code, _, err = p.finish()
        assert code == 5, err
    finally:
        p.kill()
    tables = [line_tables(report_json(t)[0]) for t in traces]
    assert set(tables[0]) == {"work"}, tables[0]
    assert tables[0]["work"][line_of(prog("live_work.py"), "total += leaf(i)")] > 0
    assert tables[1] == {}
