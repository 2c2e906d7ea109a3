"""The HTML report's Memory view (docs/html.md, "Memory"), in headless
Chromium (html_browser.py), read back from the rendered page's DOM with
known answers:

- programs/mem_known.py keeps 200 lists of 1000 items and 200 bytes
  objects of 1000 bytes, and holds 8 blocks of 1 MiB at once in
  peak_phase: the peak marked on the chart is `ulma report`'s, at least
  8 MiB above what is kept; the largest stack at the peak ends in
  peak_phase with the 8 MiB blocks and the stacks at the peak add up to
  the peak exactly; the leaks are the report's, stack for stack; the
  function table's own Python, own native and held-at-end columns are
  the report's figures; the chart's heap line rises to within a counter
  step of the peak; no script error.
- the same page's flame graphs of the stacks at the peak and of the
  leaks: every box is as wide as its bytes (the canvas's width times its
  bytes over the root's), the root is the peak (`peak_bytes`) and the
  leaked total (`live_bytes`) exactly; peak_phase's box sits under
  <module> > main and holds the bytes of the exact list's stacks through
  it, at least its 8 MiB; a click on it zooms it to the whole width, the
  reset button back; the search outlines it.
- programs/mem_stacks.py: 3000 distinct leaking stacks keep the flame
  graphs to their 2000 heaviest nodes, the rest one "other" box whose
  bytes and stacks the note gives; the root is still the total.
- a C extension (tests/native/memmod.c, instrumented): its native frame
  holding N blocks of S bytes is drawn green, the Python frames warm, the
  builtin blue, and its box holds the N x S native bytes.
- programs/mem_objects.py (3.13+): K Points created and none destroyed,
  N lists created in make_lists, in the objects tables.
- programs/mem_many.py: thousands of counter values and 120 leaking
  stacks give at most 513 points a line and 50 rows a table, with the
  count of the rest.
- programs/mem_two_procs.py: a chart per process, the peak's first.
- programs/mem_rss.py: the RSS line rises by the 100 MiB grow() touched.
- --memory=sample: the page says its bytes are estimates.
"""
import colorsys
import json
import sys

import pytest

import html_browser
from test_memory_native import memmod  # noqa: F401 (the extension fixture)
from test_native import cc  # noqa: F401 (the compiler fixture memmod uses)

pytestmark = [
    pytest.mark.skipif(html_browser.CHROMIUM is None,
                       reason="chromium not installed (scripts/ensure-deps.sh installs it)"),
    # the figures themselves are checked per Python by test_memory*.py
    pytest.mark.once("the HTML page's Memory view in Chromium against ulma report"),
]
HAS_REFTRACER = sys.version_info >= (3, 13)
ROWS = "Array.prototype.map.call(document.querySelectorAll('#%s tr'), function (tr) {" \
       " return [+tr.getAttribute('data-bytes')].concat(Array.prototype.map.call(tr.children," \
       " function (td) { return td.textContent; })); })"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = html_browser.Browser(str(tmp_path_factory.mktemp("chromium-profile")))
    yield b
    b.close()


def traced_page(run_ulma, prog, d, name, *args):
    trace, out = d / (name + ".trace"), d / (name + ".html")
    proc = run_ulma(["run", "--memory", "--lossless", "--no-live", "--summary", "none", "-o", str(trace),
                     prog(name)] + [str(a) for a in args])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert run_ulma(["report", str(trace), "--html", str(out)]).returncode == 0
    report = json.loads(run_ulma(["report", str(trace), "--format", "json"]).stdout)
    return trace, out, report


@pytest.fixture(scope="module")
def known(run_ulma, prog, tmp_path_factory):
    return traced_page(run_ulma, prog, tmp_path_factory.mktemp("html-mem"), "mem_known.py", 200, 1000, 100, 8)


