"""`ulma report TRACE --html OUT.html` (and `ulma export --format html`): a
self-contained HTML report, rendered by headless Chromium (Debian's
`chromium`, installed by scripts/ensure-deps.sh) with --dump-dom, which
returns the DOM after the page's script ran.

The page's script ran to its end; every function name is in the table as
text, including names made of markup, which did not become elements and
ran nothing; the page asks for no network resource; the embedded data is
aggregated (bounded timeline) and its figures are the report's.
"""
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from export_helpers import ODD_NAMES, export_trace, run_export  # noqa: F401

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.once("the HTML page in Chromium")


class Dom(HTMLParser):
    """Tags seen, text of each <td>, the <title>, attributes of <body>."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.cells, self.title, self.body = [], [], "", {}
        self._in = None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag in ("td", "title"):
            self._in = tag
            if tag == "td":
                self.cells.append("")
        if tag == "body":
            self.body = dict(attrs)

    def handle_endtag(self, tag):
        if tag == self._in:
            self._in = None

    def handle_data(self, data):
        if self._in == "td":
            self.cells[-1] += data
        elif self._in == "title":
            self.title += data


def dump_dom(path, tmp_path):
    """The markup of the page at path (a file, with a #fragment if wanted)
    after headless Chromium ran its script."""
    if CHROMIUM is None:
        pytest.skip("chromium not installed (scripts/ensure-deps.sh installs it)")
    profile = tmp_path / "chromium-profile"
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=%s" % profile,
         "--window-size=1200,900", "--dump-dom", "file://%s" % path],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    return proc.stdout.decode("utf-8")


def render(path, tmp_path):
    """The DOM of path after headless Chromium ran its script."""
    dom = Dom()
    dom.feed(dump_dom(path, tmp_path))
    return dom


def page_data(path):
    with open(str(path), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r'<script type="application/json" id="ulma-data">(.*?)</script>', text, re.S)
    assert m
    return text, json.loads(m.group(1))


@pytest.fixture(scope="module")
def odd(export_trace, run_ulma, tmp_path_factory):
    t = export_trace("odd_names.py")
    out = tmp_path_factory.mktemp("html") / "odd.html"
    proc = run_ulma(["report", t["trace"], "--html", str(out)])
    assert proc.returncode == 0, proc.stderr
    return dict(t, out=out)


def test_names_shown_as_text_and_nothing_injected(odd, tmp_path):
    dom = render(odd["out"], tmp_path)
    assert dom.body.get("data-ready") == "yes", "the page's script did not run to its end"
    for name in ODD_NAMES:
        assert name in dom.cells, (name, [c for c in dom.cells if "odd" not in c][:40])
    assert "pwned" not in dom.title
    assert dom.title == "ulma: %s" % odd["path"]
    # the only elements are the page's own: no <img>, no third <script>
    assert "img" not in dom.tags
    assert dom.tags.count("script") == 2


def test_self_contained(odd):
    text, data = page_data(odd["out"])
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:|//)", text)
    assert "@import" not in text and "<link" not in text and "url(" not in text
    # markup in names is escaped in the data, so it cannot close the element
    assert "<img" not in text and "<script>alert" not in text


def test_data_is_the_reports(export_trace, run_export, tmp_path):
    """fib_calls.py: per-function figures equal the report's; the call tree's
    root is the total self time; the timeline is bounded (218910 fib frames
    are more than it keeps) and keeps the long frames."""
    t = export_trace("fib_calls.py")
    out = tmp_path / "fib.html"
    run_export(t["trace"], "html", out)
    _, data = page_data(out)
    got = {(f[0], f[1], f[2]): (f[4], f[5], f[6]) for f in data["funcs"]}
    for f in t["report"]["functions"]:
        calls, self_ns, total_ns = got[(f["name"], f["file"], f["line"])]
        assert calls == f["calls"]
        assert abs(self_ns - f["self_ns"]) <= 10 + f["self_ns"] // 1000
        assert abs(total_ns - f["total_ns"]) <= 10 + f["total_ns"] // 1000
    tree = data["tree"]
    assert tree["t"][0] == sum(f[5] for f in data["funcs"])
    assert all(0 <= p < i for i, p in enumerate(tree["p"]) if i > 0)
    spans = sum(len(th["s"]) for th in data["threads"])
    assert 0 < spans <= 70000 and data["min_span_ns"] > 0
    (th,) = data["threads"]
    names = {data["funcs"][i][0] for i in th["f"]}
    assert {"main", "fib", "<module>"} <= names
    # spans in start order: each start less the previous one, and the duration
    assert all(d >= 0 for d in th["s"]) and all(e >= data["min_span_ns"] for e in th["e"])
    assert os.path.getsize(str(out)) < 5 * 1024 * 1024


def test_varied_renders(export_trace, run_export, tmp_path):
    t = export_trace("varied.py")
    out = tmp_path / "varied.html"
    run_export(t["trace"], "html", out)
    dom = render(out, tmp_path)
    assert dom.body.get("data-ready") == "yes"
    rows = len(dom.cells) // 8  # name, file:line, calls, total, self, self %, per call, the split bar
    assert rows == min(500, len({(f["name"], f["file"], f["line"]) for f in t["report"]["functions"]}))
    top = max(t["report"]["functions"], key=lambda f: f["self_ns"])
    assert dom.cells[0] == top["name"]  # sorted by self time, descending
    assert dom.tags.count("canvas") == 6  # flame graph, timeline, the sandwich's two halves, the memory flame graphs
