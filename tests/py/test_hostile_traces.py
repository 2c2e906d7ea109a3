"""Issue 18's bad input: every output of `ulma report`, `ulma export` and
`ulma diff` on a trace with a million functions, one with 10,000 threads,
one whose names and files hold control characters, escape sequences,
right-to-left text and overrides, markup and invalid UTF-8, and one with a
100,000-deep recursion, stays bounded and valid.

The traces are written by tests/native/hostile_trace.c with the real
trace writer.  Each command runs with its file size limited (RLIMIT_FSIZE)
to its bound, so an output that would blow up is stopped there:
- text for a terminal (report, diff): at most 64 KiB, and no character a
  terminal would act on;
- HTML pages: at most 5 MB (the issue's bound for the report);
- every other output: at most 400 bytes per event, function and thread of
  the trace, plus 1 MiB (linear in the trace: the JSON lists of every
  function take about 200 (report) and 280 (diff) bytes per function).
A format `ulma export --help` lists beyond these is checked for its bound
and exit status only.  Valid means read back by its reader: json.loads, pstats (for the million
functions only the file's first byte, a marshalled dict: loading it takes
marshal 10 s of CPU, most of this module's budget),
callgrind_annotate (a structural parse for the million functions: it takes
two minutes on them), babeltrace2 (the metadata and one stream per thread
for the 10,000 threads: it takes two minutes on them), Chromium for the
diff's page.

The binaries and traces are the same C whichever Python runs pytest, so
this module runs on one (3.12) to keep the suite's time.
"""
import json
import os
import pstats
import re
import resource
import shutil
import subprocess
import sys

import pytest

from conftest import base_env

