"""A program that replaces the allocator itself while traced: tracemalloc
starts (wrapping whatever is installed), the program allocates, tracemalloc
stops (putting back what it found), and allocates again; with
`--leave-on` tracemalloc stays on to the end, so ulma stops under it.
Each phase keeps K objects in a function of its own."""
import sys
import tracemalloc

K = int(sys.argv[1])
LEAVE_ON = "--leave-on" in sys.argv
KEEP = []


def before(k):
    for _ in range(k):
        KEEP.append(object())


def during(k):
    for _ in range(k):
        KEEP.append(object())


def after(k):
    for _ in range(k):
        KEEP.append(object())


before(K)
tracemalloc.start()
during(K)
current, _ = tracemalloc.get_traced_memory()
if not LEAVE_ON:
    tracemalloc.stop()
after(K)
print("tracemalloc saw", current > 0)
