"""`ulma export --format ctf`: a CTF 1.8 trace directory, read back with
babeltrace2 (Debian's, installed by scripts/ensure-deps.sh).

babeltrace2 prints every event without complaint; the count equals the
trace's events; entries per function equal calls, and per thread every
exit closes the innermost open entry; every event carries pid, tid and
cpu_id, the CPU it ran on; the times babeltrace2 prints are the trace's,
across gaps the compact header's 27 bits cannot span; each function is
defined once in each stream using it, its enumeration label (where it
has one) is its name, and
past the 16-bit ids and the labels every event still names its function;
odd names survive; a directory is replaced only when empty, and a failed
export leaves no temporary directory.
"""
import os
import re
import shutil
import subprocess

import pytest

import trace_builder
from export_helpers import ODD_NAMES, export_trace, no_temp_files, run_export  # noqa: F401

pytestmark = [
    pytest.mark.skipif(shutil.which("babeltrace2") is None,
                       reason="babeltrace2 not installed (scripts/ensure-deps.sh installs it)"),
    pytest.mark.once("the CTF writer (C) read by babeltrace2"),
]

LABELS = 256  # export_ctf.c's CTF_LABELS: the enumeration names the most entered functions
NARROW_IDS = 65536  # ids from here on go in the 32-bit classes

STRING = r'"(?:[^"\\]|\\.)*"'
# babeltrace2 --clock-seconds: the clock's offset (the trace's CLOCK_MONOTONIC start) plus the event's time
LINE = re.compile(
    r"^\[(?P<s>\d+)\.(?P<ns>\d{9})\] \([+?0-9.]+\) ulma:(?P<event>\w+): "
    r"\{ pid = (?P<pid>\d+), tid = (?P<tid>\d+), cpu_id = (?P<cpu>\d+) \}, \{ (?P<fields>.*) \}$"
)
# an entry's or exit's func: a labelled value, one past the labels, or a 32-bit id (no enumeration)
FUNC = re.compile(r'^func = (?:\( (?:(?P<label>%s)|<unknown>) : container = (?P<id>\d+) \)|(?P<wide>\d+))$' % STRING)
DEFINITION = re.compile(
    r"^func = (?P<id>\d+), name = (?P<name>%s), file = (?P<file>%s), line = (?P<line>\d+), "
    r'kind = \( "(?P<kind>python|c|native|zone|other)" : container = (?P<kindval>\d+) \)$' % (STRING, STRING)
)
# ulma records every Python thread's name (docs/hooks.md, "Thread names"): a
# thread_name event, which is a mark, not one of the trace's events
THREAD_NAME = re.compile(r"^name = (?P<name>%s)$" % STRING)

ESCAPES = {"?": "?", "n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "e": "\x1b",
           '"': '"', "'": "'", "\\": "\\"}


def unescape(s):
    """A string as babeltrace2's text sink escapes it (C escapes, \\xHH for
    other control characters, UTF-8 raw), without its quotes."""
    assert s[0] == s[-1] == '"', s
    return re.sub(r"\\(x[0-9a-f]{2}|.)", lambda m: chr(int(m.group(1)[1:], 16)) if len(m.group(1)) == 3
                  else ESCAPES[m.group(1)], s[1:-1])


