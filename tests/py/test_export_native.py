"""Native frames, zones and marks in the exports, on a real C program.

tests/native/api_prog.c is compiled with gcc -finstrument-functions
against the headers and libulma_rt.so the installed package ships, run
under `ulma run`, and exported.  Its known answers: leaf() runs 1000
times inside the zone "work" (10 zones, one per step()) and once inside
the zone "tail"; three "checkpoint" instants; the counter "queue" takes
the values 0, 1.5, ..., 13.5, each inside a "work" zone; the thread is
named "main-loop".

Native functions are named by address until the symbol resolver lands,
so nothing here depends on their names: leaf is the native function with
1001 frames.  Checked with each format's own reader: json for chrome,
speedscope and the HTML report's data, babeltrace2 for ctf (skipped
without it), pstats.Stats for pstats, otf2-print and otf2-marker for otf2.
"""
import json
import os
import pstats
import re
import shutil
import subprocess

import pytest

import ulma

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(os.path.dirname(HERE), "native", "api_prog.c")
QUEUE = [k * 1.5 for k in range(10)]

pytestmark = [
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed"),
    pytest.mark.once("a C program under ulma run, and the exports (C) of its trace"),
]


@pytest.fixture(scope="module")
def native(run_ulma, tmp_path_factory):
    """{"dir", "trace"}: api_prog built and traced once."""
    pkg = os.path.dirname(ulma.__file__)
    d = tmp_path_factory.mktemp("native")
    exe = str(d / "api_prog")
    cc = subprocess.run(
        ["gcc", "-O1", "-g", "-finstrument-functions", "-I", os.path.join(pkg, "include"), SOURCE, "-o", exe,
         "-L", pkg, "-lulma_rt", "-Wl,-rpath," + pkg],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert cc.returncode == 0, cc.stderr.decode(errors="replace")
    trace = str(d / "api.trace")
    proc = run_ulma(["run", "--lossless", "--summary", "none", "-o", trace, exe])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert proc.stdout.startswith(b"done "), proc.stdout
    return {"dir": d, "trace": trace}


def export(run_ulma, native, fmt, name, *extra):
    out = str(native["dir"] / name)
    proc = run_ulma(["export", native["trace"], "--format", fmt, "-o", out] + list(extra))
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return out


def inside(t, spans, slack=0.0015):
    """Whether time t (us) lies in one of spans [(ts, end)] (3-decimal us, rounded)."""
    return any(a - slack <= t <= b + slack for a, b in spans)


@pytest.fixture(scope="module")
def chrome(run_ulma, native):
    with open(export(run_ulma, native, "chrome", "api.json"), encoding="utf-8") as f:
        return json.load(f)["traceEvents"]


def test_chrome_frames(chrome):
    x = [e for e in chrome if e["ph"] == "X"]
    assert {e["cat"] for e in x} == {"native", "zone"}, "a C program has no Python or builtin frames"
    zones = [e for e in x if e["cat"] == "zone"]
    assert sorted(e["name"] for e in zones) == ["tail"] + ["work"] * 10
    for e in zones:  # a zone has the file and line of its macro
        file, _, line = e["args"]["loc"].rpartition(":")
        assert file.endswith("api_prog.c") and int(line) == (17 if e["name"] == "work" else 31), e
    per_name = {}
    for e in x:
        if e["cat"] == "native":
            per_name.setdefault(e["name"], []).append(e)
    leaf = [evs for evs in per_name.values() if len(evs) == 1001]
    assert len(leaf) == 1, {k: len(v) for k, v in per_name.items()}
    work = [(e["ts"], e["ts"] + e["dur"]) for e in zones if e["name"] == "work"]
    tail = [(e["ts"], e["ts"] + e["dur"]) for e in zones if e["name"] == "tail"]
    in_work = sum(inside(e["ts"], work) and inside(e["ts"] + e["dur"], work) for e in leaf[0])
    in_tail = sum(inside(e["ts"], tail) and inside(e["ts"] + e["dur"], tail) for e in leaf[0])
    assert (in_work, in_tail) == (1000, 1)


def test_chrome_marks(chrome):
    instants = [e for e in chrome if e["ph"] == "i"]
    assert len(instants) == 3
    assert all(e["name"] == "checkpoint" and e["s"] == "t" for e in instants)
    counters = sorted((e for e in chrome if e["ph"] == "C"), key=lambda e: e["ts"])
    assert [e["name"] for e in counters] == ["queue"] * 10
    assert [e["args"]["queue"] for e in counters] == QUEUE
    work = [(e["ts"], e["ts"] + e["dur"]) for e in chrome if e["ph"] == "X" and e["name"] == "work"]
    assert all(inside(e["ts"], work) for e in counters), "each value is set inside its step's zone"
    x = [e for e in chrome if e["ph"] == "X"]
    outer = max(x, key=lambda e: e["dur"])  # main
    assert all(outer["ts"] <= e["ts"] <= outer["ts"] + outer["dur"] + 0.0015 for e in instants)
    assert {e["pid"] for e in counters} == {outer["pid"]} and {e["tid"] for e in instants} == {outer["tid"]}
    names = [e["args"]["name"] for e in chrome if e["ph"] == "M" and e["name"] == "thread_name"]
    assert names == ["main-loop"]


def test_speedscope(run_ulma, native):
    with open(export(run_ulma, native, "speedscope", "api.speedscope.json"), encoding="utf-8") as f:
        data = json.load(f)
    frames = data["shared"]["frames"]
    work = [fr for fr in frames if fr["name"] == "work [zone]"]
    assert len(work) == 1 and work[0]["file"].endswith("api_prog.c") and work[0]["line"] == 17
    native_frames = [fr for fr in frames if fr["name"].endswith(" [native]")]
    assert len(native_frames) == 3, frames  # main, step, leaf
    assert all(set(fr) == {"name"} or fr["line"] > 0 for fr in native_frames), "a file only where it is known"
    (profile,) = data["profiles"]
    assert "main-loop" in profile["name"]
    opens = {}
    for ev in profile["events"]:
        if ev["type"] == "O":
            opens[ev["frame"]] = opens.get(ev["frame"], 0) + 1
    assert sorted(opens.values()) == [1, 1, 10, 10, 1001]


def test_pstats(run_ulma, native):
    st = pstats.Stats(export(run_ulma, native, "pstats", "api.pstats"))
    by_calls = {}
    for (file, line, name), (cc, nc, tt, ct, callers) in st.stats.items():
        by_calls.setdefault(nc, []).append((file, line, name))
    (leaf,) = by_calls[1001]
    # ('~', 0, name) without debug information; the file and line once the resolver gives them
    assert leaf[:2] == ("~", 0) or (leaf[0].endswith("api_prog.c") and leaf[1] > 0), leaf
    work = [k for k in by_calls[10] if k[2] == "work"]
    assert len(work) == 1 and work[0][0].endswith("api_prog.c") and work[0][1] == 17
    callers = st.stats[leaf][4]
    assert sorted(c[2] for c in callers) == ["tail", "work"]
    assert callers[work[0]][0] == 1000


def test_html(run_ulma, native):
    with open(export(run_ulma, native, "html", "api.html"), encoding="utf-8") as f:
        page = f.read()
    m = re.search(r'<script type="application/json" id="ulma-data">(.*?)</script>', page, re.S)
    data = json.loads(m.group(1))
    kinds = sorted(f[3] for f in data["funcs"])
    assert kinds == ["native"] * 3 + ["zone"] * 2
    (lane,) = data["threads"]
    assert "main-loop" in lane["name"] and lane["in"] == ["checkpoint"] * 3 and len(lane["i"]) == 3
    (queue,) = data["counters"]
    assert queue["name"] == "queue" and queue["values"] == 10 and queue["v"] == QUEUE
    assert (queue["min"], queue["max"], queue["last"]) == (0, 13.5, 13.5)


CTF_LINE = re.compile(r'^\[[0-9:.]+\] \([+?0-9.]+\) ulma:(?P<event>\w+): .*\{ (?P<fields>[^{}]*(?:\{[^{}]*\})?[^{}]*) \}$')


@pytest.mark.skipif(shutil.which("babeltrace2") is None, reason="babeltrace2 not installed")
def test_ctf(run_ulma, native):
    out = export(run_ulma, native, "ctf", "api.ctf")
    proc = subprocess.run(["babeltrace2", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode(errors="replace")
    lines = proc.stdout.decode().splitlines()
    events = {}
    for line in lines:
        m = CTF_LINE.match(line)
        assert m, line
        events.setdefault(m.group("event"), []).append(m.group("fields"))
    assert events["instant"] == ['name = "checkpoint"'] * 3
    assert events["counter"] == ['name = "queue", value = %g' % v for v in QUEUE]
    assert events["thread_name"] == ['name = "main-loop"']
    kind_of = {}  # function id -> its kind, from its definitions (one in each stream that uses it)
    for f in events["function"]:
        d = re.search(r'^func = (\d+), .*, kind = \( "(\w+)" : container = (\d+) \)$', f)
        assert kind_of.setdefault(d.group(1), d.group(2, 3)) == d.group(2, 3)
    kinds = {}
    for f in events["function_entry"]:
        fid = re.search(r"container = (\d+) \)$", f).group(1)
        kinds[kind_of[fid]] = kinds.get(kind_of[fid], 0) + 1
    assert kinds == {("zone", "7"): 11, ("native", "6"): 1 + 10 + 1001}
    assert len(events["function_exit"]) == len(events["function_entry"])


@pytest.mark.skipif(shutil.which("otf2-print") is None, reason="otf2-print not installed (otf2-tools)")
def test_otf2(run_ulma, native):
    """Native functions are COMPILER regions, zones CODE/USER; the counter's
    values are metric events, the instants markers, the location named by
    the thread's name."""
    out = export(run_ulma, native, "otf2", "api.otf2")
    anchor = os.path.join(out, "traces.otf2")
    text = ""
    for args in (["-G"], []):  # the definitions, then the events
        proc = subprocess.run(["otf2-print", "-Werror"] + args + [anchor], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=120)
        assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode(errors="replace")
        text += proc.stdout.decode()
    kinds = {}
    for m in re.finditer(r'^REGION +(\d+)  .*Descr\.: "(\w+)" <\d+>, Role: (\w+), Paradigm: (\w+),', text, re.M):
        kinds[m.group(1)] = m.group(2, 3, 4)
    assert set(kinds.values()) == {("native", "FUNCTION", "COMPILER"), ("zone", "CODE", "USER")}, kinds
    enters = {}
    for m in re.finditer(r"^ENTER .*<(\d+)>$", text, re.M):
        enters[kinds[m.group(1)][0]] = enters.get(kinds[m.group(1)][0], 0) + 1
    assert enters == {"zone": 11, "native": 1 + 10 + 1001}
    values = [float(v) for v in re.findall(r"^METRIC .*DOUBLE; ([-0-9.e+]+)\)$", text, re.M)]
    assert values == QUEUE
    assert re.search(r'^LOCATION .*Name: "[^"]*main-loop \d+', text, re.M), text[-2000:]
    markers = subprocess.run(["otf2-marker", anchor], stdout=subprocess.PIPE, timeout=60).stdout.decode()
    assert markers.count('Text: "checkpoint"') == 3
