"""`ulma export --format otf2`: an OTF2 archive written with the OTF2
library, read back with its own tools, otf2-print and otf2-marker (Debian's
otf2-tools, installed by scripts/ensure-deps.sh).

otf2-print reads it without a warning, even with -Werror; per function the
Enter events equal the report's calls, every Enter has its Leave, well
nested on each location; programs/otf2_prog.py's known answers: fib
entered 465 times on the main thread and 177 on each worker, the workers'
locations named by their thread names, one location group per process
(four for fork_fib.py), odd names intact, the counter's four values as
metric events, the three instants as markers; timestamps within the
clock properties, and main's Leave - Enter its total time; the directory
rules of ctf.
"""
import os
import re
import shutil
import subprocess

import pytest

from export_helpers import ODD_NAMES, export_trace, no_temp_files, run_export  # noqa: F401

pytestmark = [
    pytest.mark.skipif(shutil.which("otf2-print") is None,
                       reason="otf2-print not installed (scripts/ensure-deps.sh installs otf2-tools)"),
    pytest.mark.once("the OTF2 writer (C) read by otf2-print"),
]

EVENT = re.compile(r"^(ENTER|LEAVE|METRIC) +(\d+) +(\d+)  (.*)$")
REGION = re.compile(r'^REGION +(\d+)  Name: "(.*)" <\d+> \(Aka\. .*Descr\.: "(python|c|native|zone)" <\d+>, '
                    r"Role: (\w+), Paradigm: (\w+),")
LOCATION = re.compile(r'^LOCATION +(\d+)  Name: "(.*)" <\d+>, Type: CPU_THREAD, # Events: (\d+), Group: "(.*)" <(\d+)>$')
CLOCK = re.compile(r"^CLOCK_PROPERTIES +Ticks per Seconds: (\d+), Global Offset: (\d+), Length: (\d+),")


