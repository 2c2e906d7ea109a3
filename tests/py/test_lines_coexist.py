"""Line-level profiling beside the rest of the program (docs/lines.md,
"Limits"): a program that traces lines itself (sys.settrace) keeps its
tracer and its counts; on 3.9-3.11 ulma then leaves the lines that run
under the program's tracer out.  Threads count their hits apart, and
together they add up."""
import sys

from lines_helpers import line_of, line_tables, run_lines


def test_a_program_that_traces_lines_itself(prog, run_ulma, run_python, report_json, tmp_path):
    path = prog("lines_settrace.py")
    plain = run_python([path])
    assert plain.returncode == 0, plain.stderr
    data, traced = run_lines(run_ulma, report_json, tmp_path / "t.trace", path, ["counted", "ours"])
    assert traced.stdout == plain.stdout
    assert b"tracer after: None" in traced.stdout
    loop = line_of(path, "for i in range(n):", after="def counted(n):")
    hits = line_tables(data)["counted"][loop]
    # counted(3) and counted(5) around ours(3), which calls counted(0), (1) and (2)
    # under the program's tracer: 3.12 has tools of their own, before it one trace function
    assert hits == (4 + 6 + 1 + 2 + 3 if sys.version_info >= (3, 12) else 4 + 6), hits
    # the summary says what is missing, where something is
    missing = "so its lines there are missing" in data["warnings"]
    assert missing == (sys.version_info < (3, 12)), data["warnings"]
    assert missing == (b"so its lines there are missing" in traced.stderr)


def test_threads(prog, run_ulma, report_json, tmp_path):
    path = prog("lines_threads.py")
    data, _ = run_lines(run_ulma, report_json, tmp_path / "t.trace", path, ["counted"])
    loop = line_of(path, "for i in range(n):")
    assert line_tables(data)["counted"] == {loop - 1: 5, loop: 5 * 51, loop + 1: 5 * 50, loop + 2: 5}
