"""For `ulma top PID --memory` (tests/py/test_live_memory.py): runs
attachable, prints its pid, and once the file --go FILE exists hold_late
keeps MB bytes objects of 1 MiB; calls a little function now and then
until the file --stop FILE exists.  Argument: MB --go FILE --stop FILE."""
import os
import sys
import time

MB = int(sys.argv[1])
GO = sys.argv[sys.argv.index("--go") + 1]
STOP = sys.argv[sys.argv.index("--stop") + 1]
KEEP = []


def hold_late(mb):
    for _ in range(mb):
        KEEP.append(bytes(1 << 20))


def tick():
    return sum(range(100))


print("pid=%d" % os.getpid(), flush=True)
held = False
while not os.path.exists(STOP):
    tick()
    time.sleep(0.01)
    if not held and os.path.exists(GO):
        hold_late(MB)
        held = True