pytestmark = pytest.mark.once("traces written by a C program, read by ulma's C reader and exporters")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXT_MAX = 64 * 1024
HTML_MAX = 5 * 1000 * 1000
SHAPES = {  # name: (generator arguments, events, functions, threads)
    "funcs": (["funcs", "1000000"], 2 * 1000000 + 2, 1000001, 1),
    "threads": (["threads", "10000"], 4 * 10000, 2, 10000),
    "names": (["names"], 2 + 4 * 13, 15, 1),
    "deep": (["deep", "100000"], 2 * 100000 + 2, 2, 1),
}
# terminal controls: C0 but tab-free newline, DEL, C1, line/paragraph separators, bidi embeddings and isolates
CONTROLS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    gen = str(d / "hostile_trace")
    cc = shutil.which("gcc") or shutil.which("cc")
    src = [os.path.join(ROOT, p) for p in ("tests/native/hostile_trace.c", "src/core/trace_writer.c",
                                           "src/core/crc32c.c", "src/core/safe_file.c")]
    proc = subprocess.run([cc, "-O2", "-std=c11", "-D_GNU_SOURCE", "-I", os.path.join(ROOT, "include"),
                           "-I", os.path.join(ROOT, "src"), "-o", gen] + src, stderr=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    out = {}
    for name, (args, _, _, _) in SHAPES.items():
        path = str(d / ("%s.trace" % name))
        proc = subprocess.run([gen] + args + [path], stderr=subprocess.PIPE)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        out[name] = path
    return out


def bound_of(shape, kind):
    if kind == "text":
        return TEXT_MAX
    if kind == "html":
        return HTML_MAX
    _, events, funcs, threads = SHAPES[shape]
    return 400 * (events + funcs + threads) + (1 << 20)


def run_capped(ulma_bin, args, stdout_path, bound, cwd):
    """ulma ARGS with stdout into stdout_path and every file capped at bound bytes."""

    def cap():
        resource.setrlimit(resource.RLIMIT_FSIZE, (bound + 1, bound + 1))

    with open(stdout_path, "wb") as out:
        return subprocess.run([ulma_bin] + args, stdout=out, stderr=subprocess.PIPE, cwd=cwd, env=base_env(),
                              preexec_fn=cap, timeout=120)


# output: (argument list after the trace, kind of bound, file written (None: stdout), check)
OUTPUTS = {
    "report-text": (["report", "{t}"], "text", None, "text"),
    "report-json": (["report", "{t}", "--format", "json"], "data", None, "report-json"),
    "report-lines": (["report", "{t}", "--lines"], "text", None, "lines"),
    "report-html": (["report", "{t}", "--html", "{o}"], "html", "out.html", "html"),
    "export-pstats": (["export", "{t}", "-f", "pstats", "-o", "{o}"], "data", "out.pstats", "pstats"),
    "export-folded": (["export", "{t}", "-f", "folded", "-o", "{o}"], "data", "out.folded", "folded"),
    "export-chrome": (["export", "{t}", "-f", "chrome", "-o", "{o}"], "data", "out.json", "chrome"),
    "export-speedscope": (["export", "{t}", "-f", "speedscope", "-o", "{o}"], "data", "out.json", "speedscope"),
    "export-callgrind": (["export", "{t}", "-f", "callgrind", "-o", "{o}"], "data", "callgrind.out", "callgrind"),
    "export-ctf": (["export", "{t}", "-f", "ctf", "-o", "{o}"], "data", "ctf", "ctf"),
    "export-html": (["export", "{t}", "-f", "html", "-o", "{o}"], "html", "out.html", "html"),
    "diff-text": (["diff", "{t}", "{t}"], "text", None, "text"),
    "diff-json": (["diff", "{t}", "{t}", "--format", "json"], "data", None, "diff-json"),
    "diff-html": (["diff", "{t}", "{t}", "--html", "{o}"], "html", "out.html", "diff-html"),
}


def export_formats():
    """The formats `ulma export --help` lists: one added later is checked for its bound (and exit status)."""
    ulma = os.path.join(os.path.dirname(sys.executable), "ulma")
    try:
        text = subprocess.run([ulma, "export", "--help"], stdout=subprocess.PIPE, timeout=60).stdout.decode()
    except OSError:
        return []
    listed = text.split("one of:", 1)[-1].split("-o, --output", 1)[0]
    return re.findall(r"^\s{20,}(\S+)\s", listed, re.M)


for _fmt in export_formats():
    OUTPUTS.setdefault("export-" + _fmt, (["export", "{t}", "-f", _fmt, "-o", "{o}"], "data", "out." + _fmt, "any"))


def cases():
    for shape in SHAPES:
        for output in OUTPUTS:
            yield pytest.param(shape, output, id="%s-%s" % (shape, output))


def check_text(data, shape):
    text = data.decode("utf-8")  # invalid UTF-8 never reaches a terminal
    assert not CONTROLS.search(text), repr(CONTROLS.search(text).group())
    if shape == "names":
        assert "rtl hebrew" in text


def check(kind, path, stdout, shape, tmp_path):
    if kind == "any":
        assert os.path.exists(path)  # a format this test does not know: bounded, and written without error
    elif kind == "text":
        check_text(stdout, shape)
    elif kind == "lines":
        pass  # refused with its message (no lines recorded): checked by the caller's exit status
    elif kind == "report-json":
        data = json.loads(stdout)
        assert len(data["functions"]) == SHAPES[shape][2] - (1 if shape == "names" else 0)  # the mark is no function
        assert data["threads"] == SHAPES[shape][3]
    elif kind == "diff-json":
        data = json.loads(stdout)
        assert all(f["in"] == "both" and f["delta_total_ns"] == 0 for f in data["functions"])
        assert len(data["functions"]) == SHAPES[shape][2] - (1 if shape == "names" else 0)
    elif kind == "chrome":
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        assert sum(1 for e in data["traceEvents"] if e.get("ph") in ("X", "B")) == (SHAPES[shape][1] - 0) // 2
    elif kind == "speedscope":
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        assert len(data["profiles"]) == SHAPES[shape][3]
    elif kind == "pstats" and shape == "funcs":  # loading it takes marshal 10 s of CPU: its shape only
        with open(path, "rb") as f:
            assert f.read(1)[0] & 0x7F == ord("{")  # a marshalled dict (its reference flag aside)
    elif kind == "pstats":
        stats = pstats.Stats(path).stats
        assert len(stats) == SHAPES[shape][2] - (1 if shape == "names" else 0)
    elif kind == "folded":
        with open(path, encoding="utf-8") as f:
            for line in f:
                assert re.match(r"^.+ \d+\n$", line), line[:200]
    elif kind == "callgrind":
        if shape == "funcs":
            with open(path, encoding="utf-8") as f:
                text = f.read()
            assert text.startswith("# callgrind format") or "events:" in text
            assert text.count("\nfn=") >= SHAPES[shape][2]
        else:
            proc = subprocess.run(["callgrind_annotate", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    elif kind == "ctf" and shape == "threads":  # babeltrace2 takes two minutes on 10,000 streams
        streams = [n for n in os.listdir(path) if n != "metadata"]
        assert len(streams) == SHAPES[shape][3]
        with open(os.path.join(path, "metadata"), encoding="utf-8") as f:
            assert f.read().startswith("/* CTF 1.8 */")
    elif kind == "ctf":
        proc = subprocess.run(["babeltrace2", "-o", "dummy", path], stderr=subprocess.PIPE)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    elif kind in ("html", "diff-html"):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        data = re.search(r'<script type="application/json" id="ulma-(?:diff-)?data">(.*?)</script>', text, re.S)
        json.loads(data.group(1))
        if kind == "diff-html" and shape == "names":
            from test_export_html import dump_dom
            dom = dump_dom(path, tmp_path)
            assert dom.count("<script") == 2, "a name became markup"
            assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in dom


@pytest.mark.parametrize("shape,output", list(cases()))
def test_output_bounded_and_valid(traces, ulma_bin, tmp_path, shape, output):
    args, bound_kind, target, kind = OUTPUTS[output]
    target_path = str(tmp_path / target) if target else None
    argv = [a.format(t=traces[shape], o=target_path) for a in args]
    bound = bound_of(shape, bound_kind)
    stdout_path = str(tmp_path / "stdout")
    proc = run_capped(ulma_bin, argv, stdout_path, bound, str(tmp_path))
    stderr = proc.stderr.decode(errors="replace")
    if kind == "lines":
        assert proc.returncode == 1 and "has no lines" in stderr, stderr
        return
    assert proc.returncode == 0, "exit %d (a negative one is the signal: SIGXFSZ past %d bytes): %s" % (
        proc.returncode, bound, stderr[-2000:])
    assert stderr == "", stderr
    with open(stdout_path, "rb") as f:
        stdout = f.read()
    if target:
        size = sum(os.path.getsize(os.path.join(dp, n)) for dp, _, ns in os.walk(target_path) for n in ns) \
            if os.path.isdir(target_path) else os.path.getsize(target_path)
        assert size <= bound, (size, bound)
    assert len(stdout) <= (bound if not target else bound_of(shape, "text"))
    check(kind, target_path, stdout, shape, tmp_path)
