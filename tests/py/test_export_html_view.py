"""The HTML report as a user meets it, in headless Chromium driven over the
DevTools protocol (html_browser.py): real clicks, wheel turns and typing,
and what the views then show read back from the page (its `ulmaReport`
object, the DOM, the canvas's pixels).

programs/html_demo.py gives the known answers: two threads named worker-0
and worker-1 (ulma.thread_name), a forked child, caller_a and caller_b
both calling helper, which calls spin; nap sleeping in time.sleep; depth
recursing 45 deep.  Screenshots go to the test's tmp dir (the artifacts),
named after what they show.  No timing is asserted.
"""
import json

import pytest

import html_browser
from export_helpers import export_trace, run_export  # noqa: F401

pytestmark = [
    pytest.mark.skipif(html_browser.CHROMIUM is None,
                       reason="chromium not installed (scripts/ensure-deps.sh installs it)"),
    pytest.mark.once("the HTML page in Chromium: it shows the JSON report, whichever Python made the trace"),
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = html_browser.Browser(str(tmp_path_factory.mktemp("chromium-profile")))
    yield b
    b.close()


@pytest.fixture(scope="module")
def demo(export_trace, run_ulma, tmp_path_factory):  # noqa: F811
    """The demo's trace, its JSON report (corrected, as the page) and its page."""
    t = export_trace("html_demo.py")
    out = tmp_path_factory.mktemp("html-view") / "demo.html"
    proc = run_ulma(["report", t["trace"], "--html", str(out)])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    proc = run_ulma(["report", t["trace"], "--format", "json"])
    assert proc.returncode == 0
    return {"trace": t["trace"], "report": json.loads(proc.stdout), "page": str(out), "dir": out.parent}


@pytest.fixture
def page(browser, demo):
    browser.open(demo["page"])
    assert browser.errors() == []
    return browser


def row_of(b, name):
    """The function table's row index (data-row) of the function called name."""
    return b.js("D_rows = Array.prototype.map.call(document.querySelectorAll('#rows tr'), function (tr) {"
                " return [tr.children[0].textContent, +tr.getAttribute('data-row')]; });"
                " (D_rows.filter(function (r) { return r[0] === %s; })[0] || [null, -1])[1]" % json.dumps(name))


def func(report, name):
    return next(f for f in report["functions"] if f["name"] == name)


def test_split_bar_is_the_reports(page, demo):
    """Each function's bar: its self time split as `ulma report` splits it
    (on-CPU, waiting for a CPU, blocked, GIL), callees pale; time.sleep is
    blocked, spin less so, and their bars' widths are the data's shares."""
    data = page.js("JSON.parse(document.getElementById('ulma-data').textContent)")
    rep = demo["report"]
    assert data["has"]["split"] is rep["time_split"] and data["has"]["gil"] is rep["gil_split"]
    if not rep["time_split"] or not rep["gil_split"]:
        pytest.skip("this machine gives no on/off-CPU split")
    rows = {f[0]: k for k, f in enumerate(data["funcs"])}
    for name in ("time.sleep", "spin"):
        f, x = func(rep, name), data["fx"][rows[name]]
        assert x[0] == f["on_cpu_ns"] and x[1] == f["runnable_ns"] and x[2] == f["blocked_ns"]
        assert x[4] == f["total_on_cpu_ns"] and x[6] == f["total_blocked_ns"]
    parts = page.js("(function () { var out = {}; Array.prototype.forEach.call(document.querySelectorAll('#rows tr'),"
                    " function (tr) { var p = {}; Array.prototype.forEach.call(tr.querySelectorAll('.fbar i'),"
                    " function (i) { p[i.getAttribute('data-part')] = parseFloat(i.style.width); });"
                    " out[tr.children[0].textContent] = p; }); return out; })()")
    sleep, spin = parts["time.sleep"], parts["spin"]
    # six naps of 50 ms: asleep, off the CPU; after each it waits for the
    # GIL the spinner holds, up to a switch interval (5 ms), longer when the
    # machine is loaded (11% of the naps' time once, in a busy suite)
    assert sleep.get("self blocked", 0) + sleep.get("self GIL", 0) > 90
    assert sleep.get("self blocked", 0) > 75
    # it spins: on a CPU, or waiting for one or for the GIL.  Not "mostly not
    # blocked": a GIL wait the monitor did not see in progress takes its
    # thread's latest reason, which after a worker's nap is "blocked", and a
    # monitor starved of CPU sees fewer (docs/time-split.md, "Error": up to
    # 29% of spin's time under load 16, and more under more; 2% without the
    # naps).  Its time on a CPU or waiting for one keeps it below the sleep's.
    assert spin.get("self blocked", 0) < sleep.get("self blocked", 0)
    # the widths are the data's shares: spin has no callees, so its self split is its whole bar
    x = data["fx"][rows["spin"]]
    whole = x[0] + x[1] + x[2]
    want = {"self on-CPU": x[0], "self waiting for a CPU": x[1], "self blocked": x[2] - x[3], "self GIL": x[3]}
    for part, v in want.items():
        assert spin.get(part, 0) == pytest.approx(100.0 * v / whole, abs=0.01)
    # a caller's bar is mostly its callees' (pale)
    worker = parts["worker"]
    assert sum(v for k, v in worker.items() if k.startswith("callees")) > 90
    page.screenshot(demo["dir"] / "split-bars.png")


def test_short_paths_full_on_hover(page, demo):
    """Paths relative to the program's directory, the standard library
    abbreviated; the full path in the cell's title."""
    cells = page.js("Array.prototype.map.call(document.querySelectorAll('#rows tr'), function (tr) {"
                    " return [tr.children[0].textContent, tr.children[1].textContent, tr.children[1].title]; })")
    by = {c[0]: c for c in cells}
    spin = func(demo["report"], "spin")
    assert by["spin"][1] == "html_demo.py:%d" % spin["line"]
    assert by["spin"][2] == "%s:%d" % (spin["file"], spin["line"])
    threading_rows = [c for c in cells if "/threading.py:" in c[2]]  # Thread._bootstrap and the like
    assert threading_rows
    for _, short, full in threading_rows:
        assert short.startswith("stdlib/threading.py:") and full.startswith("/") and full.endswith(short[7:])


def test_flame_scope_per_thread_process_and_merged(page, demo):
    """The scope menu lists the merged view, each process and each thread by
    its Python name; choosing a thread draws only its frames."""
    options = page.js("Array.prototype.map.call(document.querySelectorAll('#fgscope option'), function (o) {"
                      " return o.textContent; })")
    assert options[0] == "all threads, merged"
    assert sum(o.endswith("(all its threads)") for o in options) == 2  # the program and its forked child
    workers = [o for o in options if o.startswith("worker-")]
    assert len(workers) == 2
    merged = {b[0].split(" (")[0] for b in page.js("ulmaReport.flame('flame')")}
    assert {"worker", "depth", "caller_b"} <= merged
    page.js("var s = document.getElementById('fgscope'); s.value = String(%d);"
            " s.dispatchEvent(new Event('change'))" % options.index(workers[0]))
    boxes = page.js("ulmaReport.flame('flame')")
    assert boxes[0][0].startswith(workers[0])  # the root names the thread
    names = {b[0].split(" (")[0] for b in boxes[1:]}
    assert "worker" in names and "nap" in names and "depth" not in names
    page.screenshot(demo["dir"] / "flame-thread.png")


def test_inverted_view(page, demo):
    """The inverted view puts the functions with self time first: its first
    row holds time.sleep and spin, the widest being the function with the
    most self time."""
    x, y = page.center("#fgview button[data-view=inverted]")
    page.click(x, y)
    boxes = page.js("ulmaReport.flame('flame')")
    assert boxes[0][0].startswith("all self time")
    first = {b[0].split(" (")[0]: b[3] for b in boxes if b[2] == 18}
    assert {"time.sleep", "spin"} <= set(first)
    funcs = page.js("JSON.parse(document.getElementById('ulma-data').textContent).funcs")
    most = max(funcs, key=lambda f: f[5])[0]
    assert max(first, key=first.get) == most  # the widest is the function with the most self time
    page.screenshot(demo["dir"] / "flame-inverted.png")


def test_callers_callees_and_sandwich(page, demo):
    """A click on helper's row: its callers are caller_a (6 calls: 3 per
    worker) and caller_b (7: 3 per worker and 1 in the child), its callee
    spin; the sandwich draws them; a click on a caller goes to it."""
    assert page.js("document.getElementById('detail').hidden") is True
    page.click_on("#rows tr[data-row='%d'] td" % row_of(page, "helper"))
    assert page.js("document.getElementById('detail').hidden") is False
    table = "Array.prototype.map.call(document.querySelectorAll('#%s tbody tr'), function (tr) {" \
            " return Array.prototype.map.call(tr.children, function (td) { return td.textContent; }); })"
    callers = {r[0].split(" (")[0]: int(r[1]) for r in page.js(table % "callers")}
    assert callers == {"caller_a": 6, "caller_b": 7}
    callees = {r[0].split(" (")[0]: int(r[1]) for r in page.js(table % "callees")}
    assert callees == {"spin": 13}
    up = {b[0].split(" (")[0] for b in page.js("ulmaReport.flame('sandup')")}
    down = {b[0].split(" (")[0] for b in page.js("ulmaReport.flame('sanddown')")}
    assert {"helper", "caller_a", "caller_b", "worker"} <= up and "spin" not in up
    assert {"helper", "spin"} <= down and "caller_a" not in down
    page.screenshot(demo["dir"] / "callers-callees.png")
    page.click_on("#callers tbody tr:first-child td")
    assert page.js("document.getElementById('dname').textContent").startswith("caller_")


def view(b):
    return b.js("ulmaReport.timeline()")


def test_timeline_zoom_wheel_and_labels(page, demo):
    """Buttons zoom; ctrl + wheel zooms; the plain wheel does not zoom and
    is left to the page (never prevented); zoom goes down to 10 ns; a frame
    begun left of the view keeps its label, drawn at the view's edge."""
    page.js("window.lastWheel = null; window.addEventListener('wheel', function (e) {"
            " window.lastWheel = e.defaultPrevented; })")
    whole = view(page)
    assert whole["v0"] == 0 and whole["frames"] > 0
    page.click_on("#tlin")
    half = view(page)
    assert half["v1"] - half["v0"] == pytest.approx((whole["v1"] - whole["v0"]) / 2)
    # the timeline at the bottom of the window, its lanes scrolled to their top: a wheel turn up scrolls the page
    page.js("document.getElementById('tlwrap').scrollTop = 0;"
            " document.getElementById('timeline').scrollIntoView({block: 'end'})")
    x, y0, w, h = page.rect("#timeline")
    before = page.js("window.scrollY")
    assert before > 300
    page.wheel(x + w / 2, y0 + 60, -200)
    assert page.js("window.lastWheel") is False
    page.js("new Promise(function (r) { setTimeout(r, 500); })")
    after = view(page)
    assert (after["v0"], after["v1"]) == (half["v0"], half["v1"])  # no zoom
    assert page.js("window.scrollY") < before  # the page scrolled
    x, y0, w, h = page.rect("#timeline")
    page.wheel(x + w / 2, y0 + 60, -100, modifiers=2)  # ctrl
    zoomed = view(page)
    assert zoomed["v1"] - zoomed["v0"] < half["v1"] - half["v0"]
    page.wheel(x + w / 2, y0 + 60, -100, modifiers=8)  # shift
    assert view(page)["v1"] - view(page)["v0"] < zoomed["v1"] - zoomed["v0"]
    for _ in range(60):
        page.js("document.getElementById('tlin').click()")
    finest = view(page)
    assert finest["v1"] - finest["v0"] == pytest.approx(10)
    # a window inside main's frame: main starts left of it, and its label is drawn from the left edge
    page.js("document.getElementById('tlreset').click()")
    page.js("document.getElementById('tlwrap').scrollTop = 0")  # the main thread's lane in view
    for _ in range(3):  # the middle eighth: main and its callers began before it
        page.js("document.getElementById('tlin').click()")
    clipped = view(page)["clipped"]
    assert clipped, ("some frame starts left of a zoomed view", view(page), page.js("document.getElementById('tlwrap').scrollTop"))
    dark = page.js("(function () { var c = document.getElementById('timeline'), g = c.getContext('2d'),"
                   " r = window.devicePixelRatio || 1, y = %d; var px = g.getImageData(0, y * r, 40 * r, 11 * r).data, n = 0;"
                   " for (var k = 0; k < px.length; k += 4) if (px[k] < 90 && px[k + 1] < 90 && px[k + 2] < 90) n++;"
                   " return n; })()" % (clipped[0][1] - page.js("document.getElementById('tlwrap').scrollTop")))
    assert dark > 5, "the label of %s is drawn at the view's left edge" % clipped[0][0]
    page.screenshot(demo["dir"] / "timeline-zoomed.png")


def test_search_redraws_everything(page, demo):
    """Typing in the search box outlines matching frames in the flame graph
    and the timeline at once, and filters the table; clearing it undoes all."""
    assert view(page)["found"] == 0
    page.type_text("#search", "spin")
    page.js("document.getElementById('search').dispatchEvent(new Event('input'))")
    assert view(page)["found"] > 0
    assert any(b[4] for b in page.js("ulmaReport.flame('flame')"))
    names = page.js("Array.prototype.map.call(document.querySelectorAll('#rows tr'), function (tr) {"
                    " return tr.children[0].textContent; })")
    assert "spin" in names and "nap" not in names
    page.screenshot(demo["dir"] / "search.png")
    page.js("var s = document.getElementById('search'); s.value = ''; s.dispatchEvent(new Event('input'))")
    assert view(page)["found"] == 0


def test_timeline_groups_threads_by_process_with_names(page, demo):
    """Lanes: the program's process with its three threads (MainThread,
    worker-0, worker-1), then the child; a click on a lane's name (not on
    its frames) closes it to one row."""
    lanes = view(page)["lanes"]
    names = [l[0] for l in lanes]
    assert sum(n.startswith("worker-") for n in names) == 2 and sum(n.startswith("MainThread") for n in names) == 2
    pids = [l[3] for l in lanes]
    assert pids == sorted(pids, key=pids.index)  # each process's threads together
    deepest = max(l[2] for l in lanes)
    assert deepest > 40  # no depth cap: main recurses 45 deep
    assert view(page)["height"] <= 620
    # a click on a lane's name closes it to one row; a click on its frames does not
    worker = next(l for l in lanes if l[0].startswith("worker-"))
    page.js("document.getElementById('timeline').scrollIntoView({block: 'start'});"
            " document.getElementById('tlwrap').scrollTop = %d" % (worker[4] - 40))
    page.js("new Promise(function (r) { setTimeout(r, 100); })")
    worker = next(l for l in view(page)["lanes"] if l[0] == worker[0])  # its place now
    x, top, w, _ = page.rect("#timeline")
    page.click(x + 200, top + worker[4] + 20)  # on its frames
    assert next(l for l in view(page)["lanes"] if l[0] == worker[0])[1] is True
    page.click(x + 60, top + worker[4] + 4)  # on its name
    closed = next(l for l in view(page)["lanes"] if l[0] == worker[0])
    assert closed[1] is False and closed[2] == 1


def test_many_threads_stay_sane(browser, run_ulma, tmp_path):
    """121 threads: the canvas stays at most 620 px tall (the lanes scroll
    inside it), and only the busiest 8 lanes start open."""
    prog = tmp_path / "threads121.py"
    prog.write_text("import threading\n\ndef work(n):\n    return sum(range(n))\n\n"
                    "ts = [threading.Thread(target=work, args=(1000 * k,)) for k in range(120)]\n"
                    "for t in ts:\n    t.start()\nfor t in ts:\n    t.join()\n")
    trace, out = tmp_path / "t.trace", tmp_path / "t.html"
    assert run_ulma(["run", "--summary", "none", "-o", str(trace), str(prog)]).returncode == 0
    assert run_ulma(["report", str(trace), "--html", str(out)]).returncode == 0
    browser.open(str(out))
    assert browser.errors() == []
    v = browser.js("ulmaReport.timeline()")
    assert len(v["lanes"]) == 121
    assert v["height"] <= 620
    assert sum(1 for l in v["lanes"] if l[1]) == 8
    browser.js("document.getElementById('tlexpand').click()")
    v = browser.js("ulmaReport.timeline()")
    assert all(l[1] for l in v["lanes"]) and v["height"] <= 620
    assert browser.js("document.getElementById('tlspace').offsetHeight") > 1000  # scrolls instead
    browser.screenshot(tmp_path / "threads121.png")


def test_lines_with_allocations(browser, prog, run_ulma, tmp_path):
    """With --lines and --memory the Lines view has an "allocated" column:
    each line's bytes as `ulma report` counts them (the list's 800000 bytes
    of pointers, make_bytes's 300000 bytes under the line that calls it),
    and the function table a column of bytes allocated per function."""
    path = prog("lines_alloc.py")
    trace, out = tmp_path / "t.trace", tmp_path / "t.html"
    assert run_ulma(["run", "--no-live", "--summary", "none", "--memory", "--lines", "work", "-o", str(trace),
                     path]).returncode == 0
    rep = json.loads(run_ulma(["report", str(trace), "--format", "json"]).stdout)
    want = {r["line"]: r["alloc_bytes"] for f in rep["functions"] if f["name"] == "work" for r in f["lines"]}
    assert run_ulma(["report", str(trace), "--html", str(out)]).returncode == 0
    browser.open(str(out))
    assert browser.errors() == []
    data = browser.js("JSON.parse(document.getElementById('ulma-data').textContent)")
    assert data["has"]["memory"] is True and data["lines"]["memory"] is True
    (work,) = [f for f in data["lines"]["funcs"] if f["name"] == "work"]
    assert {r[0]: r[10] for r in work["rows"]} == want
    assert max(want.values()) >= 800000
    head = browser.js("Array.prototype.map.call(document.querySelectorAll('#linethead th'), function (th) {"
                      " return th.textContent; })")
    assert head[5] == "allocated"
    cells = browser.js("Array.prototype.map.call(document.querySelectorAll('#linerows tr[data-line]'), function (tr) {"
                       " return [+tr.getAttribute('data-line'), tr.children[5].textContent]; })")
    big = max(want, key=want.get)
    assert dict(cells)[big].endswith("KiB") and float(dict(cells)[big].split()[0]) * 1024 >= 0.99 * want[big]
    heads = browser.js("Array.prototype.map.call(document.querySelectorAll('#head th'), function (th) {"
                       " return th.textContent; })")
    assert heads[-1].startswith("allocated")
    browser.screenshot(tmp_path / "lines-memory.png")


def test_bounded_on_bad_input(browser, run_ulma, tmp_path):
    """A hand-made trace with 10000 functions called once each (names with
    control characters and right-to-left overrides among them) and a
    100,000-deep recursion: the page stays under 5 MB with valid data (4000
    function rows and how many were left out, a tree of at most 20001 nodes
    that keeps the recursion's outer levels), loads without an error, and
    its flame graph stays at most 200 levels deep below the focus."""
    from trace_builder import trace

    names = ["main", "deep"] + ["f%d\x01\u202e%d" % (k, k) for k in range(10000)]
    events, t = [(0, "enter", 1)], 1
    for k in range(10000):
        events += [(t, "enter", 3 + k), (t + 5 + k % 7, "exit")]
        t += 20
    for _ in range(100000):
        events.append((t, "enter", 2))
        t += 1
    for _ in range(100000):
        events.append((t, "exit"))
        t += 1
    events.append((t, "exit"))
    path, out = tmp_path / "bad.trace", tmp_path / "bad.html"
    path.write_bytes(trace(0, 0, t + 1, t + 1, events, func_names=names))
    proc = run_ulma(["report", str(path), "--html", str(out)])
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size < 5 * 1024 * 1024
    browser.open(str(out))
    assert browser.errors() == []
    rows, left_out, nodes, deep_nodes = browser.js(
        "(function () { var D = JSON.parse(document.getElementById('ulma-data').textContent), deep = -1;"
        " D.funcs.forEach(function (f, k) { if (f[0] === 'deep') deep = k; });"
        " return [D.funcs.length, D.funcs_left_out, D.tree.f.length,"
        " D.tree.f.filter(function (f) { return f === deep; }).length]; })()")
    assert rows == 4000 and left_out == 10002 - 4000
    assert nodes <= 20001
    assert deep_nodes >= 19000  # the recursion's outer levels
    assert browser.js("Math.max.apply(null, ulmaReport.flame('flame').map(function (b) { return b[2]; }))") <= 200 * 18
    # the names are text: a control character and an override are in the table as they are
    assert browser.js("document.getElementById('funcnote').textContent").startswith("6002 more functions")
    browser.screenshot(tmp_path / "bad-input.png")


def test_window_export_opens_on_the_window(browser, demo, run_ulma, tmp_path):
    """The command the page suggests for frames under its threshold, `ulma
    export --format html --from A --to B`, gives a page whose timeline opens
    on that window."""
    out = tmp_path / "window.html"
    proc = run_ulma(["export", demo["trace"], "--format", "html", "--from", "100ms", "--to", "120ms", "-o", str(out)])
    assert proc.returncode == 0, proc.stderr
    browser.open(str(out))
    assert browser.errors() == []
    v = browser.js("ulmaReport.timeline()")
    assert (v["v0"], v["v1"]) == (100000000, 120000000)
    browser.js("document.getElementById('tlout').click(); document.getElementById('tlreset').click()")
    v = browser.js("ulmaReport.timeline()")
    assert (v["v0"], v["v1"]) == (100000000, 120000000)


def test_ten_thousand_threads(browser, run_ulma, tmp_path):
    """10,000 threads (a hand-made trace): the page keeps 2000 lanes and
    says how many more there were, stays small, loads without an error, and
    its timeline canvas stays at most 620 px tall."""
    from trace_builder import threads_trace

    path, out = tmp_path / "threads.trace", tmp_path / "threads.html"
    path.write_bytes(threads_trace(10000))
    proc = run_ulma(["report", str(path), "--html", str(out)])
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size < 5 * 1024 * 1024
    browser.open(str(out))
    assert browser.errors() == []
    lanes, left_out = browser.js("(function () { var D = JSON.parse(document.getElementById('ulma-data').textContent);"
                                 " return [D.threads.length, D.threads_left_out]; })()")
    assert (lanes, left_out) == (2000, 8000)
    v = browser.js("ulmaReport.timeline()")
    assert len(v["lanes"]) == 2000 and v["height"] <= 620
    assert "8000 more threads not drawn" in browser.js("document.getElementById('tlnote').textContent")
    # the merged flame graph: the 2000 lanes' threads, 5 ns of work each
    boxes = browser.js("ulmaReport.flame('flame')")
    assert boxes[0][0] == "all threads, merged (10.0 \u00b5s)" and boxes[1][0].startswith("work")
