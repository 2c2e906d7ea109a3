"""capture_rings.py - fuzz_rings' seeds from real rings.

Run under `ulma run` (it reads its own session):

    ulma run [--memory] [--lines work] tests/fuzz/capture_rings.py WORKLOAD OUT

It stops its monitor (its parent) with SIGSTOP, so nothing is drained,
runs WORKLOAD (calls, threads, marks, memory, lines), then copies from the
session, as the program's writers left them, the records each of its
threads wrote meanwhile (those published and the unpublished ones after
them) and the definitions those records use and the one naming the
process, verbatim, into OUT in
fuzz_rings' layout (tests/fuzz/ring_seeds.h), and lets the monitor go on.
The session's layout is read from its header (include/ulma/shm.h).
The seeds in tests/fuzz/ring-seeds were made with Python 3.12 as

    for w in calls threads marks; do ulma run capture_rings.py $w $w.seed; done
    ulma run --memory capture_rings.py memory memory.seed
    ulma run --memory capture_rings.py calls calls-memory.seed
    ulma run --lines work capture_rings.py lines lines.seed

(the records of a session version; remake them when the records change).
"""
import mmap
import os
import signal
import struct
import sys
import threading

import ulma

SLOT_BYTES = 192
RECORD = struct.Struct("<QIHBB")  # time, id, cpu, kind, flags
DEF_HEAD = struct.Struct("<IIIIBBHHH")  # size, magic, id, line, kind, reserved, name_len, file_len, reserved2
DEF_MAGIC = 0x46454455
ENTER, EXIT, INSTANT, COUNTER, THREAD_NAME, OBJ_NEW, OBJ_FREE = 1, 2, 7, 9, 10, 16, 17
PROCESS = 13  # the definition kind naming a process
NAMED = {ENTER, EXIT, INSTANT, COUNTER, THREAD_NAME, OBJ_NEW, OBJ_FREE}
SEED_RECORDS = 256  # the ring of fuzz_rings
MAX_RECORDS = 400   # over all slots: fuzz inputs stay under 8 KiB
OPT_MEMORY, OPT_TRACE = 1, 2


class Session:
    def __init__(self):
        fd = os.open(os.environ["ULMA_SESSION_PATH"], os.O_RDWR)
        size = os.fstat(fd).st_size
        self.map = mmap.mmap(fd, size)
        os.close(fd)
        m = self.map
        (self.flags, self.slot_count, self.ring_records, _rsize, self.slots_offset, self.rings_offset,
         self.defs_offset, self.defs_size) = struct.unpack_from("<IIIIQQQQ", m, 24)

    def slot(self, i):
        base = self.slots_offset + i * SLOT_BYTES
        state, pid, tid = struct.unpack_from("<III", self.map, base)
        head = struct.unpack_from("<Q", self.map, base + 64)[0]
        return state, pid, tid, head

    def record(self, i, pos):
        at = self.rings_offset + (i * self.ring_records + pos % self.ring_records) * RECORD.size
        return self.map[at:at + RECORD.size]

    def defs_used(self):
        return struct.unpack_from("<Q", self.map, 144)[0]  # after the geometry and a cache line of padding

    def definitions(self):
        """Every complete entry: id -> (its kind, its line, its bytes)."""
        out, off, used = {}, 0, min(self.defs_used(), self.defs_size)
        while off + DEF_HEAD.size <= used:
            size, magic, did, line, kind = DEF_HEAD.unpack_from(self.map, self.defs_offset + off)[:5]
            if size == 0 or magic != DEF_MAGIC:
                break
            out[did] = (kind, line, self.map[self.defs_offset + off:self.defs_offset + off + size])
            off += size
        return out

    def mine(self):
        """This process's slots in use, in a few calls (each is a record of the capture)."""
        area = self.map[self.slots_offset:self.slots_offset + self.slot_count * SLOT_BYTES]
        me = (2, os.getpid())
        return [i for i, sp in enumerate(struct.iter_unpack("<II184x", area)) if sp == me]

    def heads(self, slots):
        return {i: struct.unpack_from("<Q", self.map, self.slots_offset + i * SLOT_BYTES + 64)[0] for i in slots}


def unpublished(s, i, head, last):
    """The records after head the thread wrote but not published yet, as the monitor's salvage takes them."""
    out = []
    for k in range(32):
        raw = s.record(i, head + k)
        t, _id, _cpu, kind, _flags = RECORD.unpack(raw)
        if kind < 1 or kind > 21 or t < last or t == 0:
            break
        out.append(raw)
        last = t
    return out


def capture(s, before, after, options):
    defs = s.definitions()
    slots, used, room = [], set(), MAX_RECORDS
    for i, head in sorted(after.items()):
        start = before.get(i, 0)
        if head <= start or room <= 0:
            continue
        recs = [s.record(i, p) for p in range(start, head)]
        extra = unpublished(s, i, head, RECORD.unpack(recs[-1])[0])
        if len(recs) + len(extra) > room:  # the first ones: the workload's
            recs, extra = recs[:room], []
        room -= len(recs) + len(extra)
        skew = -len(extra)
        tail = start % SEED_RECORDS
        recs += extra
        for raw in recs:
            _t, rid, _cpu, kind, _flags = RECORD.unpack(raw)
            if kind in NAMED and rid in defs:
                used.add(rid)
        slots.append(struct.pack("<BBBbH", 2, len(slots), tail, skew, len(recs)) + b"".join(recs))
    area = b"".join(raw for d, (kind, line, raw) in defs.items()  # in the area's order
                    if d in used or (kind == PROCESS and line == os.getpid()))
    return struct.pack("<BBH", options, 255, len(area)) + area + b"".join(slots[:4])


def calls():
    def leaf(n):
        return sum(range(n))

    def gen(n):
        for i in range(n):
            yield leaf(i)

    def fails():
        raise ValueError("x")

    class K:
        def method(self):
            return len([leaf(2)])

    total = sum(gen(4)) + K().method()
    try:
        fails()
    except ValueError:
        total += 1
    return total


def threads():
    out = []
    t = threading.Thread(target=lambda: out.append(calls()))
    t.start()
    t.join()
    return calls() + out[0]


def marks():
    ulma.thread_name("capture")
    with ulma.zone("zone"):
        ulma.instant("instant")
        ulma.counter("counter", 2.5)
    return calls()


def memory():
    keep = [bytearray(n) for n in (8, 100, 2000, 70000)]
    d = {i: str(i) for i in range(5)}
    del keep[1]
    return len(keep) + len(d)


def work():
    return sum(i * i for i in range(3))  # --lines work: its lines


WORKLOADS = {"calls": calls, "threads": threads, "marks": marks, "memory": memory, "lines": work}


def main():
    workload, out = WORKLOADS[sys.argv[1]], sys.argv[2]
    s = Session()
    options = OPT_TRACE | (OPT_MEMORY if s.flags & (1 << 3) else 0)
    monitor = os.getppid()
    workload()  # its definitions first: the capture has the calls, not the first-call interning alone
    slots = s.mine()
    os.kill(monitor, signal.SIGSTOP)
    try:
        before = s.heads(slots)  # (the records of this line come before the workload's)
        workload()
        after = s.heads(s.mine())
        seed = capture(s, before, after, options)
    finally:
        os.kill(monitor, signal.SIGCONT)
    with open(out, "wb") as f:
        f.write(seed)
    print("%s: %d bytes" % (out, len(seed)))


if __name__ == "__main__":
    main()
