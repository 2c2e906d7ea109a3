"""The JSON contract of `ulma report --format json` (docs/json.md): keys,
types, orderings and the invariants between them; the same numbers from
`ulma run --summary json`; and the text summary `ulma run` prints on
stderr and `ulma report` prints on stdout."""
import json
import os
import re
import sys

import pytest

FIB_CALLS = 10 * 21891  # programs/fib_calls.py: fib(20) ten times, 2*F(21)-1 calls each
FIB_LINE = 4

TOP_KEYS = {
    "functions": list,
    "thread_list": list,
    "events": int,
    "lost": int,
    "threads": int,
    "processes": int,
    "duration_ns": int,
    "trace_bytes": int,
    "bytes_per_event": (int, float),
    "complete": bool,
    "exit_status": int,
    "warnings": str,
}
FUNC_KEYS = {"name": str, "file": str, "line": int, "kind": str, "calls": int, "total_ns": int, "self_ns": int}
THREAD_KEYS = {"serial": int, "pid": int, "tid": int, "events": int, "lost": int, "wall_ns": int, "self_ns": int}


def _check_types(obj, spec):
    for key, typ in spec.items():
        assert key in obj, "missing key %r in %r" % (key, obj)
        assert isinstance(obj[key], typ), "%r is %r, not %r" % (key, obj[key], typ)
        if typ is int or typ == (int, float):
            assert not isinstance(obj[key], bool), key


@pytest.fixture(scope="module")
def fib_run(prog, run_ulma, report_json, tmp_path_factory):
    """fib_calls.py traced once with a JSON summary, run from its directory."""
    trace = str(tmp_path_factory.mktemp("fib") / "fib.trace")
    proc = run_ulma(
        ["run", "--lossless", "--summary", "json", "-o", trace, "fib_calls.py"],
        cwd=os.path.dirname(prog("fib_calls.py")),
    )
    assert proc.returncode == 0, proc.stderr
    data, _ = report_json(trace)
    return {"trace": trace, "proc": proc, "data": data, "path": prog("fib_calls.py")}


@pytest.fixture(scope="module")
def varied_report(prog, traced_json):
    data, _ = traced_json(prog("varied.py"))
    return data


@pytest.mark.parametrize("which", ["fib", "varied"])
def test_keys_and_types(which, fib_run, varied_report):
    data = fib_run["data"] if which == "fib" else varied_report
    _check_types(data, TOP_KEYS)
    assert data["functions"] and data["thread_list"]
    for f in data["functions"]:
        _check_types(f, FUNC_KEYS)
        assert f["kind"] in ("python", "c")
        assert f["calls"] > 0
        assert f["total_ns"] >= 0 and f["self_ns"] >= 0
        if f["kind"] == "c":
            assert (f["file"], f["line"]) == ("~", 0), f
            assert f["name"], f
        else:
            assert f["file"] != "~" and f["line"] > 0, f
    for t in data["thread_list"]:
        _check_types(t, THREAD_KEYS)
    assert data["complete"] is True and data["exit_status"] == 0
    assert data["warnings"] == ""
    assert data["duration_ns"] > 0


def test_program_files_are_absolute(fib_run):
    """Run with a relative script path: the trace still names the absolute file."""
    files = {f["file"] for f in fib_run["data"]["functions"] if f["kind"] == "python"}
    assert fib_run["path"] in files


@pytest.mark.parametrize("which", ["fib", "varied"])
def test_functions_sorted_by_self_time(which, fib_run, varied_report):
    data = fib_run["data"] if which == "fib" else varied_report
    selfs = [f["self_ns"] for f in data["functions"]]
    assert selfs == sorted(selfs, reverse=True)


@pytest.mark.parametrize("which", ["fib", "varied"])
def test_totals_add_up(which, fib_run, varied_report):
    data = fib_run["data"] if which == "fib" else varied_report
    threads = data["thread_list"]
    assert data["threads"] == len(threads)
    assert sum(t["events"] for t in threads) == data["events"]
    assert sum(t["lost"] for t in threads) == data["lost"] == 0
    # lossless and complete: every entry has its exit, nothing else is an event
    assert data["events"] == 2 * sum(f["calls"] for f in data["functions"])
    assert data["bytes_per_event"] == pytest.approx(data["trace_bytes"] / data["events"], abs=0.001)


