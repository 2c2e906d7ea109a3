"""An independent reading of a Perfetto trace: the protobuf wire format
walked field by field (https://protobuf.dev/programming-guides/encoding/),
with the field numbers of Perfetto's protos (trace_packet.proto,
track_event/track_event.proto, interned_data.proto, clock_snapshot.proto,
track_descriptor.proto, ftrace/ftrace_event_bundle.proto,
ftrace/ftrace_event.proto, ftrace/sched.proto), written from those files and not from ulma's
encoder.  It replays what a reader does: sequences, interned names, the
incremental clock, packet defaults, and rebuilds each track's slices.
A packet's compressed_packets (field 50: a serialized Trace, zlib) is
inflated with Python's zlib and its packets read in its place.
"""
import struct
import zlib


def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i
        if shift > 63:
            raise ValueError("varint too long")


def fields(buf):
    """(field number, wire type, value) of a message: value is an int, or bytes."""
    i, n = 0, len(buf)
    while i < n:
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 1:
            v = buf[i:i + 8]
            i += 8
        elif wt == 2:
            ln, i = varint(buf, i)
            v = buf[i:i + ln]
            i += ln
        elif wt == 5:
            v = buf[i:i + 4]
            i += 4
        else:
            raise ValueError("wire type %d" % wt)
        if i > n:
            raise ValueError("field runs past its message")
        yield num, wt, v


def packets(data, counts):
    """The Trace's packets as firsts() of each, those inside
    compressed_packets inflated in place."""
    for num, wt, pkt in fields(data):
        assert num == 1 and wt == 2, "a Trace holds only packets (field 1)"
        top = firsts(pkt)
        packed = top.get(50)
        if packed is None:
            yield top
            continue
        assert [f for f, _, _ in fields(pkt)] == [50], "compressed_packets alone in its packet"
        counts["compressed"] += 1
        yield from packets(zlib.decompress(packed), counts)


def first(buf, num, default=None):
    for f, _, v in fields(buf):
        if f == num:
            return v
    return default


def firsts(buf):
    """{field number: its first value} of a message: first() for every
    field at once, for messages read field after field (packets, events)."""
    found = {}
    for f, _, v in fields(buf):
        if f not in found:
            found[f] = v
    return found


