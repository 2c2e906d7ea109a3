"""Live blocks per function, for the comparison with tracemalloc in
tests/py/test_memory.py.  Each function keeps what it allocates in a
module list, with objects no free list recycles (no lists, tuples, dicts
or floats: their free lists hold what was freed before, by ulma's
bootstrap or by a cyclic collection whose moment the tracer's own
allocations shift) (bytes of several sizes,
plain objects, instances with __slots__, large ints, a growing
bytearray), so a traced and an untraced run allocate alike.  With
`--tracemalloc OUT` (run under -X tracemalloc) the program writes, per
function, the count and bytes of tracemalloc's live blocks whose
innermost frame is in it (the def line excluded: the function object
is its caller's)."""
import json
import sys

KEEP = []


class Point:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y


def make_bytes():
    for i in range(300):
        KEEP.append(bytes(10 + i))


def make_objects():
    for _ in range(200):
        KEEP.append(object())


def make_points():
    for i in range(150):
        KEEP.append(Point(i, i))


def make_ints():
    base = 10 ** 40
    for i in range(250):
        KEEP.append(base + i)


def grow_array():
    grown = bytearray()
    for i in range(1000):
        grown.append(i % 256)
    KEEP.append(grown)


FUNCTIONS = [make_bytes, make_objects, make_points, make_ints, grow_array, Point.__init__]


def main():
    # On 3.12+ a function's first run under sys.monitoring allocates its
    # monitoring data (72 bytes on 3.12), before its first event, so in its
    # caller: run Point.__init__ once here, not first inside make_points.
    Point(0, 0)
    make_bytes()
    make_objects()
    make_points()
    make_ints()
    grow_array()


main()

if len(sys.argv) == 3 and sys.argv[1] == "--tracemalloc":
    import tracemalloc

    snapshot = tracemalloc.take_snapshot()
    import dis

    spans = {}
    for f in FUNCTIONS:
        code = f.__code__
        spans[f.__name__] = (code.co_firstlineno, max(line for _, line in dis.findlinestarts(code) if line))
    result = {name: [0, 0] for name in spans}
    for stat in snapshot.statistics("lineno"):
        frame = stat.traceback[0]
        if frame.filename != __file__:
            continue
        for name, (first, last) in spans.items():
            if first < frame.lineno <= last:  # the def line is the function object, made by its caller
                result[name][0] += stat.count
                result[name][1] += stat.size
    with open(sys.argv[2], "w") as out:
        json.dump(result, out)
