"""A program for the live view's memory columns (tests/py/test_live_memory.py):
hold() keeps MB bytes objects of 1 MiB, then waits, calling a little
function now and then, until the file --stop FILE exists."""
import os
import sys
import time

MB = int(sys.argv[1])
STOP = sys.argv[sys.argv.index("--stop") + 1]
KEEP = []


def tick():
    return sum(range(100))


def hold(mb):
    for _ in range(mb):
        KEEP.append(bytes(1 << 20))
    while not os.path.exists(STOP):
        tick()
        time.sleep(0.02)


hold(MB)