def test_trace_bytes_is_the_file_size(fib_run):
    assert fib_run["data"]["trace_bytes"] == os.path.getsize(fib_run["trace"])


def test_self_time_within_total_time(prog, varied_report):
    """self_ns <= total_ns for the non-recursive functions of varied.py."""
    path = prog("varied.py")
    rows = [f for f in varied_report["functions"] if f["file"] == path and not f["name"].endswith("fib")]
    assert len(rows) >= 20
    for f in rows:
        assert f["self_ns"] <= f["total_ns"], f


def test_recursive_total_counts_outermost_frames_only(fib_run):
    funcs = fib_run["data"]["functions"]
    fib = [f for f in funcs if f["name"] == "fib" and f["file"] == fib_run["path"]]
    main = [f for f in funcs if f["name"] == "main" and f["file"] == fib_run["path"]]
    assert len(fib) == 1 and len(main) == 1
    fib, main = fib[0], main[0]
    assert fib["calls"] == FIB_CALLS and fib["line"] == FIB_LINE
    assert main["calls"] == 1
    # fib runs inside main: summed over recursion levels it would be ~20x larger
    assert fib["self_ns"] <= fib["total_ns"] <= main["total_ns"] <= fib_run["data"]["duration_ns"]


def test_run_summary_json_equals_report(fib_run):
    """`ulma run --summary json` (stderr) and `ulma report` agree on every count and time."""
    stderr = fib_run["proc"].stderr.decode()
    run_data = json.loads(stderr)
    report = fib_run["data"]
    for key in ("events", "lost", "threads", "processes", "trace_bytes", "complete", "exit_status"):
        assert run_data[key] == report[key], key

    def rows(d):
        return {(f["name"], f["file"], f["line"]): f for f in d["functions"]}

    # every figure of every function: the monitor's profile (its fast loop
    # takes a leaf call without a frame) is the reader's, event for event
    assert rows(run_data) == rows(report)
    assert sum(f["calls"] for f in run_data["functions"]) > 1000


def test_run_summary_equals_report_outermost_leaves(prog, run_ulma, report_json, tmp_path):
    """As above where the leaf calls are their function's outermost frames
    (their totals counted) and C calls are among them."""
    trace = str(tmp_path / "many.trace")
    proc = run_ulma(["run", "--lossless", "--summary", "json", "-o", trace, prog("many_calls.py")])
    assert proc.returncode == 0, proc.stderr
    run_data = json.loads(proc.stderr.decode())
    report, _ = report_json(trace)
    rows = lambda d: {(f["name"], f["file"], f["line"]): f for f in d["functions"]}  # noqa: E731
    assert rows(run_data) == rows(report)
    leaf = [f for f in run_data["functions"] if f["name"] == "leaf"]
    assert len(leaf) == 1 and leaf[0]["calls"] == 50_000 and leaf[0]["total_ns"] >= leaf[0]["self_ns"] > 0


