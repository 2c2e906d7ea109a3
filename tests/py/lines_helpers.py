"""Helpers for the line-level tests (test_lines_*.py): run a program with
--lines patterns and read the line tables of the JSON report."""
import sys

QUALNAMES = sys.version_info >= (3, 11)  # ulma names functions by co_qualname where it exists


def name(qualname):
    """The name ulma gives a function with this qualified name here."""
    return qualname if QUALNAMES else qualname.rsplit(".", 1)[-1]


def run_lines(run_ulma, report_json, trace, program, patterns, args=(), cwd=None, extra=()):
    """`ulma run --lines P... [extra] program args` -> (report dict, run process);
    fails the test if the run does not succeed."""
    argv = ["run", "--no-live", "-o", str(trace)] + list(extra)
    for pattern in patterns:
        argv += ["--lines", pattern]
    proc = run_ulma(argv + [program] + list(args), cwd=cwd)
    assert proc.returncode == 0, "ulma run failed (%d): %s" % (proc.returncode, proc.stderr.decode(errors="replace"))
    data, _ = report_json(str(trace))
    return data, proc


def line_tables(data, file=None):
    """{function name: {line: hits}} for the functions that have lines
    (of one file if given)."""
    return {f["name"]: {row["line"]: row["hits"] for row in f["lines"]}
            for f in data["functions"] if "lines" in f and (file is None or f["file"] == file)}


def line_of(path, text, after=None):
    """The number of the first line of file `path` that reads `text` (less
    its indentation), after the first that reads `after` if given."""
    lines = [line.strip() for line in open(path).read().splitlines()]
    start = lines.index(after) + 1 if after else 0
    return lines.index(text, start) + 1
