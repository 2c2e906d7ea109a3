"""ulma.zone, ulma.instant, ulma.counter and ulma.thread_name
(docs/native.md, "From Python"): zones are frames with exact counts that
nest with the calls around them, as a context manager and as a decorator
(functions, methods, an exception going through, recursion, threads, an
inline block); the marks are written with nothing lost; untraced, every
call returns None and costs nothing to get wrong; bad names raise
TypeError.  The chrome export of instants and counters is tested where it
is written (another branch); here only their definitions are looked for.
"""
import json
import subprocess
import sys

import pytest

import ulma
from conftest import TIMEOUT, base_env

ZONES = {"block": 7, "method": 7, "decorated": 18, "raises": 3, "outer": 1, "inner": 1, "recursive": 5,
         "threaded": 4}


def line_of(path, text):
    with open(path) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


@pytest.fixture(scope="module")
def zones_run(prog, run_ulma, report_json, tmp_path_factory):
    trace = str(tmp_path_factory.mktemp("zones") / "zones.trace")
    proc = run_ulma(["run", "--summary", "none", "-o", trace, prog("zones.py")])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert proc.stdout.strip() == b"84"
    data, _ = report_json(trace)
    return trace, data


def test_zones_are_rows_with_exact_counts(zones_run, prog):
    _, data = zones_run
    path = prog("zones.py")
    zones = {f["name"]: f for f in data["functions"] if f["kind"] == "zone"}
    assert {n: f["calls"] for n, f in zones.items()} == ZONES
    assert all(f["file"] == path for f in zones.values())
    # where each zone was created: the with-statement or the decorator's line
    assert zones["block"]["line"] == line_of(path, 'ulma.zone("block")')
    assert zones["decorated"]["line"] == line_of(path, '@ulma.zone("decorated")')
    assert zones["recursive"]["line"] == line_of(path, 'RECURSIVE = ulma.zone')
    assert zones["block"]["total_ns"] >= zones["method"]["total_ns"]
    py = {f["name"]: f["calls"] for f in data["functions"] if f["file"] == path and f["kind"] == "python"}
    # the decorated functions run once per call, with no wrapper frame of ulma's
    assert py["leaf"] == 18 and py["Box.get" if sys.version_info >= (3, 11) else "get"] == 7, py
    assert py["fails"] == 3 and py["recurse"] == 5, py
    # ulma's own functions and methods are not C calls of the program
    assert not [f for f in data["functions"] if f["kind"] == "c" and
                any(w in f["name"] for w in ("zone", "instant", "counter", "thread_name"))]
    assert data["lost"] == 0


def test_zones_nest_with_the_calls_around_them(zones_run, run_ulma, tmp_path):
    trace, _ = zones_run
    out = tmp_path / "zones.json"
    proc = run_ulma(["export", trace, "--format", "chrome", "--no-correction", "-o", str(out)])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    with open(str(out), encoding="utf-8") as f:
        events = [e for e in json.load(f)["traceEvents"] if e["ph"] == "X"]
    parents = {}
    by_thread = {}
    for e in events:
        by_thread.setdefault(e["tid"], []).append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in evs:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"] + 0.0005:
                stack.pop()
            parents.setdefault(e["name"], set()).add(stack[-1]["name"] if stack else None)
            stack.append(e)
    get = "Box.get" if sys.version_info >= (3, 11) else "get"
    assert parents["block"] == {"work"}
    assert parents["method"] == {"block"}
    assert parents[get] == {"method"}
    assert parents["decorated"] == {"block", get, "threaded"}
    assert parents["leaf"] == {"decorated"}
    assert parents["inner"] == {"outer"} and parents["outer"] == {"work"}
    assert parents["fails"] == {"raises"} and parents["raises"] == {"work"}
    assert parents["recursive"] == {"recurse"} and parents["recurse"] == {"work", "recursive"}
    assert parents["threaded"] == {"in_thread"}


def test_marks_are_written(zones_run):
    """Until the exports show instants and counters, look for their
    definitions in the trace: names with their arguments as JSON."""
    trace, data = zones_run
    with open(trace, "rb") as f:
        raw = f.read()
    for name in ('checkpoint {"step": 3, "ok": true, "ratio": 1.5, "tags": ["a", null], '
                 '"obj": "odd\\n\\"value\\""}',
                 'inf {"x": Infinity, "nested": {"k": [1, {"d": 2}]}, "s": "tab\\there \u00e9"}',
                 "plain", "queue_depth", "load", "huge", "zone-worker"):
        assert name.encode() in raw, name
    assert data["lost"] == 0 and data["complete"]


def test_zones_in_an_inline_block(tmp_path, report_json):
    trace = str(tmp_path / "inline.trace")
    code = ("import ulma\n"
            "z = ulma.zone('made-before')\n"
            "@ulma.zone('deco')\n"
            "def f(): return 1\n"
            "with z: pass\n"  # untraced: not recorded
            "with ulma.profile(%r, summary='none'):\n"
            "    for _ in range(6):\n"
            "        with z:\n"
            "            f()\n"
            "    ulma.instant('in-block', n=1)\n"
            "f()\n" % trace)
    proc = subprocess.run([sys.executable, "-c", code], env=base_env(), capture_output=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    data, _ = report_json(trace)
    zones = {f["name"]: f["calls"] for f in data["functions"] if f["kind"] == "zone"}
    assert zones == {"made-before": 6, "deco": 6}


def test_untraced_calls_do_nothing_and_return_none():
    z = ulma.zone("idle")
    with z as entered:
        assert entered is z
    assert ulma.instant("idle") is None
    assert ulma.instant("idle", a=1, b=object()) is None
    assert ulma.counter("idle", 3) is None
    assert ulma.counter("idle", 2.5) is None
    assert ulma.counter("idle", True) is None
    assert ulma.counter("idle", 10 ** 400) is None
    assert ulma.thread_name("idle") is None
    assert z.name == "idle" and repr(z) == "ulma.zone('idle')"


def test_decorator_keeps_the_function():
    def plain(a, b=2):
        """Doc."""
        return a + b

    wrapped = ulma.zone("w")(plain)
    assert wrapped(1, b=3) == 4
    assert (wrapped.__name__, wrapped.__doc__, wrapped.__wrapped__) == ("plain", "Doc.", plain)
    assert wrapped.__qualname__ == plain.__qualname__ and wrapped.__module__ == plain.__module__

    class C:
        @ulma.zone("m")
        def m(self, x):
            return (self, x)

    c = C()
    assert c.m(5) == (c, 5)

    @ulma.zone("raises")
    def bad():
        raise KeyError("k")

    with pytest.raises(KeyError):
        bad()

    @ulma.zone("gen")
    def gen(n):
        yield from range(n)

    assert list(gen(3)) == [0, 1, 2]  # the generator is returned unchanged

    with pytest.raises(ZeroDivisionError):  # an exception goes through the block
        with ulma.zone("block"):
            1 / 0


@pytest.mark.parametrize("call", [
    lambda: ulma.zone(3),
    lambda: ulma.zone(b"bytes"),
    lambda: ulma.zone(None),
    lambda: ulma.instant(1),
    lambda: ulma.instant(b"x", a=1),
    lambda: ulma.counter(None, 1),
    lambda: ulma.counter("x", "1"),
    lambda: ulma.counter("x", None),
    lambda: ulma.thread_name(7),
    lambda: ulma.zone("x")(42),
])
def test_bad_arguments_raise_type_error(call):
    with pytest.raises(TypeError):
        call()
