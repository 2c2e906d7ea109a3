"""Line-level hits (docs/lines.md): for the code chosen with --lines, the
JSON report's hits per line equal line_profiler's on the same Python, line
for line (line_profiler counts sys.monitoring's LINE events on 3.12+ and
the trace function's line events before, as ulma does), on a program of
loops, one-line whiles, comprehensions, generators, try/except/finally,
with, a return inside a loop and statements over several lines.  Code
nested in chosen code is chosen with it; nothing else has lines."""
import json

import pytest

from lines_helpers import line_of, line_tables, name, run_lines

# lines_prog.MEASURED, by qualified name
MEASURED = ["loops", "comp", "gen", "usegen", "tryf", "withf", "multiline", "Shape.area", "outer", "counted"]


@pytest.fixture(scope="module")
def whole_file(prog, run_ulma, run_python, report_json, tmp_path_factory):
    """lines_prog.py under line_profiler, and under `ulma run --lines lines_prog.py`."""
    pytest.importorskip("line_profiler")
    work = tmp_path_factory.mktemp("lines")
    truth_file = work / "truth.json"
    plain = run_python([prog("lines_truth.py"), str(truth_file)])
    assert plain.returncode == 0, plain.stderr.decode(errors="replace")
    truth = {}
    for key, hits in json.loads(truth_file.read_text()).items():
        func, line = key.rsplit(" ", 1)
        truth.setdefault(func, {})[int(line)] = hits
    data, proc = run_lines(run_ulma, report_json, work / "t.trace", prog("lines_prog.py"), ["lines_prog.py"])
    return truth, line_tables(data, prog("lines_prog.py")), proc


def test_hits_equal_line_profilers(whole_file):
    truth, tables, _ = whole_file
    for qualname in MEASURED:  # line_profiler names functions as ulma does
        assert tables.get(name(qualname)) == truth[name(qualname)], (qualname, tables.get(name(qualname)))


def test_a_loop_of_n_hits_its_for_line_n_plus_one_times(whole_file, prog):
    _, tables, _ = whole_file
    first = line_of(prog("lines_prog.py"), "total = 0", after="def counted(n):")
    assert tables["counted"] == {first: 1, first + 1: 8, first + 2: 7, first + 3: 1}


def test_nested_code_is_chosen_with_its_parent(whole_file, prog):
    _, tables, _ = whole_file
    assert tables[name("outer.<locals>.inner")] == {line_of(prog("lines_prog.py"), "return k * 2"): 3}
    assert name("outer.<locals>.<lambda>") in tables
    # a file pattern chooses every function of the file, the module's body too
    assert "<module>" in tables and name("CM.__enter__") in tables


def test_only_chosen_code_has_lines(prog, run_ulma, report_json, tmp_path):
    data, proc = run_lines(run_ulma, report_json, tmp_path / "t.trace", prog("lines_prog.py"), ["loops", "outer"])
    tables = line_tables(data)
    # outer brings the code nested in it: inner, the lambda, the list comprehension before 3.12
    nested = {name("outer.<locals>.inner"), name("outer.<locals>.<lambda>")}
    assert {"loops", "outer"} | nested <= set(tables) <= {"loops", "outer", name("outer.<locals>.<listcomp>")} | nested
    called = {f["name"] for f in data["functions"] if f["calls"]}
    assert {"comp", "unrelated", "main"} <= called  # they ran, without lines
    assert b"matched no function" not in proc.stderr
