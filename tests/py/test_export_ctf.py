"""`ulma export --format ctf`: a CTF 1.8 trace directory, read back with
babeltrace2 (Debian's, installed by scripts/ensure-deps.sh).

babeltrace2 prints every event without complaint; the count equals the
trace's events; entries per function equal calls, every entry has its
exit; every event carries pid, tid and cpu_id; odd names survive; a
directory is replaced only when empty, and a failed export leaves no
temporary directory.
"""
import os
import re
import shutil
import subprocess

import pytest

from export_helpers import ODD_NAMES, export_trace, no_temp_files, run_export  # noqa: F401

pytestmark = pytest.mark.skipif(
    shutil.which("babeltrace2") is None, reason="babeltrace2 not installed (scripts/ensure-deps.sh installs it)"
)

EVENT = re.compile(
    r'^\[[0-9:.]+\] \([+?0-9.]+\) ulma:function_(?P<kind>entry|exit): '
    r"\{ pid = (?P<pid>\d+), tid = (?P<tid>\d+) \}, \{ cpu_id = (?P<cpu>\d+) \}, "
    r'\{ name = "(?P<name>(?:[^"\\]|\\.)*)", '
    r'(?:file = "(?P<file>(?:[^"\\]|\\.)*)", line = (?P<line>\d+), '
    r'kind = \( "(?P<fkind>python|c|native|zone|other)" : container = (?P<kindval>\d+) \)'
    r'|duration_ns = (?P<dur>\d+), self_ns = (?P<self>\d+)) \}$'
)


# ulma records every Python thread's name (docs/hooks.md, "Thread names"): a
# thread_name event, which is a mark, not one of the trace's events
THREAD_NAME = re.compile(
    r'^\[[0-9:.]+\] \([+?0-9.]+\) ulma:thread_name: '
    r"\{ pid = (?P<pid>\d+), tid = (?P<tid>\d+) \}, \{ cpu_id = (?P<cpu>\d+) \}, "
    r'\{ name = "(?P<name>(?:[^"\\]|\\.)*)" \}$'
)

ESCAPES = {"?": "?", "n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", '"': '"', "'": "'", "\\": "\\"}


def unescape(s):
    """A string as babeltrace2's text sink escapes it (C escapes, UTF-8 raw)."""
    return re.sub(r"\\(.)", lambda m: ESCAPES[m.group(1)], s)


def babeltrace(path):
    proc = subprocess.run(["babeltrace2", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert proc.stderr == b"", proc.stderr.decode(errors="replace")
    lines = proc.stdout.decode("utf-8").split("\n")
    assert lines[-1] == ""
    events = []
    names = set()
    for line in lines[:-1]:
        m = THREAD_NAME.match(line)
        if m:
            names.add(unescape(m.group("name")))
            continue
        m = EVENT.match(line)
        assert m, "unexpected babeltrace2 line: %r" % line
        events.append(m.groupdict())
    assert "MainThread" in names or not events, names
    return events


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
    exits = 0
    for e in varied["events"]:
        if e["kind"] == "entry":
            k = (unescape(e["name"]), unescape(e["file"]), int(e["line"]))
            got[k] = got.get(k, 0) + 1
            assert e["fkind"] == kinds[k], (k, e["fkind"])  # the definition's kind, as an enumeration
        else:
            exits += 1
            assert int(e["self"]) <= int(e["dur"])
    assert got == want
    assert exits == sum(want.values())


def test_threads_and_cpus(varied):
    per_thread = {}
    for e in varied["events"]:
        key = (int(e["pid"]), int(e["tid"]))
        per_thread[key] = per_thread.get(key, 0) + 1
        assert 0 <= int(e["cpu"]) < 4096
    want = {(t["pid"], t["tid"]): t["events"] for t in varied["report"]["thread_list"]}
    assert per_thread == want


def test_exit_durations(export_trace, run_export, tmp_path):
    """main's exit carries its total time, the report's total_ns."""
    t = export_trace("fib_calls.py")
    run_export(t["trace"], "ctf", tmp_path / "fib.ctf")
    events = babeltrace(tmp_path / "fib.ctf")
    main = [e for e in events if e["kind"] == "exit" and e["name"] == "main"]
    row = [f for f in t["report"]["functions"] if f["name"] == "main"][0]
    assert len(main) == 1 and abs(int(main[0]["dur"]) - row["total_ns"]) <= 5 + row["total_ns"] // 1000


def test_odd_names(export_trace, run_export, tmp_path):
    t = export_trace("odd_names.py")
    run_export(t["trace"], "ctf", tmp_path / "odd.ctf")
    got = {}
    for e in babeltrace(tmp_path / "odd.ctf"):
        if e["kind"] == "entry":
            name = unescape(e["name"])
            got[name] = got.get(name, 0) + 1
    for i, name in enumerate(ODD_NAMES):
        assert got.get(name) == i + 1, (name, sorted(got))


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
        if e["kind"] == "entry":
            k = (unescape(e["name"]), unescape(e["file"]), int(e["line"]))
            entries[k] = entries.get(k, 0) + 1
    assert entries[("f", "", 1)] == 3, sorted(entries)
    assert entries[("?", t["path"], 8)] == 2, sorted(entries)
