"""Shared by the tests/py/test_export_*.py files: programs traced once per
session, `ulma export` runs, and the JSON report's figures keyed the way
the export formats key functions.  Helpers run processes and reshape data;
they assert only that a command they need succeeded.
"""
import os

import pytest

# every format that writes one file, in the order they were built
FILE_FORMATS = ["pstats", "folded", "chrome", "speedscope", "callgrind", "html", "perfetto"]

# programs/odd_names.py's function names: NAMES[i] is called i + 1 times
ODD_NAMES = [
    "semi;colon",
    "new\nline",
    "per%cent",
    "tab\there",
    'quote"back\\slash',
    "<script>alert(1)</script>",
    "gr\u00fc\u00dfe \u2028 \U0001f600",
    "<img src=x onerror=\"document.title='pwned'\">",
]


def odd_names_line(path):
    """The first line of programs/odd_names.py's _template, which every odd name shares."""
    with open(path) as f:
        return next(i for i, line in enumerate(f, 1) if line.startswith("def _template"))


@pytest.fixture(scope="session")
def export_trace(run_ulma, report_json, prog, tmp_path_factory):
    """export_trace(name) -> {"trace", "report", "path"}: tests/py/programs/NAME
    traced once per session with --lossless, and its JSON report with raw
    times (exports carry times as measured, docs/overhead.md)."""
    cache = {}

    def get(name):
        if name not in cache:
            trace = str(tmp_path_factory.mktemp("export-trace") / (name + ".trace"))
            proc = run_ulma(["run", "--lossless", "--summary", "none", "-o", trace, prog(name)])
            assert proc.returncode == 0, proc.stderr.decode(errors="replace")
            report, _ = report_json(trace, raw=True)
            cache[name] = {"trace": trace, "report": report, "path": prog(name)}
        return cache[name]

    return get


@pytest.fixture(scope="session")
def run_export(run_ulma):
    """run_export(trace, fmt, out, *extra, corrected=False) -> CompletedProcess;
    fails the test if `ulma export` does not succeed or writes nothing.
    Times are raw (--no-correction), as the report fixtures give them,
    unless corrected=True."""

    def run(trace, fmt, out, *extra, corrected=False):
        raw = [] if corrected else ["--no-correction"]
        proc = run_ulma(["export", trace, "--format", fmt, "-o", str(out)] + raw + list(extra))
        assert proc.returncode == 0, "ulma export failed (%d): %s" % (
            proc.returncode,
            proc.stderr.decode(errors="replace"),
        )
        assert os.path.exists(str(out)), "ulma export succeeded but wrote no %s" % out
        return proc

    return run


def report_calls(report, pstats_keys=False):
    """{key: calls} from a JSON report, functions with the same key merged.
    key is (file, line, name), or with pstats_keys the key cProfile gives
    (pstats_name)."""
    calls = {}
    for f in report["functions"]:
        key = function_key(f, pstats_keys)
        calls[key] = calls.get(key, 0) + f["calls"]
    return calls


def function_key(f, pstats_keys=False):
    if pstats_keys:
        return (f["file"], f["line"], pstats_name(f))
    return (f["file"], f["line"], f["name"])


def pstats_name(f):
    """The name cProfile gives function f of a JSON report (docs/exports.md,
    pstats): co_name for Python functions, and for C functions a label
    that depends on their c_kind."""
    owner, _, method = f["name"].rpartition(".")
    if f["kind"] == "python":
        return method
    c_kind = f.get("c_kind", "function")
    if c_kind == "method" and owner:
        return "<method '%s' of '%s' objects>" % (method, owner)
    if c_kind in ("method", "classmethod"):
        return "<built-in method %s>" % method
    if c_kind == "unbound":
        return "<%s>" % (method if owner == "builtins" else f["name"])
    return "<built-in method %s>" % f["name"]


def report_row(report, path, name):
    """The one JSON row of function NAME in file PATH."""
    rows = [f for f in report["functions"] if f["file"] == path and f["name"] == name]
    assert len(rows) == 1, rows
    return rows[0]


def no_temp_files(directory):
    """Names in directory that look like a left-over temporary export."""
    return [n for n in os.listdir(str(directory)) if ".tmp." in n]