def babeltrace(path, start_ns=None):
    """The frame events babeltrace2 prints, in its order, each a dict: event
    (entry or exit), pid, tid, cpu, ns (since the trace start when start_ns
    is given, else since the epoch of the clock), id, label (None where it
    prints none) and, joined on the function's definition, name, file,
    line and kind.  Checks along the way: no warning, every line parsed,
    each function defined once in each stream that uses it and before its
    events there, alike in every stream, a label is its function's name,
    and 16-bit ids only below NARROW_IDS."""
    proc = subprocess.run(["babeltrace2", "--clock-seconds", str(path)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert proc.stderr == b"", proc.stderr.decode(errors="replace")
    lines = proc.stdout.decode("utf-8").split("\n")
    assert lines[-1] == ""
    events, names, defs, defined, labelled = [], set(), {}, set(), {}
    for line in lines[:-1]:
        m = LINE.match(line)
        assert m, "unexpected babeltrace2 line: %r" % line
        ns = int(m.group("s")) * 10**9 + int(m.group("ns")) - (start_ns or 0)
        fields = m.group("fields")
        if m.group("event") == "thread_name":
            names.add(unescape(THREAD_NAME.match(fields).group("name")))
            continue
        if m.group("event") == "function":
            d = DEFINITION.match(fields)
            assert d, fields
            fid, stream = int(d.group("id")), (m.group("pid"), m.group("tid"))
            assert (stream, fid) not in defined, "function %d defined twice in %s" % (fid, stream)
            defined.add((stream, fid))
            defn = dict(name=unescape(d.group("name")), file=unescape(d.group("file")), line=int(d.group("line")),
                        kind=d.group("kind"))
            assert defs.setdefault(fid, defn) == defn, (defn, defs[fid])
            continue
        assert m.group("event") in ("function_entry", "function_exit"), line
        f = FUNC.match(fields)
        assert f, fields
        fid = int(f.group("id") or f.group("wide"))
        assert (f.group("wide") is None) == (fid < NARROW_IDS), line
        assert ((m.group("pid"), m.group("tid")), fid) in defined, "function %d used before its definition" % fid
        label = unescape(f.group("label")) if f.group("label") else None
        assert label is None or label == defs[fid]["name"], (label, defs[fid])
        labelled[fid] = label is not None
        events.append(dict(defs[fid], event=m.group("event")[9:], pid=int(m.group("pid")), tid=int(m.group("tid")),
                           cpu=int(m.group("cpu")), ns=ns, id=fid, label=label))
    assert "MainThread" in names or not events or start_ns is not None, names
    # the labels name the LABELS most entered functions of 16-bit ids (the lower id first among equals)
    entries = {fid: 0 for fid in labelled}
    for e in events:
        entries[e["id"]] += e["event"] == "entry"
    top = sorted((fid for fid in entries if fid < NARROW_IDS), key=lambda fid: (-entries[fid], fid))[:LABELS]
    assert {fid for fid, has in labelled.items() if has} == set(top)
    return events


def check_nesting(events):
    """Per thread: times never go back, every exit closes the innermost
    open entry, nothing stays open.  Returns [(entry, exit)] per frame."""
    stacks, last, frames = {}, {}, []
    for e in events:
        key = (e["pid"], e["tid"])
        assert e["ns"] >= last.get(key, 0), e
        last[key] = e["ns"]
        stack = stacks.setdefault(key, [])
        if e["event"] == "entry":
            stack.append(e)
        else:
            assert stack and stack[-1]["id"] == e["id"], ("unbalanced exit", e)
            frames.append((stack.pop(), e))
    assert all(not s for s in stacks.values()), "frames left open"
    return frames


@pytest.fixture(scope="module")
def varied(export_trace, run_export, tmp_path_factory):
    t = export_trace("varied.py")
    out = tmp_path_factory.mktemp("ctf") / "varied.ctf"
    run_export(t["trace"], "ctf", out)
    return dict(t, out=out, events=babeltrace(out))


def test_every_event_printed(varied):
    assert len(varied["events"]) == varied["report"]["events"]
    files = sorted(os.listdir(str(varied["out"])))
    assert files[0] == "metadata" and len(files) == 1 + len(varied["report"]["thread_list"])


def test_entries_per_function_equal_calls(varied):
    want = {}
    for f in varied["report"]["functions"]:
        k = (f["name"], f["file"], f["line"])
        want[k] = want.get(k, 0) + f["calls"]
    kinds = {(f["name"], f["file"], f["line"]): ("c" if f["kind"] == "c" else "python") for f in varied["report"]["functions"]}
    got = {}
    for e in varied["events"]:
        if e["event"] == "entry":
            k = (e["name"], e["file"], e["line"])
            got[k] = got.get(k, 0) + 1
            assert e["kind"] == kinds[k], (k, e["kind"])  # the definition's kind, as an enumeration
    assert got == want
    frames = check_nesting(varied["events"])
    assert len(frames) == sum(want.values())
    # more functions than labels (the standard library's imports among them): most events still have theirs
    assert len(want) > LABELS
    assert sum(e["label"] is not None for e in varied["events"]) > 0.9 * len(varied["events"])


def test_threads_and_cpus(varied):
    per_thread = {}
    for e in varied["events"]:
        key = (e["pid"], e["tid"])
        per_thread[key] = per_thread.get(key, 0) + 1
        assert 0 <= e["cpu"] < 4096
    want = {(t["pid"], t["tid"]): t["events"] for t in varied["report"]["thread_list"]}
    assert per_thread == want


def test_exit_durations(export_trace, run_export, tmp_path):
    """main's exit comes its total time (the report's total_ns) after its entry."""
    t = export_trace("fib_calls.py")
    run_export(t["trace"], "ctf", tmp_path / "fib.ctf")
    frames = check_nesting(babeltrace(tmp_path / "fib.ctf"))
    main = [(a, b) for a, b in frames if a["name"] == "main"]
    row = [f for f in t["report"]["functions"] if f["name"] == "main"][0]
    assert len(main) == 1
    dur = main[0][1]["ns"] - main[0][0]["ns"]
    assert abs(dur - row["total_ns"]) <= 5 + row["total_ns"] // 1000


def test_odd_names(export_trace, run_export, tmp_path):
    t = export_trace("odd_names.py")
    run_export(t["trace"], "ctf", tmp_path / "odd.ctf")
    got = {}
    for e in babeltrace(tmp_path / "odd.ctf"):
        if e["event"] == "entry":
            got[e["name"]] = got.get(e["name"], 0) + 1
    for i, name in enumerate(ODD_NAMES):
        assert got.get(name) == i + 1, (name, sorted(got))


CONTROL_NAMES = ["bell\a", "esc\x1bape", "nul-ish\x01\x7f", "cr\rlf", "digits\x0112"]


def test_odd_and_control_characters_in_labels(run_ulma, tmp_path):
    """Odd names and names holding control characters come back exactly,
    in the definition and in the label (control characters as octal
    escapes in the metadata, which babeltrace2 reads, where a hex escape
    would swallow the digits after it)."""
    names = ODD_NAMES + CONTROL_NAMES
    events = [(0, "cpu", 0)]
    for i in range(len(names)):
        events += [(10 * i + 1, "enter", i + 1), (10 * i + 2, "exit")]
    path = tmp_path / "ctl.trace"
    path.write_bytes(trace_builder.trace(0, 0, 10 * len(names), 10 * len(names), events, func_names=names))
    proc = run_ulma(["export", str(path), "--format", "ctf", "-o", str(tmp_path / "ctl.ctf")])
    assert proc.returncode == 0, proc.stderr
    got = [(e["name"], e["label"]) for e in babeltrace(tmp_path / "ctl.ctf", start_ns=0) if e["event"] == "entry"]
    assert got == [(n, n) for n in names]


def test_directory_rules(export_trace, run_ulma, tmp_path):
    t = export_trace("fib_calls.py")
    # an empty directory is replaced
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run_ulma(["export", t["trace"], "--format", "ctf", "-o", str(empty)])
    assert proc.returncode == 0, proc.stderr
    assert "metadata" in os.listdir(str(empty))
    # a directory with files in it, or a file, is left alone
    full = tmp_path / "full"
    full.mkdir()
    (full / "mine").write_bytes(b"x")
    afile = tmp_path / "afile"
    afile.write_bytes(b"y")
    for out in (full, afile):
        proc = run_ulma(["export", t["trace"], "--format", "ctf", "-o", str(out)])
        assert proc.returncode == 1, proc.stderr
        err = proc.stderr.decode()
        assert err.startswith("ulma: cannot write '%s'" % out) and len(err.splitlines()) == 1, err
    assert os.listdir(str(full)) == ["mine"] and afile.read_bytes() == b"y"
    # stdout is not a directory
    proc = run_ulma(["export", t["trace"], "--format", "ctf", "-o", "-"])
    assert proc.returncode == 2 and proc.stdout == b""
    assert no_temp_files(tmp_path) == []


def test_corrupt_trace_leaves_nothing(export_trace, run_ulma, tmp_path):
    t = export_trace("fib_calls.py")
    with open(t["trace"], "rb") as f:
        data = bytearray(f.read())
    data[len(data) // 2] ^= 0x55
    bad = tmp_path / "bad.trace"
    bad.write_bytes(bytes(data))
    proc = run_ulma(["export", str(bad), "--format", "ctf", "-o", str(tmp_path / "out.ctf")])
    assert proc.returncode == 1 and b"checksum" in proc.stderr
    assert sorted(os.listdir(str(tmp_path))) == ["bad.trace"]


def test_empty_file_and_function_names(export_trace, run_export, tmp_path):
    """Code compiled with file name "" (exec(compile(src, "", "exec"))) and a
    function whose name is "": both export, and babeltrace2 reads every
    event; the nameless function is "?", as in the other formats' rows."""
    t = export_trace("empty_names.py")
    run_export(t["trace"], "ctf", tmp_path / "empty.ctf")
    events = babeltrace(tmp_path / "empty.ctf")
    assert len(events) == t["report"]["events"]
    entries = {}
    for e in events:
        if e["event"] == "entry":
            k = (e["name"], e["file"], e["line"])
            entries[k] = entries.get(k, 0) + 1
    assert entries[("f", "", 1)] == 3, sorted(entries)
    assert entries[("?", t["path"], 8)] == 2, sorted(entries)


START_NS = 7 * 10**9 + 123456789  # the trace's CLOCK_MONOTONIC start: the clock's offset
WRAP = 2**27  # the compact header's timestamp bits


def test_times_across_the_compact_headers_wrap(run_ulma, tmp_path):
    """Every time babeltrace2 prints is the trace's, to the nanosecond,
    the clock's offset included: across gaps of 2^27 - 1, 2^27, 2^27 + 1,
    2^28 + 5 and 3 * 2^27 ns (where only the extended header says how many
    times 27 bits wrapped), gaps that cross a multiple of 2^27 without
    reaching it, and far past 2^32 ns."""
    gaps = [5, WRAP - 1, WRAP, 1, WRAP + 1, 2 * WRAP + 5, 3, 3 * WRAP, WRAP - 7, 9, 2**40, WRAP // 2, WRAP // 2 + 1, 0, 2]
    times = [1000]
    for gap in gaps:
        times.append(times[-1] + gap)
    assert len(times) % 2 == 0
    events = [(1000, "cpu", 0)] + [(t, "enter", 1 + i % 4 // 2) if i % 2 == 0 else (t, "exit") for i, t in enumerate(times)]
    path = tmp_path / "gaps.trace"
    end = events[-1][0] + 10
    path.write_bytes(trace_builder.trace(0, START_NS, end, START_NS + end, events, func_names=("f", "g")))
    proc = run_ulma(["export", str(path), "--format", "ctf", "-o", str(tmp_path / "gaps.ctf")])
    assert proc.returncode == 0, proc.stderr
    got = babeltrace(tmp_path / "gaps.ctf", start_ns=START_NS)
    want = [ev[0] for ev in events if ev[1] != "cpu"]
    assert [e["ns"] for e in got] == want
    check_nesting(got)


def test_every_event_on_its_cpu(run_ulma, tmp_path):
    """The CPU is in each packet's context and a packet ends where the
    thread's CPU changes: every event, entry or exit, prints the CPU the
    trace gives it, here changing at nearly every event (at the same
    nanosecond as the event before it too)."""
    events, cpus, t = [], [], 0
    for i in range(3000):
        cpu = (i * 7 // 3) % 5
        if not events or cpu != cpus[-1]:
            events.append((events[-1][0] if events else 0, "cpu", cpu))
        t += i % 3  # 0 now and then: a packet may begin at its predecessor's last time
        events.append((t, "enter", 1) if i % 2 == 0 else (t, "exit"))
        cpus.append(cpu)
    path = tmp_path / "cpus.trace"
    path.write_bytes(trace_builder.trace(0, 0, t + 1, t + 1, events, func_names=("f",)))
    proc = run_ulma(["export", str(path), "--format", "ctf", "-o", str(tmp_path / "cpus.ctf")])
    assert proc.returncode == 0, proc.stderr
    got = babeltrace(tmp_path / "cpus.ctf", start_ns=0)
    assert [e["cpu"] for e in got] == cpus
    assert [e["ns"] for e in got] == [ev[0] for ev in events if ev[1] != "cpu"]


def test_more_functions_than_ids_and_labels(run_ulma, tmp_path):
    """70,000 functions: past the 16-bit ids (the 32-bit entry and exit
    classes) and past the labels.  Each is defined once; every entry and
    exit names its function through its definition; the labelled ones are
    the LABELS most entered (here called 2 and 3 times, the rest once)."""
    n = NARROW_IDS + 4464
    names = ["fn_%d" % i for i in range(n)]
    calls = {i: 1 for i in range(n)}
    for i in range(0, n, 997):  # spread over the ids, some past the 16-bit ones
        calls[i] = 3
    for i in range(5, n, 1361):
        calls[i] = 2
    assert len([c for c in calls.values() if c > 1]) < LABELS
    events, t = [(0, "cpu", 0)], 0
    for i in range(n):
        for _ in range(calls[i]):
            events += [(t, "enter", i + 1), (t + 1, "exit")]
            t += 2
    path = tmp_path / "many.trace"
    path.write_bytes(trace_builder.trace(0, 0, t + 1, t + 1, events, func_names=names))
    out = tmp_path / "many.ctf"
    proc = run_ulma(["export", str(path), "--format", "ctf", "-o", str(out)])
    assert proc.returncode == 0, proc.stderr
    got = babeltrace(out, start_ns=0)
    assert len(got) == 2 * sum(calls.values())
    entries = {}
    for e in got:
        if e["event"] == "entry":
            entries[e["name"]] = entries.get(e["name"], 0) + 1
            assert (e["file"], e["line"]) == ("made.py", int(e["name"][3:]) + 1)
    assert entries == {names[i]: c for i, c in calls.items()}
    check_nesting(got)
    labelled = {e["name"] for e in got if e["label"] is not None}
    assert len(labelled) == LABELS
    assert {names[i] for i, c in calls.items() if c > 1 and i < NARROW_IDS} <= labelled
    assert any(e["id"] >= NARROW_IDS for e in got) and all((e["id"] == int(e["name"][3:])) for e in got)


def test_batched_and_per_frame_writes_agree(run_ulma, tmp_path):
    """An unfiltered export takes the walker's frames in batches
    (on_edges), a filtered one frame by frame (on_open, on_close): with a
    filter that keeps everything (--include '*'), one thread's trace gives
    the same bytes both ways, across all the batch loop leaves to the
    general writer: CPU changes inside a batch, gaps of 2^27 ns and more,
    functions used for the first time, ids past 16 bits, packets reaching
    64 KiB, and frames still open at the end (closed there)."""
    n = NARROW_IDS + 300
    events, t, cpu, depth, entries = [(0, "cpu", 0)], 0, 0, 0, 0
    for i in range(150000):
        if i % 777 == 0 and not 30000 < i < 120000:  # between them, packets of 64 KiB
            cpu = (cpu + 3) % 7
            events.append((t, "cpu", cpu))
        t += WRAP + 3 if i % 5003 == 0 else i % 5
        if depth == 0 or (depth < 12 and (i * 7919) % 5 < 3):
            events.append((t, "enter", 1 + entries % n))
            entries += 1
            depth += 1
        else:
            events.append((t, "exit"))
            depth -= 1
    assert depth > 0 and entries > n
    path = tmp_path / "paths.trace"
    path.write_bytes(trace_builder.trace(0, 0, t + 10, t + 10, events, func_names=["fn_%d" % i for i in range(n)]))
    outs = []
    for name, extra in (("batched", []), ("frames", ["--include", "*"])):
        outs.append(tmp_path / (name + ".ctf"))
        proc = run_ulma(["export", str(path), "--format", "ctf", "-o", str(outs[-1])] + extra)
        assert proc.returncode == 0, proc.stderr
    files = sorted(os.listdir(outs[0]))
    assert files == sorted(os.listdir(outs[1])) and "stream_0" in files
    assert os.path.getsize(outs[0] / "stream_0") > 8 * 65536  # many packets
    for f in files:
        assert (outs[0] / f).read_bytes() == (outs[1] / f).read_bytes(), f
    got = babeltrace(outs[0], start_ns=0)
    assert len(got) == sum(1 for ev in events if ev[1] != "cpu") + depth
    check_nesting(got)
