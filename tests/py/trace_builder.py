"""Hand-made traces for tests that need what `ulma run` never writes (times
near 2^64, say) or what it cannot write yet: the file format of
docs/trace-format.md from Python.  Only what such tests need: META,
definitions, threads, enter and exit events, END (trace: version 2); and
with source copies, line events, off-CPU intervals and the hook's measured
cost (lines_trace: version 5); many threads, each calling one function
once (threads_trace: version 2)."""
import struct

META, DEFS, THREAD, EVENTS, END, OVERHEAD = 1, 2, 3, 4, 5, 7
PY = 1


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def string(s):
    b = s.encode()
    return varint(len(b)) + b


def chunk(kind, payload):
    return struct.pack("<III", kind, len(payload), crc32c(payload)) + payload


def trace(start_ticks, start_ns, end_ticks, end_ns, events, pid=7, command="made.py", func_names=("main",)):
    """A complete trace of one thread (tid = pid) whose ticks are ns.
    events: [(ticks, "enter", func_index), (ticks, "exit") or (ticks,
    "cpu", n): the events after it ran on CPU n (not an event itself; its
    ticks must be those of the event before it, or of the first)], in time
    order; functions are numbered from 1 in func_names' order, in made.py."""
    meta = varint(0) + varint(pid) + varint(start_ticks) + varint(start_ns) + varint(10**9) + string(command)
    defs = bytearray(varint(1) + varint(0) + string("made.py"))  # grown in place: tens of thousands of functions
    for i, name in enumerate(func_names, 1):
        defs += varint(2) + varint(i) + varint(PY) + varint(0) + varint(i) + string(name)
    out = b"ULMATRC\x01" + struct.pack("<II", 2, 0)
    out += chunk(META, meta) + chunk(DEFS, bytes(defs))
    out += chunk(THREAD, varint(0) + varint(pid) + varint(pid))
    # a delta must fit in 62 bits beside its tag: past that, a new chunk, which opens with an absolute time
    runs = []
    for ev in events:
        if not runs or ev[0] - runs[-1][-1][0] >= 2**62:
            runs.append([])
        runs[-1].append(ev)
    for run in runs:
        body, last = bytearray(varint(run[0][0])), run[0][0]
        for ev in run:
            delta, last = ev[0] - last, ev[0]
            if ev[1] == "cpu":
                assert delta == 0, "a cpu change carries no time"
                body += varint(EXT) + varint(EXT_CPU) + varint(ev[2])
            else:
                body += varint(delta << 2 | 1) + varint(ev[2]) if ev[1] == "enter" else varint(delta << 2)
        counted = sum(1 for ev in run if ev[1] != "cpu")
        out += chunk(EVENTS, varint(0) + varint(counted) + varint(0) + bytes(body))
    end = [end_ticks, end_ns, sum(1 for ev in events if ev[1] != "cpu"), 0, 0, 0]
    return out + chunk(END, b"".join(varint(v) for v in end))


def threads_trace(nthreads, pid=7, command="made.py"):
    """A complete trace of nthreads threads of one process (tids pid + 1...),
    thread k calling "work" once from k * 10 to k * 10 + 5 ns."""
    end_ns = nthreads * 10 + 10
    meta = varint(0) + varint(pid) + varint(0) + varint(0) + varint(10**9) + string(command)
    defs = varint(1) + varint(0) + string("made.py") + varint(2) + varint(1) + varint(PY) + varint(0) + varint(1)
    defs += string("work")
    out = b"ULMATRC\x01" + struct.pack("<II", 2, 0) + chunk(META, meta) + chunk(DEFS, defs)
    for k in range(nthreads):
        out += chunk(THREAD, varint(k) + varint(pid) + varint(pid + 1 + k))
        body = varint(k * 10) + varint(0 << 2 | 1) + varint(1) + varint(5 << 2)
        out += chunk(EVENTS, varint(k) + varint(2) + varint(0) + body)
    end = [end_ns, end_ns, 2 * nthreads, 0, 0, 0]
    return out + chunk(END, b"".join(varint(v) for v in end))


EXT = 3
EXT_CPU, EXT_OFF, EXT_LINE, EXT_LINE_RESUME = 0, 2, 6, 7
OFF_STATES = {"blocked": 0, "runnable": 1, "gil": 2}
SOURCE_CHANGED, SOURCE_CUT = 1, 2
SPLIT_NONE, SPLIT_SWITCHES = 0, 2


def lines_trace(files, funcs, events, end_ticks, overhead_ps=None, split=SPLIT_SWITCHES, pid=7, command="made.py"):
    """A complete version-5 trace of one thread (tid = pid) whose ticks are
    ns, starting at 0.
    files: [(path, source text or None, source flags)], numbered from 0;
    funcs: [(name, file index, line)], numbered from 1;
    events, in time order: (t, "enter", func), (t, "exit"), (t, "line", n)
    (a hit), (t, "resume", n) (a generator resumed inside line n) or
    (t, "off", "blocked" | "runnable" | "gil", ns) (off the CPU from t);
    overhead_ps: the hook's measured cost per event, if any."""
    meta = varint(0) + varint(pid) + varint(0) + varint(0) + varint(10**9) + string(command)
    defs = b""
    for i, (path, text, flags) in enumerate(files):
        defs += varint(1) + varint(i) + string(path)
        if text is not None:
            defs += varint(3) + varint(i) + varint(flags) + string(text)
    for i, (name, file_index, line) in enumerate(funcs, 1):
        defs += varint(2) + varint(i) + varint(PY) + varint(file_index) + varint(line) + string(name)
    out = b"ULMATRC\x01" + struct.pack("<II", 5, 0) + chunk(META, meta) + chunk(DEFS, defs)
    if overhead_ps is not None:
        out += chunk(OVERHEAD, varint(overhead_ps))
    out += chunk(THREAD, varint(0) + varint(pid) + varint(pid))
    body, last, counted = bytearray(varint(events[0][0] if events else 0)), events[0][0] if events else 0, 0
    for ev in events:
        delta, last = ev[0] - last, ev[0]
        kind = ev[1]
        if kind == "enter":
            body += varint(delta << 2 | 1) + varint(ev[2])
        elif kind == "exit":
            body += varint(delta << 2)
        elif kind in ("line", "resume"):
            body += varint(delta << 2 | EXT) + varint(EXT_LINE if kind == "line" else EXT_LINE_RESUME) + varint(ev[2])
        elif kind == "off":
            body += varint(delta << 2 | EXT) + varint(EXT_OFF) + varint(OFF_STATES[ev[2]]) + varint(ev[3])
            continue  # not counted as an event
        else:
            raise ValueError(kind)
        counted += 1
    out += chunk(EVENTS, varint(0) + varint(counted) + varint(0) + bytes(body))
    end = [end_ticks, end_ticks, counted, 0, 0, 0, split, 0, 0, 0, 0]
    return out + chunk(END, b"".join(varint(v) for v in end))
