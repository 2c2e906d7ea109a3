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
- programs/mem_objects.py (3.13+): K Points created and none destroyed,
  N lists created in make_lists, in the objects tables.
- programs/mem_many.py: thousands of counter values and 120 leaking
  stacks give at most 513 points a line and 50 rows a table, with the
  count of the rest.
- programs/mem_two_procs.py: a chart per process, the peak's first.
- programs/mem_rss.py: the RSS line rises by the 100 MiB grow() touched.
- --memory=sample: the page says its bytes are estimates.
"""
import json
import sys

import pytest

import html_browser

pytestmark = pytest.mark.skipif(html_browser.CHROMIUM is None,
                                reason="chromium not installed (scripts/ensure-deps.sh installs it)")
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
