"""The live view's memory columns with `ulma run --memory` (docs/live.md,
docs/memory.md): mem (bytes of a function's blocks live now) and peak
(what it held at the process's peak) end each row, and the process view
shows the process's live and peak bytes.  A function that keeps 40 MiB of
bytes objects shows 40 MiB in both; without --memory the columns are not
there.  `s` sorts by mem (memray's live view: what is held now, largest
first), functions and processes, and a function or process holding memory
keeps its row after a clear; `ulma top PID --memory` shows what a function
of the process it attached to allocated since.  Driven through tmux like
tests/py/test_live.py."""
import re
import subprocess

from conftest import TIMEOUT, base_env
from test_live import HANG, ROW, Pane, needs_tmux, pane  # noqa: F401 (pane: the tmux fixture)

MB = 40
MEM_ROW = re.compile(r"^(\S+)\s+.*\s(\d+(?:\.\d+)?)([KMG])\s+(\d+(?:\.\d+)?)([KMG])$")
SCALE = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def memory_cells(screen):
    """{first word of a row: (mem bytes, peak bytes)} for rows ending in the two columns."""
    rows = {}
    for line in screen.splitlines()[2:]:
        m = MEM_ROW.match(line.rstrip())
        if m:
            rows[m.group(1)] = (float(m.group(2)) * SCALE[m.group(3)], float(m.group(4)) * SCALE[m.group(5)])
    return rows


@needs_tmux
def test_memory_columns(pane, ulma_bin, prog, tmp_path):  # noqa: F811
    stop, trace = str(tmp_path / "stop"), str(tmp_path / "t.trace")
    p = pane([ulma_bin, "run", "--memory", "-o", trace, prog("live_memory.py"), str(MB), "--stop", stop],
             width=120, height=24)
    want = MB << 20

    def held(s):
        row = memory_cells(s).get("hold")
        return row is not None and row[0] >= want

    screen = p.wait("hold with its 40 MiB under mem", held)
    lines = screen.split("\n")
    assert lines[1].split()[-2:] == ["mem", "peak"], lines[1]
    mem, peak = memory_cells(screen)["hold"]
    assert want <= mem <= want * 1.01 and want <= peak <= want * 1.05, (mem, peak)
    p.keys("v")
    procs = p.wait("the process row with its memory", lambda s: "command" in s.split("\n")[1] and
                   re.search(r"\d+(?:\.\d+)?M\s+\d+(?:\.\d+)?M\s+\S", s.split("\n")[2] if len(s.split("\n")) > 2
                             else ""))
    header = procs.split("\n")[1].split()
    assert header[-3:] == ["mem", "peak", "command"], header
    values = re.findall(r"(\d+(?:\.\d+)?)M", procs.split("\n")[2])
    assert float(values[-2]) * (1 << 20) >= want and float(values[-1]) * (1 << 20) >= want, procs
    open(stop, "w").close()
    code, text = p.wait_exit()
    assert code == 0, text


@needs_tmux
def test_no_memory_columns_without_memory(pane, ulma_bin, prog, tmp_path):  # noqa: F811
    stop, trace = str(tmp_path / "stop"), str(tmp_path / "t.trace")
    p = pane([ulma_bin, "run", "-o", trace, prog("live_memory.py"), "1", "--stop", stop], width=120, height=24)
    screen = p.wait("the table", lambda s: any(ROW.match(l.rstrip()) and l.startswith("hold") for l in s.split("\n")))
    assert "mem" not in screen.split("\n")[1].split(), screen
    open(stop, "w").close()
    code, text = p.wait_exit()
    assert code == 0, text


def test_top_memory_once(prog, ulma_bin, tmp_path):
    """`ulma top PID --memory --once` attaches to a running program, records
    its allocations for about a second and prints the memory summary; the
    program goes on, its exit status its own."""
    from test_live_attach import Program, ulma

    p = Program(prog, ulma_bin, tmp_path, True)
    try:
        top = ulma(ulma_bin, "top", p.pid, "--memory", "--once")
        assert top.returncode == 0, top.stderr.decode()
        text = top.stdout.decode()
        assert "memory:" in text and "allocations" in text, text
        code, _, err = p.finish()
        assert code == 5, err
    finally:
        p.kill()


def rows_of(screen):
    """[(first word, mem bytes, peak bytes)] of the table's rows that end in the two columns, in screen order."""
    out = []
    for line in screen.splitlines()[2:]:
        m = MEM_ROW.match(line.rstrip())
        if m:
            out.append((m.group(1), float(m.group(2)) * SCALE[m.group(3)], float(m.group(4)) * SCALE[m.group(5)]))
    return out


def sort_by_mem(p):
    """Press s until the key line says the rows are sorted by mem."""
    for _ in range(8):
        if "s sort: mem " in p.screen():
            return
        before = p.screen().splitlines()[-1]
        p.keys("s")
        p.wait("the next sort key", lambda s: s.splitlines()[-1] != before)
    raise AssertionError("s never reached mem: " + p.screen())