def otf2_print(anchor, *args):
    proc = subprocess.run(["otf2-print", "-Werror"] + list(args) + [str(anchor)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert proc.stderr == b"", proc.stderr.decode(errors="replace")
    return proc.stdout.decode("utf-8").split("\n")  # not splitlines: names may hold U+2028


def read_archive(out):
    """Definitions and events of the archive at out, as otf2-print shows them."""
    anchor = os.path.join(str(out), "traces.otf2")
    a = {"regions": {}, "locations": {}, "groups": set(), "events": []}
    for line in otf2_print(anchor, "-G"):
        m = REGION.match(line)
        if m:
            a["regions"][int(m.group(1))] = dict(name=m.group(2), kind=m.group(3), role=m.group(4),
                                                 paradigm=m.group(5))
        m = LOCATION.match(line)
        if m:
            a["locations"][int(m.group(1))] = dict(name=m.group(2), events=int(m.group(3)), group=int(m.group(5)))
        if line.startswith("LOCATION_GROUP"):
            a["groups"].add(int(line.split()[1]))
        m = CLOCK.match(line)
        if m:
            a["clock"] = tuple(int(x) for x in m.groups())
    for line in otf2_print(anchor):
        m = EVENT.match(line)
        if m:
            kind, loc, ts, rest = m.groups()
            region = re.search(r"Region: .* <(\d+)>$", rest)
            value = re.search(r"DOUBLE; ([-0-9.e+]+)\)", rest)
            a["events"].append((kind, int(loc), int(ts), int(region.group(1)) if region else None,
                                float(value.group(1)) if value else None))
    markers = subprocess.run(["otf2-marker", anchor], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert markers.returncode == 0, markers.stderr
    a["markers"] = [line for line in markers.stdout.decode().splitlines() if line.startswith("MARKER ")]
    return a


@pytest.fixture(scope="module")
def known(export_trace, run_export, tmp_path_factory):
    t = export_trace("otf2_prog.py")
    out = tmp_path_factory.mktemp("otf2") / "prog.otf2"
    run_export(t["trace"], "otf2", out)
    return dict(t, archive=read_archive(out), out=out)


def enters(a, name, location=None):
    return sum(1 for kind, loc, ts, r, v in a["events"] if kind == "ENTER" and a["regions"][r]["name"] == name
               and (location is None or loc == location))


def test_files(known):
    assert sorted(os.listdir(str(known["out"]))) == ["traces", "traces.def", "traces.marker", "traces.otf2"]


def test_enters_equal_calls(known):
    a = known["archive"]
    calls = {}
    for f in known["report"]["functions"]:
        calls[f["name"]] = calls.get(f["name"], 0) + f["calls"]
    got = {}
    for kind, loc, ts, r, v in a["events"]:
        if kind == "ENTER":
            got[a["regions"][r]["name"]] = got.get(a["regions"][r]["name"], 0) + 1
    assert got == calls
    assert calls["fib"] == 465 + 2 * 177 and calls["load"] == 3


def test_nesting_and_counts_per_location(known):
    a = known["archive"]
    stacks, counted = {}, {}
    for kind, loc, ts, r, v in a["events"]:
        counted[loc] = counted.get(loc, 0) + 1
        st = stacks.setdefault(loc, [])
        if kind == "ENTER":
            st.append((r, ts))
        elif kind == "LEAVE":
            top, at = st.pop()
            assert top == r and ts >= at
    assert all(not st for st in stacks.values())
    assert counted == {loc: d["events"] for loc, d in a["locations"].items()}


def test_threads_are_locations_of_one_process(known):
    a = known["archive"]
    names = {loc: d["name"] for loc, d in a["locations"].items()}
    assert len(names) == 3 and len(a["groups"]) == 1
    main = [loc for loc, n in names.items() if "MainThread" in n]
    workers = {i: [loc for loc, n in names.items() if "worker-%d " % i in n] for i in range(2)}
    assert len(main) == 1 and all(len(w) == 1 for w in workers.values()), names
    assert enters(a, "fib", main[0]) == 465
    for i in range(2):
        assert enters(a, "fib", workers[i][0]) == 177


def test_kinds_as_role_and_paradigm(known):
    kinds = {}
    for r in known["archive"]["regions"].values():
        kinds[r["name"]] = (r["kind"], r["role"], r["paradigm"])
    assert kinds["fib"] == ("python", "FUNCTION", "USER")
    assert kinds["builtins.print"] == ("c", "FUNCTION", "NONE")
    assert kinds["load"] == ("zone", "CODE", "USER")


def test_counter_metrics_and_instant_markers(known):
    a = known["archive"]
    assert [v for kind, loc, ts, r, v in a["events"] if kind == "METRIC"] == [0.0, 1.5, 3.0, 4.5]
    assert len(a["markers"]) == 3 and all('Text: "checkpoint"' in m for m in a["markers"]), a["markers"]


def test_timestamps(known):
    a = known["archive"]
    resolution, offset, length = a["clock"]
    assert resolution == 10 ** 9
    stamps = [ts for kind, loc, ts, r, v in a["events"]]
    assert offset <= min(stamps) and max(stamps) <= offset + length
    main = [(kind, ts) for kind, loc, ts, r, v in a["events"] if r is not None and a["regions"][r]["name"] == "main"]
    assert [k for k, ts in main] == ["ENTER", "LEAVE"]
    want = next(f["total_ns"] for f in known["report"]["functions"] if f["name"] == "main")
    assert abs((main[1][1] - main[0][1]) - want) <= 1000, (main, want)


def test_processes_are_location_groups(export_trace, run_export, tmp_path):
    t = export_trace("fork_fib.py")
    run_export(t["trace"], "otf2", tmp_path / "fork.otf2")
    a = read_archive(tmp_path / "fork.otf2")
    assert len(a["groups"]) == 4
    groups = {d["group"] for d in a["locations"].values()}
    assert groups == a["groups"]
    per_group = {}
    for kind, loc, ts, r, v in a["events"]:
        if kind == "ENTER" and a["regions"][r]["name"] == "fib":
            g = a["locations"][loc]["group"]
            per_group[g] = per_group.get(g, 0) + 1
    assert sorted(per_group.values()) == [8361] * 4


def test_directory_rules(export_trace, run_ulma, tmp_path):
    t = export_trace("fib_calls.py")
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run_ulma(["export", t["trace"], "--format", "otf2", "-o", str(empty)])
    assert proc.returncode == 0, proc.stderr
    assert "traces.otf2" in os.listdir(str(empty))
    full = tmp_path / "full"
    full.mkdir()
    (full / "mine").write_bytes(b"x")
    proc = run_ulma(["export", t["trace"], "--format", "otf2", "-o", str(full)])
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert err.startswith("ulma: cannot write '%s'" % full) and len(err.splitlines()) == 1, err
    assert os.listdir(str(full)) == ["mine"]
    # a corrupt trace leaves nothing, the archive's subdirectory included
    with open(t["trace"], "rb") as f:
        data = bytearray(f.read())
    data[len(data) // 2] ^= 0x55
    bad = tmp_path / "bad.trace"
    bad.write_bytes(bytes(data))
    proc = run_ulma(["export", str(bad), "--format", "otf2", "-o", str(tmp_path / "bad.otf2")])
    assert proc.returncode == 1 and b"checksum" in proc.stderr
    assert not os.path.exists(str(tmp_path / "bad.otf2")) and no_temp_files(tmp_path) == []


def test_odd_names_come_back(export_trace, run_export, tmp_path):
    """Names holding separators, quotes, a newline, markup and non-ASCII are
    region names as they are (OTF2 strings are binary-safe), each entered
    as many times as it was called."""
    t = export_trace("odd_names.py")
    run_export(t["trace"], "otf2", tmp_path / "odd.otf2")
    anchor = str(tmp_path / "odd.otf2" / "traces.otf2")
    defs = "\n".join(otf2_print(anchor, "-G"))
    events = "\n".join(otf2_print(anchor))
    for i, name in enumerate(ODD_NAMES):
        m = re.search(r'^REGION +(\d+)  Name: "%s" <' % re.escape(name), defs, re.M)
        assert m, name
        enter = r'^ENTER +\d+ +\d+  Region: "%s" <%s>$' % (re.escape(name), m.group(1))
        assert len(re.findall(enter, events, re.M)) == i + 1, name
