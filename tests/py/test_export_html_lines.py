"""The HTML report's Lines view (docs/exports.md, html): annotated source of
the functions recorded with `ulma run --lines`, rendered by headless
Chromium (test_export_html.dump_dom) and read from the DOM the page's
script built.

The traces are made by hand (trace_builder.lines_trace: version 5, LINE
and LINE_RESUME events, source copies, off-CPU intervals), so every figure
is known in advance: hits per line, each line's time (its ticks are ns),
the split, the calls made on a line.  The page's figures must also be
`ulma report`'s, the hook's cost taken out the same way.
"""
import re
from html.parser import HTMLParser

import pytest

from test_export_html import dump_dom, page_data
from trace_builder import SOURCE_CHANGED, SPLIT_NONE, lines_trace

pytestmark = pytest.mark.once("hand-made traces, the HTML page in Chromium")

PROG = """\
def work(n):
    total = 0
    for i in range(n):
        total += helper(i)
    return total

def helper(i):
    return i * 2
"""

# work: line 2 at 100 (10 ns), 3 at 110 (10), 4 at 120 calling helper (40),
# 3 at 160 (10), 5 at 170 blocked 30 of its 50 ns; helper's line 8 (20 ns).
WORK_EVENTS = [
    (100, "enter", 1), (100, "line", 2), (110, "line", 3), (120, "line", 4),
    (130, "enter", 2), (130, "line", 8), (150, "exit"),
    (160, "line", 3), (170, "line", 5), (180, "off", "blocked", 30), (220, "exit"),
]
WORK = {2: (1, 10), 3: (2, 20), 4: (1, 40), 5: (1, 50)}  # line: (hits, ns)