def about(value, mib):
    """value is mib MiB of bytes objects (each 33 bytes over its MiB), shown to 0.1M."""
    return (mib - 0.05) * 2**20 <= value <= (mib + 0.15) * 2**20


@needs_tmux
def test_sorted_by_memory_and_kept_across_a_clear(pane, ulma_bin, prog, tmp_path):  # noqa: F811
    """programs/live_memory_sort.py: hold_a keeps 30 MiB, hold_b 10, a
    forked child's hold_child 20, then 40 tick functions keep both busy,
    so the holders are not among the busiest rows.  Sorted by mem, they
    come first, largest first, with their MiB; after a clear they keep
    their rows (with no calls since); the process view sorted by mem shows
    the parent's 40 MiB above the child's 20, each its peak at least that."""
    stop, trace = str(tmp_path / "stop"), str(tmp_path / "t.trace")
    p = pane([ulma_bin, "run", "--memory", "-o", trace, prog("live_memory_sort.py"), "30", "10", "20", "--stop", stop],
             width=120, height=30)
    try:
        p.wait("both processes' holders", lambda s: "processes 2" in s.splitlines()[0] and "tick_" in s)
        sort_by_mem(p)
        screen = p.wait("the holders first", lambda s: [r[0] for r in rows_of(s)[:3]] ==
                        ["hold_a", "hold_child", "hold_b"] and about(rows_of(s)[1][1], 20))
        header = screen.splitlines()[1].split()
        assert header[-2:] == ["mem*", "peak"], header
        (a, a_peak), (child, _), (b, b_peak) = [r[1:] for r in rows_of(screen)[:3]]
        assert about(a, 30) and about(child, 20) and about(b, 10), rows_of(screen)[:3]
        assert a_peak >= 30 * 2**20 and b_peak >= 10 * 2**20, rows_of(screen)[:3]
        mems = [r[1] for r in rows_of(screen)]
        assert mems == sorted(mems, reverse=True), mems
        p.keys("c")
        cleared = p.wait("the rows after the clear", lambda s: "cleared" in s.splitlines()[-1] and
                         [r[0] for r in rows_of(s)[:3]] == ["hold_a", "hold_child", "hold_b"])
        lines = {line.split()[0]: line.split() for line in cleared.splitlines()[2:-1] if line.strip()}
        assert [lines[f][2] for f in ("hold_a", "hold_child", "hold_b")] == ["0", "0", "0"], cleared
        assert about(rows_of(cleared)[0][1], 30), rows_of(cleared)[:3]
        p.keys("v")
        procs = p.wait("two processes by memory", lambda s: "command" in s.splitlines()[1] and
                       len(re.findall(r"live_memory_sort", s)) >= 2)
        header = procs.splitlines()[1].split()
        assert header[-3:] == ["mem*", "peak", "command"], header
        held = [[float(v) * 2**20 for v in re.findall(r"(\d+\.\d)M", line)[-2:]]
                for line in procs.splitlines()[2:] if "live_memory_sort" in line]
        assert len(held) == 2 and about(held[0][0], 40) and about(held[1][0], 20), procs
        assert held[0][1] >= held[0][0] and held[1][1] >= held[1][0], procs
    finally:
        open(stop, "w").close()
    code, text = p.wait_exit()
    assert code == 0, text


@needs_tmux
def test_top_memory_live(ulma_bin, prog, tmp_path):
    """`ulma top PID --memory` under tmux, attached to a running program:
    a function that keeps 25 MiB after the attach shows them under mem
    and peak, and the process view its process with them."""
    go, stop = str(tmp_path / "go"), str(tmp_path / "stop")
    proc = subprocess.Popen([ulma_bin, "run", "--attachable", "--no-live", prog("live_memory_attach.py"), "25",
                             "--go", go, "--stop", stop], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=base_env())
    pane_ = None
    try:
        pid = int(proc.stdout.readline().decode().split("=")[1])
        pane_ = Pane(tmp_path, [ulma_bin, "top", str(pid), "--memory"], width=120, height=24)
        pane_.wait("the attached program's rows", lambda s: "tick" in s and "mem" in s.splitlines()[1].split())
        open(go, "w").close()
        sort_by_mem(pane_)
        screen = pane_.wait("hold_late with its 25 MiB", lambda s: rows_of(s) and rows_of(s)[0][0] == "hold_late"
                            and about(rows_of(s)[0][1], 25))
        assert rows_of(screen)[0][2] >= 25 * 2**20, rows_of(screen)[0]
        pane_.keys("v")
        procs = pane_.wait("the process row", lambda s: "command" in s.splitlines()[1] and str(pid) in s)
        (line,) = [x for x in procs.splitlines()[2:] if x.split() and x.split()[0] == str(pid)]
        assert about(float(re.findall(r"(\d+\.\d)M", line)[-2]) * 2**20, 25), line
        pane_.keys("q")
        code, text = pane_.wait_exit()
        assert code == 0, text
    finally:
        open(stop, "w").close()
        try:
            proc.communicate(timeout=TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if pane_:
                pane_.close()