def test_peak_leaks_and_columns(browser, known, tmp_path):
    trace, page, report = known
    browser.open(str(page))
    assert browser.errors() == []
    assert browser.js("document.getElementById('memsec').hidden") is False
    peak = browser.js("(function (g) { return [+g.getAttribute('data-bytes'), +g.getAttribute('data-at')]; })"
                      "(document.getElementById('mempeak'))")
    kept = 200 * 8000 + 200 * 1000
    assert peak[0] == report["peak_bytes"] >= 8 * 2**20 + kept, (peak, report["peak_bytes"])
    # the page's time is on the corrected clock, the report's peak_time_ns raw: a hook's cost apart
    assert abs(peak[1] - report["peak_time_ns"]) <= max(10**6, report["peak_time_ns"] // 20), peak
    at_peak = browser.js(ROWS % "peakrows")
    assert at_peak[0][4].endswith("main \u2192 peak_phase") and at_peak[0][0] >= 8 * 2**20, at_peak[0]
    assert sum(r[0] for r in at_peak) == report["peak_bytes"]  # every stack holding it, no more
    assert "peak_phase" not in " ".join(r[4] for r in browser.js(ROWS % "leakrows"))
    leaks = browser.js(ROWS % "leakrows")
    want = [(" \u2192 ".join(x["stack"]) or "(no frame)", x["bytes"], x["count"]) for x in report["leaks"]]
    assert [(r[4], r[0], int(r[2])) for r in leaks] == want
    assert any(r[4].endswith("main \u2192 make_bytes") for r in leaks)
    data = browser.js("JSON.parse(document.getElementById('ulma-data').textContent)")
    for f in report["functions"]:
        if f["name"] in ("make_bytes", "make_lists", "peak_phase"):
            (row,) = [k for k, g in enumerate(data["funcs"]) if g[0] == f["name"]]
            fx = data["fx"][row]
            assert fx[10] == f["alloc_bytes"] and fx[12] == f["native_alloc_bytes"] == 0
            assert fx[13] == f["net_bytes"], (f["name"], fx, f["net_bytes"])
    heads = browser.js("Array.prototype.map.call(document.querySelectorAll('#head th'), function (th) {"
                       " return th.textContent; })")
    assert [h.rstrip(" \u25bc\u25b2") for h in heads[-4:]] == ["own Python", "own native", "held at end", "allocated"]
    heap = browser.js("(function (p) { return [+p.getAttribute('data-max'), +p.getAttribute('data-points')]; })"
                      "(document.querySelector('#memchart path[data-series=heap]'))")
    step = max(65536, report["peak_bytes"] // 64)  # the monitor's counter step (docs/memory.md)
    assert report["peak_bytes"] - step <= heap[0] <= report["peak_bytes"], heap
    browser.js("document.getElementById('memsec').scrollIntoView()")
    browser.screenshot(tmp_path / "memory.png")


FLAME = "ulmaReport.flame('%s')"  # [label, x, y, width, found by the search, bytes] per box
ROW = 18  # the icicle's row height (report.js)


def flame_boxes(browser, canvas, root_bytes):
    """The boxes drawn on a memory flame graph, checked: the root first,
    the canvas's width, with root_bytes; every box as wide as its bytes."""
    boxes = browser.js(FLAME % canvas)
    width = browser.js("document.getElementById('%s').clientWidth" % canvas)
    assert boxes and boxes[0][5] == root_bytes and boxes[0][3] == width, (boxes[:1], root_bytes, width)
    for label, x, y, w, found, value in boxes:
        assert abs(w - width * value / root_bytes) <= 1e-6 * width, (label, w, value)
    return boxes


def ancestors(boxes, box):
    """The labels of the boxes above box (outermost first), by position."""
    return [b[0] for b in boxes if b[2] < box[2] and b[1] <= box[1] + 1e-6 and box[1] + box[3] <= b[1] + b[3] + 1e-6]


def click_box(browser, canvas, box):
    browser.center("#" + canvas)  # scrolled into view
    left, top, _, _ = browser.rect("#" + canvas)
    browser.click(left + box[1] + min(box[3] / 2, 40), top + box[2] + ROW / 2)


def test_peak_and_leak_flame_graphs(browser, known, tmp_path):
    trace, page, report = known
    browser.open(str(page))
    assert browser.errors() == []
    boxes = flame_boxes(browser, "peakflame", report["peak_bytes"])
    assert boxes[0][0].startswith("pid %d at its peak" % report["peak_pid"]), boxes[0]
    (peak,) = [b for b in boxes if b[0].startswith("peak_phase (mem_known.py:")]
    assert [a.split(" ")[0] for a in ancestors(boxes, peak)][-2:] == ["<module>", "main"], ancestors(boxes, peak)
    exact = browser.js("JSON.parse(document.getElementById('ulma-data').textContent).memory.peak_stacks")
    through = sum(g["bytes"] for g in exact
                  if any(g["stack"][i:i + 2] == ["main", "peak_phase"] for i in range(len(g["stack"]))))
    assert peak[5] == through >= 8 * 2**20, (peak, through)
    width = boxes[0][3]
    click_box(browser, "peakflame", peak)
    zoomed = browser.js(FLAME % "peakflame")
    (now,) = [b for b in zoomed if b[0] == peak[0]]
    assert abs(now[3] - width) < 1e-6 and now[1] == 0, now  # zoomed to the whole width
    assert not [b for b in zoomed if b[0].startswith("make_lists")]  # its siblings are gone
    browser.click_on("#peakreset")
    assert browser.js(FLAME % "peakflame") == boxes
    browser.type_text("#search", "peak_phase")
    assert [b[0] for b in browser.js(FLAME % "peakflame") if b[4]] == [peak[0]]
    browser.js("var s = document.getElementById('search'); s.value = ''; s.dispatchEvent(new Event('input')); 0")

    assert report["live_bytes"] == sum(g["bytes"] for g in report["leaks"])  # all its groups are listed
    leaks = flame_boxes(browser, "leakflame", report["live_bytes"])
    assert not [b for b in leaks if b[0].startswith("peak_phase")]
    (lists,) = [b for b in leaks if b[0].startswith("make_lists (")]
    assert lists[5] == sum(g["bytes"] for g in report["leaks"] if "make_lists" in g["stack"]) >= 200 * 8000
    assert browser.errors() == []
    browser.js("document.getElementById('peakflame').scrollIntoView()")
    browser.screenshot(tmp_path / "memory-flames.png")


def test_flame_graphs_bounded(browser, run_ulma, prog, tmp_path):
    """3000 distinct leaking stacks: 2000 nodes kept, the other stacks one
    "other" box under main, said in the note; the root still the total."""
    _, page, report = traced_page(run_ulma, prog, tmp_path, "mem_stacks.py", 3000)
    assert report["leak_groups"] >= 3000
    browser.open(str(page))
    assert browser.errors() == []
    data = browser.js("JSON.parse(document.getElementById('ulma-data').textContent).memory")
    for name, canvas, root in (("peak_flame", "peakflame", report["peak_bytes"]),
                               ("leak_flame", "leakflame", report["live_bytes"])):
        f = data[name]
        assert f["b"][0] == root
        assert len(f["f"]) <= 2 * 2000 and f["f"].count(-1) == 1
        assert f["other_stacks"] >= 900 and f["other_bytes"] >= 900 * 1000, (f["other_stacks"], f["other_bytes"])
        assert sum(b for b, k in zip(f["b"], f["f"]) if k == -2) == f["other_bytes"]
        boxes = flame_boxes(browser, canvas, root)
        other = [b for b in boxes if b[0].startswith("other: ")]
        assert other and sum(b[5] for b in other) == f["other_bytes"]
        assert ("%d smaller stacks" % f["other_stacks"]) in browser.js(
            "document.getElementById('%snote').textContent" % canvas)
    assert len(data["frames"]) <= 4000
    assert page.stat().st_size < 2 * 10**6


def test_native_frames_told_apart(browser, memmod, run_ulma, tmp_path):  # noqa: F811
    """A native function (tests/native/memmod.c's grab, instrumented)
    keeping N blocks of S bytes: its box holds the N x S native bytes and
    is drawn green (native), its Python caller warm, the builtin blue."""
    n, size = 1000, 1000
    script = tmp_path / "keep_native.py"
    script.write_text("import sys\nsys.path.insert(0, sys.argv[1])\nimport memmod\n\n\n"
                      "def keeper():\n    memmod.keep(%d, %d)\n\n\nkeeper()\n" % (n, size))
    trace, page = tmp_path / "n.trace", tmp_path / "n.html"
    proc = run_ulma(["run", "--memory", "--no-live", "--summary", "none", "-o", str(trace), str(script),
                     memmod["instrumented"]])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert run_ulma(["report", str(trace), "--html", str(page)]).returncode == 0
    report = json.loads(run_ulma(["report", str(trace), "--format", "json"]).stdout)
    browser.open(str(page))
    assert browser.errors() == []
    boxes = flame_boxes(browser, "leakflame", report["live_bytes"])
    (grab,) = [b for b in boxes if b[0].startswith("grab [native]")]
    (keeper,) = [b for b in boxes if b[0].startswith("keeper (keep_native.py:")]
    (builtin,) = [b for b in boxes if b[0] == "memmod.keep"]
    assert grab[5] == n * size, grab
    data = browser.js("JSON.parse(document.getElementById('ulma-data').textContent)")
    names = [data["funcs"][r][0] if isinstance(r, int) else r[0] for r in data["memory"]["frames"]]
    flame = data["memory"]["leak_flame"]
    (k,) = [i for i, f in enumerate(flame["f"]) if f >= 0 and names[f] == "grab"]
    assert flame["b"][k] == flame["nb"][k] == n * size and flame["c"][k] == n
    browser.center("#leakflame")
    rgb = browser.js("(function (boxes) { var c = document.getElementById('leakflame'), r = window.devicePixelRatio"
                     " || 1, g = c.getContext('2d'); return boxes.map(function (b) { return Array.prototype.slice.call("
                     "g.getImageData(Math.round((b[1] + 1.5) * r), Math.round((b[2] + 1.5) * r), 1, 1).data, 0, 3);"
                     " }); })(" + json.dumps([grab, keeper, builtin]) + ")")
    hues = [colorsys.rgb_to_hsv(*(v / 255 for v in p))[0] * 360 for p in rgb]
    assert 90 <= hues[0] <= 150, hues  # native: green (report.js's KINDS)
    assert 0 <= hues[1] <= 65, hues    # Python: warm
    assert 195 <= hues[2] <= 245, hues  # C builtins: blue


@pytest.mark.skipif(not HAS_REFTRACER, reason="objects are counted from 3.13 on (PyRefTracer)")
def test_objects_tables(browser, run_ulma, prog, tmp_path):
    n, k = 1000, 700
    _, page, report = traced_page(run_ulma, prog, tmp_path, "mem_objects.py", n, k, 500)
    browser.open(str(page))
    assert browser.errors() == []
    types = {r[1]: r[2:] for r in browser.js(ROWS % "objrows")}
    assert types["Point"] == [str(k), "0", str(k)]
    assert {t: [str(o["created"]), str(o["destroyed"])] for t, o in
            ((o["type"], o) for o in report["objects"][:50])} == {t: v[:2] for t, v in types.items()}
    per_func = {(r[1], r[2]): int(r[3]) for r in browser.js(ROWS % "fobjrows")}
    assert per_func[("make_points", "Point")] == k and per_func[("make_lists", "list")] == n


def test_bounded(browser, run_ulma, prog, tmp_path):
    _, page, report = traced_page(run_ulma, prog, tmp_path, "mem_many.py", 3000, 120)
    browser.open(str(page))
    assert browser.errors() == []
    data = browser.js("JSON.parse(document.getElementById('ulma-data').textContent)")["memory"]
    (series,) = data["series"]
    assert len(series["heap"]["t"]) <= 513 and max(series["heap"]["v"]) >= 70000
    assert len(browser.js(ROWS % "leakrows")) == 50
    assert data["leaks_left_out"] == report["leak_groups"] - 50 >= 70
    assert browser.js("document.getElementById('leaknote').textContent").startswith("50 stacks (%d smaller"
                                                                                      % data["leaks_left_out"])
    assert len(browser.js(ROWS % "peakrows")) <= 50



def test_chart_per_process(browser, run_ulma, prog, tmp_path):
    """programs/mem_two_procs.py: the parent holds 4 MiB, its forked child
    12 MiB more: the chart opens on the child, the peak's process, with the
    peak marked; choosing the parent draws its heap line, about 4 MiB high,
    and no peak mark."""
    _, page, report = traced_page(run_ulma, prog, tmp_path, "mem_two_procs.py", 4, 12)
    browser.open(str(page))
    assert browser.errors() == []
    pids = browser.js("Array.prototype.map.call(document.querySelectorAll('#memproc option'),"
                      " function (o) { return +o.value; })")
    assert len(pids) == 2 and pids[0] == report["peak_pid"], (pids, report["peak_pid"])
    assert report["peak_bytes"] >= 12 * 2**20
    assert browser.js("+document.getElementById('mempeak').getAttribute('data-pid')") == pids[0]
    browser.js("var s = document.getElementById('memproc'); s.value = '%d';"
               " s.dispatchEvent(new Event('change')); 0" % pids[1])
    assert browser.js("document.getElementById('mempeak')") is None
    top = browser.js("+document.querySelector('#memchart path[data-series=heap]').getAttribute('data-max')")
    assert 4 * 2**20 - 2**18 <= top < 5 * 2**20, top
    assert browser.errors() == []


def test_rss_line(browser, run_ulma, prog, tmp_path):
    """programs/mem_rss.py touches a 100 MiB bytearray in grow(), holds it
    0.2 s and frees it: the chart's RSS line rises by the bytearray over
    where it ends, less 1 MiB (the process's other pages come and go: CI
    saw the end 52 KiB above the start), the peak is the bytearray's, held
    by grow."""
    _, page, report = traced_page(run_ulma, prog, tmp_path, "mem_rss.py", 100, 0.2)
    browser.open(str(page))
    assert browser.errors() == []
    rss = browser.js("JSON.parse(document.getElementById('ulma-data').textContent).memory.series[0].rss.v")
    assert len(rss) >= 10 and max(rss) - rss[-1] >= 99 * 2**20, (len(rss), max(rss), rss[-1])
    drawn = browser.js("+document.querySelector('#memchart path[data-series=rss]').getAttribute('data-max')")
    assert drawn == max(rss)
    at_peak = browser.js(ROWS % "peakrows")
    assert at_peak[0][4].endswith("main \u2192 grow") and at_peak[0][0] >= 100 * 2**20, at_peak[0]
    assert report["peak_bytes"] >= 100 * 2**20


def test_sampled_says_so(browser, run_ulma, prog, tmp_path):
    """--memory=sample: the facts say the bytes are estimates, and the
    peak is the report's."""
    trace, page = tmp_path / "s.trace", tmp_path / "s.html"
    proc = run_ulma(["run", "--memory=sample:4K", "--no-live", "--summary", "none", "-o", str(trace),
                     prog("mem_known.py"), "200", "1000", "100", "8"])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert run_ulma(["report", str(trace), "--html", str(page)]).returncode == 0
    report = json.loads(run_ulma(["report", str(trace), "--format", "json"]).stdout)
    browser.open(str(page))
    assert browser.errors() == []
    assert browser.js("document.getElementById('memfacts').textContent").startswith(
        "sampled (one block every 4.0 KiB on average; bytes are estimates)")
    assert browser.js("+document.getElementById('mempeak').getAttribute('data-bytes')") == report["peak_bytes"]