class Trace:
    """Everything the test compares: tracks, slices per track, instants,
    counter values, thread and process names."""

    def __init__(self, data):
        self.packets = 0  # packets read, those inflated from compressed_packets included
        self.tracks = {}      # uuid -> {"name", "pid", "tid", "parent", "counter"}
        self.slices = []      # (track uuid, name, category or None, start ns, end ns, depth)
        self.instants = []    # (track uuid, name, ns)
        self.counters = []    # (track uuid, value, ns)
        self.flows = []       # (track uuid, name, ns, flow id, True where it starts, False where it ends)
        self.thread_names = {}
        self.process_names = {}
        self.switches = []    # (cpu, ns, prev pid, prev state, next pid, prev comm, next comm): ftrace sched_switch
        self.clocks = []      # the global clock snapshots: {clock id: ns}
        seqs = {}
        stacks = {}
        counts = {"compressed": 0}
        for pkt in packets(data, counts):
            self.packets += 1
            seq_id = pkt.get(10, 0)
            seq = seqs.setdefault(seq_id, {"names": {}, "cats": {}, "clock": None, "track": None, "clock_id": 0,
                                           "cleared": False})
            if pkt.get(13, 0) & 1:
                seq.update(names={}, cats={}, cleared=True)
            defaults = pkt.get(59)
            if defaults is not None:
                seq["clock_id"] = first(defaults, 58, 0)
                ted = first(defaults, 11)
                seq["track"] = first(ted, 11) if ted is not None else None
            interned = pkt.get(12)
            if interned is not None:
                for f, _, v in fields(interned):
                    if f in (1, 2):
                        (seq["cats"] if f == 1 else seq["names"])[first(v, 1)] = first(v, 2).decode()
            bundle = pkt.get(1)  # ftrace_events: FtraceEventBundle {cpu = 1, event = 2}
            if bundle is not None:
                self._ftrace(bundle)
                continue
            snap = pkt.get(6)
            if snap is not None:
                clocks = {first(c, 1): first(c, 2) for f, _, c in fields(snap) if f == 1}
                if 64 not in clocks:  # no incremental clock: a global tie between clocks
                    self.clocks.append(clocks)
                    continue
                seq["clock"] = clocks[64] - clocks[3]  # ns since MONOTONIC's value, kept as MONOTONIC
                seq["mono"] = clocks[3]
                continue
            desc = pkt.get(60)
            if desc is not None:
                self._descriptor(desc)
            ev = pkt.get(11)
            if ev is None:
                continue
            event = firsts(ev)
            assert seq["cleared"], "an event before its sequence cleared its state"
            assert seq["clock_id"] == 64
            seq["clock"] += pkt.get(8)
            ts = seq["clock"] + seq["mono"]
            track = event.get(11, seq["track"])
            kind = event.get(9)
            name_iid = event.get(10)
            name = seq["names"][name_iid] if name_iid is not None else None
            cat_iid = event.get(3)
            cat = seq["cats"][cat_iid] if cat_iid is not None else None
            stack = stacks.setdefault(track, [])
            if kind == 1:
                stack.append((name, cat, ts))
            elif kind == 2:
                name, cat, start = stack.pop()
                assert ts >= start
                self.slices.append((track, name, cat, start, ts, len(stack)))
            elif kind == 3:
                name = name if name is not None else event.get(23, b"").decode()
                self.instants.append((track, name, ts))
                for f, _, v in fields(ev):
                    if f in (47, 48):
                        self.flows.append((track, name, ts, struct.unpack("<Q", v)[0], f == 47))
            elif kind == 4:
                self.counters.append((track, struct.unpack("<d", event.get(44))[0], ts))
        self.open_at_end = sum(len(s) for s in stacks.values())
        self.compressed = counts["compressed"]  # packets that held compressed_packets

    def _ftrace(self, bundle):
        cpu = first(bundle, 1)
        for f, _, ev in fields(bundle):
            if f != 2:
                continue
            sw = first(ev, 4)  # FtraceEvent {timestamp = 1, pid = 2, sched_switch = 4}
            assert sw is not None, "only sched_switch events"
            prev_pid = first(sw, 2)
            assert first(ev, 2) == prev_pid, "the event's pid is the task switched out"
            self.switches.append((cpu, first(ev, 1), prev_pid, first(sw, 4), first(sw, 6),
                                  first(sw, 1).decode(), first(sw, 5).decode()))

    def _descriptor(self, d):
        uuid = first(d, 1)
        t = self.tracks.setdefault(uuid, {})
        name = first(d, 2)
        if name is not None:
            t["name"] = name.decode()
        if first(d, 5) is not None:
            t["parent"] = first(d, 5)
        t["counter"] = first(d, 8) is not None
        proc = first(d, 3)
        if proc is not None:
            pid = first(proc, 1)
            t["pid"] = pid
            pname = first(proc, 6)
            if pname is not None:
                self.process_names[pid] = pname.decode()
        th = first(d, 4)
        if th is not None:
            t["pid"], t["tid"] = first(th, 1), first(th, 2)
            tname = first(th, 5)
            if tname is not None:
                self.thread_names[t["tid"]] = tname.decode()


def lane_mismatches(switches):
    """The sched_switch events whose previous task is not the one the CPU
    ran, taking each CPU's events in time order (and in file order at one
    time) from idle: what the trace processor counts as
    mismatched_sched_switch_tids."""
    by_cpu = {}
    for i, s in enumerate(switches):
        by_cpu.setdefault(s[0], []).append((s[1], i, s))
    bad = []
    for events in by_cpu.values():
        running = 0
        for _, _, s in sorted(events):
            if s[2] != running:
                bad.append(s)
            running = s[4]
    return bad