def _table_rows(text):
    """Function rows of a text summary: lines between the header and 'totals:'."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == ["calls"])
    end = next(i for i, line in enumerate(lines) if line.startswith("totals:"))
    return [line for line in lines[start + 1 : end] if line.strip()]


def _name_column(text):
    """Index of the function name among a row's fields: the numeric columns
    before it vary (cpu%/run%/blk% appear when the time split is known)."""
    header = next(line for line in text.splitlines() if line.split()[:1] == ["calls"]).split()
    # "total ms", "self ms" and "us/call" are one column each but two words in the header
    return header.index("function") - 2


def test_run_text_summary_on_stderr(prog, run_ulma, trace_path):
    cwd = os.path.dirname(prog("fib_calls.py"))
    proc = run_ulma(["run", "--lossless", "-o", trace_path, "fib_calls.py"], cwd=cwd)
    assert proc.returncode == 0
    assert proc.stdout == b"fib %d\n" % (10 * 6765)  # the summary is not on stdout
    text = proc.stderr.decode()
    rows = _table_rows(text)
    k = _name_column(text)
    fib_rows = [r for r in rows if r.split()[k : k + 1] == ["fib"]]
    assert len(fib_rows) == 1, rows
    fields = fib_rows[0].split()
    assert fields[0] == str(FIB_CALLS)
    assert fields[-1] == "fib_calls.py:%d" % FIB_LINE
    assert any(r.split()[k : k + 1] == ["main"] and r.endswith("fib_calls.py:8") for r in rows), rows
    events = re.search(r"^events: (\d+) captured, (\d+) lost", text, re.M)
    assert events and int(events.group(2)) == 0 and int(events.group(1)) >= 2 * FIB_CALLS
    assert re.search(r"^trace: .*, ([0-9.]+) bytes/event", text, re.M)
    assert re.search(r"^totals: [0-9.]+ s wall, 1 thread, 1 process(, exit status 0)?$", text, re.M)


def test_report_text_limit(fib_run, run_ulma):
    for limit in (1, 3):
        proc = run_ulma(["report", fib_run["trace"], "--limit", str(limit)])
        assert proc.returncode == 0
        rows = _table_rows(proc.stdout.decode())
        assert len(rows) == limit
    text = run_ulma(["report", fib_run["trace"]]).stdout.decode()
    full = _table_rows(text)
    assert len(full) == min(25, len(fib_run["data"]["functions"]))
    # the top row is the function with the most self time
    assert full[0].split()[_name_column(text)] == fib_run["data"]["functions"][0]["name"]


def test_summary_none_keeps_stderr_clean(prog, run_ulma, trace_path):
    proc = run_ulma(["run", "--summary", "none", "-o", trace_path, prog("fib_calls.py")])
    assert proc.returncode == 0
    assert proc.stderr == b""
    assert os.path.getsize(trace_path) > 0


def test_non_ascii_names_and_paths(run_ulma, report_json, tmp_path):
    """Names and paths are UTF-8 in the JSON, exactly as Python spells them."""
    script = tmp_path / "pr\u00f6g ram \u00e9.py"
    script.write_text(
        "def gr\u00f6\u00dfe(x):\n    return x * 2\n\n\n"
        "class \u00dcn\u00ef:\n    def m\u00e9tho_d(self):\n        return 1\n\n\n"
        "print(gr\u00f6\u00dfe(21), \u00dcn\u00ef().m\u00e9tho_d())\n",
        encoding="utf-8",
    )
    trace = str(tmp_path / "u.trace")
    proc = run_ulma(["run", "-o", trace, str(script)], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"42 1\n"
    data, _ = report_json(trace)
    names = {f["name"]: f for f in data["functions"] if f["file"] == str(script)}
    method = "\u00dcn\u00ef.m\u00e9tho_d" if sys.version_info >= (3, 11) else "m\u00e9tho_d"
    for name, line in (("gr\u00f6\u00dfe", 1), (method, 6), ("<module>", 1)):
        assert name in names, sorted(names)
        assert names[name]["line"] == line and names[name]["calls"] == 1
    assert "gr\u00f6\u00dfe" in proc.stderr.decode("utf-8")


def test_text_summary_keeps_odd_names_on_their_rows(prog, run_ulma, trace_path):
    """Function names are the program's to choose (programs/odd_names.py sets them on
    its code objects): a newline or tab in one shows as '?', so each row stays one line."""
    proc = run_ulma(["run", "--no-live", "--limit", "50", "-o", trace_path, prog("odd_names.py")])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.decode("utf-8", "replace").splitlines()
    assert any(" new?line " in l for l in lines), proc.stderr.decode()
    assert any(" tab?here " in l for l in lines), proc.stderr.decode()
    assert not any(l.strip() == "line" or l.startswith("line ") for l in lines), proc.stderr.decode()
