"""`ulma export --format speedscope`: speedscope's JSON file format.

The structure is validated against the format's specification
(https://www.speedscope.app/file-format-schema.json, generated from
speedscope's src/lib/file-format-spec.ts): required keys, types, enums,
frame indices in range; then what speedscope's importer insists on for
evented profiles: events in non-decreasing time and balanced (each close
matches the innermost open frame).  Then the content: one profile per
thread, opens per function equal to calls, odd names intact, filters
applied.
"""
import json

import pytest

from export_helpers import ODD_NAMES, export_trace, run_export  # noqa: F401

SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"
UNITS = {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}
NUMBER = (int, float)


def _is_num(x):
    return isinstance(x, NUMBER) and not isinstance(x, bool)


def validate(doc):
    """Raise AssertionError where doc breaks the file format."""
    assert isinstance(doc, dict)
    assert doc["$schema"] == SCHEMA_URL
    for opt, typ in (("name", str), ("exporter", str), ("activeProfileIndex", int)):
        assert opt not in doc or isinstance(doc[opt], typ), opt
    frames = doc["shared"]["frames"]
    assert isinstance(frames, list)
    for fr in frames:
        assert set(fr) <= {"name", "file", "line", "col"}, fr
        assert isinstance(fr["name"], str)
        assert "file" not in fr or isinstance(fr["file"], str)
        for k in ("line", "col"):
            assert k not in fr or _is_num(fr[k]), fr
    profiles = doc["profiles"]
    assert isinstance(profiles, list) and profiles
    if "activeProfileIndex" in doc:
        assert 0 <= doc["activeProfileIndex"] < len(profiles)
    for p in profiles:
        assert p["type"] == "evented"
        assert isinstance(p["name"], str) and p["unit"] in UNITS
        assert _is_num(p["startValue"]) and _is_num(p["endValue"]) and p["endValue"] >= p["startValue"]
        assert isinstance(p["events"], list)
        stack = []
        last = p["startValue"]
        for ev in p["events"]:
            assert set(ev) == {"type", "frame", "at"}, ev
            assert ev["type"] in ("O", "C") and isinstance(ev["frame"], int) and _is_num(ev["at"]), ev
            assert 0 <= ev["frame"] < len(frames), ev
            assert last <= ev["at"] <= p["endValue"], ("time goes backwards or out of range", ev)
            last = ev["at"]
            if ev["type"] == "O":
                stack.append(ev)
            else:
                assert stack and stack[-1]["frame"] == ev["frame"], ("unbalanced close", ev)
                stack.pop()
        assert not stack, "frames left open in %s" % p["name"]


def load(path):
    with open(str(path), encoding="utf-8") as f:
        doc = json.load(f)
    validate(doc)
    return doc


def opens_by_key(doc):
    frames = doc["shared"]["frames"]
    got = {}
    for p in doc["profiles"]:
        for ev in p["events"]:
            if ev["type"] == "O":
                fr = frames[ev["frame"]]
                k = (fr["name"], fr.get("file", "~"), fr.get("line", 0))
                got[k] = got.get(k, 0) + 1
    return got


@pytest.fixture(scope="module")
def varied(export_trace, run_export, tmp_path_factory):
    t = export_trace("varied.py")
    out = tmp_path_factory.mktemp("speedscope") / "varied.speedscope.json"
    run_export(t["trace"], "speedscope", out)
    return dict(t, doc=load(out))


def test_validator_rejects_broken_files(varied):
    """The check above can fail: a close swapped out of order, a frame out of
    range, a missing key."""
    doc = json.loads(json.dumps(varied["doc"]))
    p = doc["profiles"][0]
    i = next(i for i, e in enumerate(p["events"]) if e["type"] == "C" and p["events"][i - 1]["type"] == "C")
    p["events"][i]["frame"], p["events"][i - 1]["frame"] = p["events"][i - 1]["frame"], p["events"][i]["frame"]
    if p["events"][i]["frame"] != p["events"][i - 1]["frame"]:
        with pytest.raises(AssertionError):
            validate(doc)
    doc = json.loads(json.dumps(varied["doc"]))
    doc["profiles"][0]["events"][0]["frame"] = len(doc["shared"]["frames"])
    with pytest.raises(AssertionError):
        validate(doc)
    doc = json.loads(json.dumps(varied["doc"]))
    del doc["profiles"][0]["unit"]
    with pytest.raises(KeyError):
        validate(doc)


def test_one_profile_per_thread(varied):
    names = [p["name"] for p in varied["doc"]["profiles"]]
    threads = varied["report"]["thread_list"]
    assert len(names) == len(threads)
    for t in threads:
        assert any(n.endswith("%d (pid %d)" % (t["tid"], t["pid"])) for n in names), (t, names)
    assert all(p["unit"] == "nanoseconds" for p in varied["doc"]["profiles"])


def test_opens_per_function_equal_calls(varied):
    want = {}
    for f in varied["report"]["functions"]:
        k = (f["name"], f["file"], f["line"])
        want[k] = want.get(k, 0) + f["calls"]
    assert opens_by_key(varied["doc"]) == want
    frames = varied["doc"]["shared"]["frames"]
    assert len({(f["name"], f.get("file"), f.get("line")) for f in frames}) == len(frames), "a frame listed twice"


def test_thread_events_match_the_report(varied):
    """Per thread: as many events as the trace holds (lossless), spanning its wall time."""
    by_tid = {t["tid"]: t for t in varied["report"]["thread_list"]}
    for p in varied["doc"]["profiles"]:
        tid = int(p["name"].split(" (pid")[0].rsplit(" ", 1)[1])
        t = by_tid[tid]
        assert len(p["events"]) == t["events"]
        assert p["endValue"] - p["startValue"] == pytest.approx(t["wall_ns"], rel=0.001, abs=5)


def test_odd_names(export_trace, run_export, tmp_path):
    t = export_trace("odd_names.py")
    out = tmp_path / "odd.json"
    run_export(t["trace"], "speedscope", out)
    got = {k[0]: n for k, n in opens_by_key(load(out)).items()}
    for i, name in enumerate(ODD_NAMES):
        assert got.get(name) == i + 1, name


def test_min_duration(export_trace, run_export, tmp_path):
    t = export_trace("fib_calls.py")
    out = tmp_path / "long.json"
    run_export(t["trace"], "speedscope", out, "--min-duration", "50us")
    doc = load(out)
    (p,) = doc["profiles"]
    opened = []
    shortest = None
    for ev in p["events"]:
        if ev["type"] == "O":
            opened.append(ev["at"])
        else:
            d = ev["at"] - opened.pop()
            shortest = d if shortest is None else min(shortest, d)
    assert shortest is not None and shortest >= 50_000
    n = sum(opens_by_key(doc).values())
    assert 0 < n < sum(f["calls"] for f in t["report"]["functions"]) / 10
