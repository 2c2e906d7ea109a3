"""The live view's memory columns with `ulma run --memory` (docs/live.md,
docs/memory.md): mem (bytes of a function's blocks live now) and peak
(what it held at the process's peak) end each row, and the process view
shows the process's live and peak bytes.  A function that keeps 40 MiB of
bytes objects shows 40 MiB in both; without --memory the columns are not
there.  Driven through tmux like tests/py/test_live.py."""
import re

from test_live import HANG, ROW, needs_tmux, pane  # noqa: F401 (pane: the tmux fixture)

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
