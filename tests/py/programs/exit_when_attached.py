"""A program for tests/py/test_live_attach.py: it makes itself attachable,
prints "ATTACHABLE pid=N", calls work() until its own control file says a
monitor has attached, calls work() a few more times and exits with code 7
at once.  The recorder then meets a program that is attached and already
ending, the window in which `ulma record` once wrongly failed."""
import os
import struct
import sys
import time

import ulma


def work(n):
    return sum(i * i for i in range(n))


def attached(path):
    with open(path, "rb") as f:
        return struct.unpack_from("<III", f.read(), 40)[2] == 1


def main():
    path = ulma.attachable()
    print("ATTACHABLE pid=%d" % os.getpid(), flush=True)
    deadline = time.monotonic() + 30
    while not attached(path):
        work(100)
        time.sleep(0.001)
        if time.monotonic() > deadline:
            print("never attached", flush=True)
            sys.exit(3)
    for _ in range(5):
        work(100)
    sys.exit(7)


main()