class LinesDom(HTMLParser):
    """From the rendered page: the Lines section's function list, the
    shown function's heading, notices and rows (cells, class, title, the
    bar's width and its parts), and the function table's rows' classes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.funcs, self.head, self.notices, self.rows, self.table_classes = [], "", [], [], []
        self.section_hidden = None
        self.tags, self.ready = [], False
        self._where, self._text, self._row, self._cell = None, None, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if tag == "body":
            self.ready = a.get("data-ready") == "yes"
        if tag == "section" and a.get("id") == "linesec":
            self.section_hidden = "hidden" in a
        if tag == "tbody":
            self._where = a.get("id")
        if tag == "div" and a.get("id") == "linehead":
            self._text = "head"
            self.head = ""
        if tag == "div" and a.get("class") == "notice":
            self._text = "notice"
            self.notices.append("")
        if tag == "tr" and self._where in ("linerows", "linefuncs"):
            self._row = {"class": a.get("class") or "", "title": a.get("title"), "line": a.get("data-line"),
                         "cells": [], "bar": None, "parts": {}}
        if tag == "tr" and self._where == "rows":
            self.table_classes.append(a.get("class") or "")
        if tag == "td" and self._row is not None:
            self._row["cells"].append("")
            self._cell = True
        if tag == "span" and self._row is not None and "width" in (a.get("style") or ""):
            self._row["bar"] = float(re.search(r"width:\s*([\d.]+)%", a["style"]).group(1))
        if tag == "i" and self._row is not None and a.get("data-part"):
            self._row["parts"][a["data-part"]] = float(re.search(r"width:\s*([\d.]+)%", a["style"]).group(1))

    def handle_endtag(self, tag):
        if tag == "div":
            self._text = None
        if tag == "td":
            self._cell = None
        if tag == "tr" and self._row is not None:
            (self.rows if self._where == "linerows" else self.funcs).append(self._row)
            self._row = None
        if tag == "tbody":
            self._where = None

    def handle_data(self, data):
        if self._cell and self._row is not None:
            self._row["cells"][-1] += data
        elif self._text == "head":
            self.head += data
        elif self._text == "notice":
            self.notices[-1] += data


def lines_dom(path, tmp_path, select=None):
    """The Lines view of the page at path after headless Chromium ran its
    script (with function `select` of the view's list shown, by its
    #lines=N address)."""
    target = "%s#lines=%d" % (path, select) if select is not None else str(path)
    view = LinesDom()
    view.feed(dump_dom(target, tmp_path))
    assert view.ready, "the page's script did not run to its end"
    return view


def source_rows(view):
    """{line: row} of the shown function's source lines (not the calls under them)."""
    return {int(r["line"]): r for r in view.rows if r["line"] is not None}


def call_rows(view):
    return [r for r in view.rows if "call" in r["class"].split()]


@pytest.fixture
def work_trace(tmp_path):
    path = tmp_path / "work.ulma"
    path.write_bytes(lines_trace([("/src/prog.py", PROG, 0)], [("work", 0, 1), ("helper", 0, 7)], WORK_EVENTS, 400,
                                 overhead_ps=0))
    return path


def html_of(run_ulma, trace, out, *extra):
    proc = run_ulma(["report", str(trace), "--html", str(out)] + list(extra))
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return out


def test_annotated_source_with_hits_times_and_calls(work_trace, run_ulma, tmp_path):
    view = lines_dom(html_of(run_ulma, work_trace, tmp_path / "work.html"), tmp_path)
    assert view.section_hidden is False
    # the functions with lines, the longest first
    assert [r["cells"][0] for r in view.funcs] == ["work (/src/prog.py:1)", "helper (/src/prog.py:7)"]
    assert view.funcs[0]["class"] == "sel"
    assert view.head.startswith("work") and "/src/prog.py:1" in view.head
    assert view.notices == []
    rows = source_rows(view)
    # its block, every line of it, the source as text
    assert sorted(rows) == [1, 2, 3, 4, 5]
    lines = PROG.splitlines()
    for n, r in rows.items():
        assert r["cells"][-1] == lines[n - 1]
    # a line without hits is greyed and empty
    assert rows[1]["class"] == "nohit" and rows[1]["cells"][1:6] == [""] * 5
    for n, (hits, ns) in WORK.items():
        r = rows[n]
        assert r["class"] == ""
        assert r["cells"][1] == str(hits)
        assert r["cells"][2] == "%d ns" % ns
        assert ("line %d: %d hit" % (n, hits)) in r["title"]
    # bars proportional to the lines' times: the longest is full width
    longest = max(ns for _, ns in WORK.values())
    for n, (_, ns) in WORK.items():
        assert rows[n]["bar"] == pytest.approx(100.0 * ns / longest, abs=0.01)
    # split: line 5 was blocked 30 of its 50 ns, the others ran on the CPU
    assert rows[5]["parts"] == pytest.approx({"on-CPU": 40.0, "runnable": 0.0, "blocked": 60.0}, abs=0.01)
    assert rows[2]["parts"] == pytest.approx({"on-CPU": 100.0, "runnable": 0.0, "blocked": 0.0}, abs=0.01)
    # the call made on line 4, beneath it
    (call,) = call_rows(view)
    assert call["cells"][-1] == "\u2192 helper (1 call)" and call["cells"][2] == "20 ns"
    assert call["class"] == "call hasl"  # helper has lines of its own: a click shows them
    assert view.rows.index(call) == view.rows.index(rows[4]) + 1
    # the function table leads to the lines: both functions have some
    assert view.table_classes.count("hasl") == 2


def test_figures_are_the_reports(work_trace, run_ulma, report_json, tmp_path):
    """With the hook's cost taken out (an OVERHEAD chunk), the page's line
    times are `ulma report --format json`'s."""
    path = tmp_path / "costly.ulma"
    path.write_bytes(lines_trace([("/src/prog.py", PROG, 0)], [("work", 0, 1), ("helper", 0, 7)], WORK_EVENTS, 400,
                                 overhead_ps=2000))
    _, data = page_data(html_of(run_ulma, path, tmp_path / "costly.html"))
    report, _ = report_json(str(path))
    want = {f["name"]: f["lines"] for f in report["functions"] if f.get("lines")}
    got = {f["name"]: f for f in data["lines"]["funcs"]}
    assert set(got) == set(want) == {"work", "helper"}
    for name, lines in want.items():
        rows = {r[0]: r for r in got[name]["rows"]}
        assert sorted(rows) == [x["line"] for x in lines]
        for x in lines:
            r = rows[x["line"]]
            assert (r[1], r[2], r[3], r[4], r[5]) == (x["hits"], x["total_ns"], x["on_cpu_ns"], x["runnable_ns"],
                                                        x["blocked_ns"])
            assert [(c[1], c[2], c[3]) for c in r[8]] == [(c["name"], c["calls"], c["total_ns"]) for c in x["calls"]]
    # the correction took something off: 2 ns an event
    assert got["work"]["rows"][3][2] < WORK[5][1]


def test_changed_file_missing_copy_and_resumes(run_ulma, tmp_path):
    """A file changed during the run is announced; a function whose file has
    no copy shows its lines by number; a resumed generator's line counts no
    hit but its time."""
    gen = "def numbers():\n    yield 1\n    yield 2\n"
    events = [
        (10, "enter", 1), (10, "line", 2), (20, "exit"),           # first next(): line 2, a hit
        (30, "enter", 1), (30, "resume", 2), (35, "line", 3), (45, "exit"),  # resumed in 2, then 3
        (50, "enter", 2), (50, "line", 40), (80, "exit"),
    ]
    path = tmp_path / "gen.ulma"
    path.write_bytes(lines_trace([("/src/gen.py", gen, SOURCE_CHANGED), ("/gone/lib.py", None, 0)],
                                 [("numbers", 0, 1), ("far", 1, 39)], events, 100, overhead_ps=0))
    out = html_of(run_ulma, path, tmp_path / "gen.html")
    view = lines_dom(out, tmp_path)
    assert [r["cells"][0] for r in view.funcs] == ["far (/gone/lib.py:39)", "numbers (/src/gen.py:1)"]
    # far: no copy of its file
    assert view.notices == ["no copy of the source: lines by number"]
    rows = source_rows(view)
    assert list(rows) == [40] and rows[40]["cells"][1] == "1" and rows[40]["cells"][-1] == ""
    # numbers, chosen by its address: its file changed while the program ran
    view = lines_dom(out, tmp_path, select=1)
    assert view.head.startswith("numbers")
    assert view.notices == ["the file changed while the program ran: the source shown may not be what ran"]
    rows = source_rows(view)
    assert sorted(rows) == [1, 2, 3]
    assert rows[2]["cells"][1] == "1" and rows[2]["cells"][2] == "15 ns"  # 10 as a hit, 5 resumed
    assert rows[3]["cells"][1] == "1" and rows[3]["cells"][2] == "10 ns"
    assert rows[2]["bar"] == pytest.approx(100.0) and rows[3]["bar"] == pytest.approx(100.0 * 10 / 15, abs=0.01)


def test_program_text_stays_text(run_ulma, tmp_path):
    """Source lines are the program's text: markup in them, and in names,
    is shown as it is, runs nothing and makes no element."""
    src = ('def f():\n    s = "<img src=x onerror=alert(1)>"\n    t = "</script><script>alert(2)</script>"\n'
           '    return s + t\n')
    events = [(0, "enter", 1), (0, "line", 2), (5, "line", 3), (9, "line", 4), (12, "exit")]
    path = tmp_path / "odd.ulma"
    path.write_bytes(lines_trace([("/src/<b>odd</b>.py", src, 0)], [("<i>f</i>", 0, 1)], events, 50, overhead_ps=0))
    out = html_of(run_ulma, path, tmp_path / "odd.html")
    view = lines_dom(out, tmp_path)
    rows = source_rows(view)
    for n, line in enumerate(src.splitlines(), 1):
        assert rows[n]["cells"][-1] == line
    assert view.head.startswith("<i>f</i>")
    assert [r["cells"][0] for r in view.funcs] == ["<i>f</i> (/src/<b>odd</b>.py:1)"]
    assert "img" not in view.tags and "b" not in view.tags
    assert view.tags.count("script") == 2


def test_patterns_choose_the_functions(work_trace, run_ulma, tmp_path):
    """`ulma export --exclude` leaves a function's lines out with it."""
    out = tmp_path / "only.html"
    proc = run_ulma(["export", str(work_trace), "--format", "html", "-o", str(out), "--exclude", "helper"])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    _, data = page_data(out)
    assert [f["name"] for f in data["lines"]["funcs"]] == ["work"]
    # its call to helper is still counted on its line, as recorded
    (line4,) = [r for r in data["lines"]["funcs"][0]["rows"] if r[0] == 4]
    assert [c[1] for c in line4[8]] == ["helper"] and line4[8][0][0] == -1


def test_no_lines_no_view(run_ulma, tmp_path):
    events = [(0, "enter", 1), (10, "exit")]
    path = tmp_path / "plain.ulma"
    path.write_bytes(lines_trace([("/src/p.py", None, 0)], [("main", 0, 1)], events, 20, overhead_ps=0))
    out = html_of(run_ulma, path, tmp_path / "plain.html")
    _, data = page_data(out)
    assert data["lines"] is None
    view = lines_dom(out, tmp_path)
    assert view.section_hidden is True and view.table_classes == [""]


def test_source_is_bounded(run_ulma, tmp_path):
    """Eight functions of 300 lines of 1200 bytes each: the first ones'
    source fits in the 512 KB the report keeps, the rest show line numbers
    and say so."""
    files, funcs, events, t = [], [], [], 0
    for k in range(8):
        body = "".join("    x%d = '%s'\n" % (i, "y" * 1180) for i in range(300))
        files.append(("/src/big%d.py" % k, "def f%d():\n%s" % (k, body), 0))
        funcs.append(("f%d" % k, k, 1))
        events += [(t, "enter", k + 1), (t, "line", 2), (t + 100 - k, "line", 301), (t + 200 - 2 * k, "exit")]
        t += 1000
    path = tmp_path / "big.ulma"
    path.write_bytes(lines_trace(files, funcs, events, t, overhead_ps=0))
    out = html_of(run_ulma, path, tmp_path / "big.html")
    _, data = page_data(out)
    kinds = [f["source"] for f in data["lines"]["funcs"]]
    assert kinds == ["copy"] + ["left out"] * 7
    assert data["lines"]["source_left_out"] is True
    # each source line is cut at 1000 bytes
    assert max(len(s) for s in data["lines"]["funcs"][0]["text"]) <= 1000
    assert (tmp_path / "big.html").stat().st_size < 1024 * 1024
    view = lines_dom(out, tmp_path, select=7)
    assert view.head.startswith("f7")
    assert view.notices == ["source left out: the report holds at most 512 KB of source"]
    assert sorted(source_rows(view)) == [2, 301]


def test_cut_and_corrupt_traces(run_ulma, tmp_path, work_trace):
    """A trace cut before its END still makes a page, its open frames'
    lines closed at the last event; a corrupt one gets a clear message."""
    data = work_trace.read_bytes()
    cut = tmp_path / "cut.ulma"
    cut.write_bytes(data[:data.rindex(b"\x05\x00\x00\x00")])  # the END chunk's header and on
    out = html_of(run_ulma, cut, tmp_path / "cut.html")
    _, page = page_data(out)
    assert [f["name"] for f in page["lines"]["funcs"]] == ["work", "helper"]
    bad = tmp_path / "bad.ulma"
    bad.write_bytes(data[:60] + bytes([data[60] ^ 0xFF]) + data[61:])
    proc = run_ulma(["report", str(bad), "--html", str(tmp_path / "bad.html")])
    assert proc.returncode == 1 and b"not a readable ulma trace" in proc.stderr, proc.stderr


def test_without_a_split_one_colour(run_ulma, tmp_path):
    """A trace that does not split time draws each bar in one colour."""
    path = tmp_path / "nosplit.ulma"
    events = [e for e in WORK_EVENTS if e[1] != "off"]
    path.write_bytes(lines_trace([("/src/prog.py", PROG, 0)], [("work", 0, 1), ("helper", 0, 7)], events, 400,
                                 overhead_ps=0, split=SPLIT_NONE))
    view = lines_dom(html_of(run_ulma, path, tmp_path / "nosplit.html"), tmp_path)
    rows = source_rows(view)
    assert rows[5]["parts"] == {"time": 100.0}
    assert rows[4]["bar"] == pytest.approx(100.0 * 40 / 50, abs=0.01)


REAL = """\
def work(n):
    total = 0
    for i in range(n):
        total += i % 7
    return total


print(work(40))
"""


def test_recorded_program(run_ulma, tmp_path):
    """A real program recorded with `ulma run --lines work`: the view shows
    work's source from the trace's copy and its hits.  Until the traced
    process emits LINE records (the in-process side of issue 16), `ulma
    run` refuses --lines and this test is skipped."""
    prog = tmp_path / "real.py"
    prog.write_text(REAL)
    trace = tmp_path / "real.ulma"
    proc = run_ulma(["run", "--summary", "none", "--lines", "work", "-o", str(trace), str(prog)], cwd=str(tmp_path))
    if proc.returncode == 2 and b"lines" in proc.stderr:
        pytest.skip("ulma run does not record lines yet: %s" % proc.stderr.decode(errors="replace").splitlines()[0])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    view = lines_dom(html_of(run_ulma, trace, tmp_path / "real.html"), tmp_path)
    assert view.head.startswith("work")
    rows = source_rows(view)
    assert sorted(rows) == [1, 2, 3, 4, 5]
    for n, line in enumerate(REAL.splitlines()[:5], 1):
        assert rows[n]["cells"][-1] == line
    assert rows[2]["cells"][1] == "1" and rows[4]["cells"][1] == "40" and rows[5]["cells"][1] == "1"
    assert rows[3]["cells"][1] in ("40", "41")  # the loop's header: once more to leave, where the interpreter says so


def test_rows_are_bounded(run_ulma, tmp_path):
    """A function with more line rows than the report keeps (5000) is left
    out and counted; the others are shown."""
    events = [(0, "enter", 1)] + [(1 + i, "line", 1 + i) for i in range(5001)] + [(200000, "exit")]
    events += [(200000, "enter", 2), (200000, "line", 2), (200001, "exit")]
    path = tmp_path / "wide.ulma"
    path.write_bytes(lines_trace([("/src/wide.py", None, 0)], [("wide", 0, 1), ("small", 0, 1)], events, 200010,
                                 overhead_ps=0))
    _, data = page_data(html_of(run_ulma, path, tmp_path / "wide.html"))
    assert [f["name"] for f in data["lines"]["funcs"]] == ["small"]
    assert data["lines"]["funcs_left_out"] == 1
