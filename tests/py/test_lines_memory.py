"""A line's time split and its memory, and `ulma report --lines`
(docs/lines.md, docs/memory.md): a line that sleeps is blocked; with
--memory each line of the chosen code carries the allocations made while
it ran, its calls' included, as its time does."""
import sys

from lines_helpers import line_of, run_lines


def test_allocations_per_line(prog, run_ulma, report_json, tmp_path):
    path = prog("lines_alloc.py")
    data, proc = run_lines(run_ulma, report_json, tmp_path / "t.trace", path, ["work"], extra=["--memory"])
    assert proc.stdout.strip() == b"400000"
    rows = {row["line"]: row for f in data["functions"] if f["name"] == "work" for row in f["lines"]}
    listed, called, last = (line_of(path, text) for text in
                            ("a = [None] * 100000", "b = make_bytes(300000)", "return len(a) + len(b)"))
    # the list's array of 8-byte pointers; the bytes object's header and 300000 bytes, made in make_bytes
    assert 100000 * 8 <= rows[listed]["alloc_bytes"] < 100000 * 8 + 4096, rows[listed]
    assert 300000 + sys.getsizeof(b"") - 1 <= rows[called]["alloc_bytes"] < 300000 + 4096, rows[called]
    assert rows[called]["calls"][0]["name"].endswith("make_bytes")
    assert rows[last]["alloc_bytes"] < 1024, rows[last]
    assert "alloc KiB" in proc.stderr.decode()


def test_no_memory_keys_without_memory(prog, run_ulma, report_json, tmp_path):
    path = prog("lines_alloc.py")
    data, _ = run_lines(run_ulma, report_json, tmp_path / "t.trace", path, ["work"])
    rows = [row for f in data["functions"] if f["name"] == "work" for row in f["lines"]]
    assert rows and all("alloc_bytes" not in row for row in rows)


def test_a_line_that_sleeps_is_blocked(prog, run_ulma, report_json, tmp_path):
    """The issue's known answer: a line that sleeps 100 ms shows as blocked,
    from the scheduler's switch records; the spinning line as on a CPU."""
    path = prog("lines_sleep.py")
    data, _ = run_lines(run_ulma, report_json, tmp_path / "t.trace", path, ["work"])
    rows = {row["line"]: row for f in data["functions"] if f["name"] == "work" for row in f["lines"]}
    sleep, spin = line_of(path, "time.sleep(0.1)"), line_of(path, "while time.perf_counter() < end: pass")
    assert rows[sleep]["total_ns"] >= 100_000_000, rows[sleep]
    assert rows[sleep]["on_cpu_ns"] + rows[sleep]["runnable_ns"] + rows[sleep]["blocked_ns"] == rows[sleep]["total_ns"]
    if data["split_method"] == "switches":
        assert rows[sleep]["blocked_ns"] >= 0.9 * rows[sleep]["total_ns"], rows[sleep]
        assert rows[spin]["blocked_ns"] <= 0.1 * rows[spin]["total_ns"], rows[spin]


def test_report_lines(prog, run_ulma, tmp_path):
    """`ulma report --lines` prints every line table of a trace, and refuses
    a trace without lines with a message that says how to record them."""
    path = prog("lines_alloc.py")
    with_lines, without = tmp_path / "l.trace", tmp_path / "n.trace"
    assert run_ulma(["run", "--no-live", "-o", str(with_lines), "--lines", "work", path]).returncode == 0
    assert run_ulma(["run", "--no-live", "-o", str(without), path]).returncode == 0
    shown = run_ulma(["report", str(with_lines), "--lines"])
    assert shown.returncode == 0, shown.stderr
    assert b"lines of work" in shown.stdout and b"a = [None] * 100000" in shown.stdout
    refused = run_ulma(["report", str(without), "--lines"])
    assert refused.returncode == 1 and refused.stdout == b""
    assert b"has no lines: record them with `ulma run --lines PATTERN`" in refused.stderr
