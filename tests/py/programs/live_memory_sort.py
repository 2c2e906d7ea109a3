"""For the live view's memory sort (tests/py/test_live_memory.py): hold_a
keeps A MiB and hold_b B MiB of bytes objects, a forked child keeps C MiB
in hold_child; then both call 40 small functions (tick_0 ... tick_39, made
by exec) now and then until the file --stop FILE exists, so that the
functions holding memory are not among the busiest rows.
Arguments: A B C --stop FILE."""
import os
import sys
import time

A, B, C = (int(a) for a in sys.argv[1:4])
STOP = sys.argv[sys.argv.index("--stop") + 1]
KEEP = []


def hold_a(mb):
    for _ in range(mb):
        KEEP.append(bytes(1 << 20))


def hold_b(mb):
    for _ in range(mb):
        KEEP.append(bytes(1 << 20))


def hold_child(mb):
    for _ in range(mb):
        KEEP.append(bytes(1 << 20))


SPACE = {}
for k in range(40):
    exec("def tick_%d():\n    return sum(range(%d))\n" % (k, 100 + k), SPACE)
TICKS = [SPACE["tick_%d" % k] for k in range(40)]


def spin():
    while not os.path.exists(STOP):
        for tick in TICKS:
            tick()
        time.sleep(0.01)


hold_a(A)
hold_b(B)
pid = os.fork()
if pid == 0:
    hold_child(C)
    spin()
    os._exit(0)
spin()
os.waitpid(pid, 0)
