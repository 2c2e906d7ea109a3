"""A process that leaves by os._exit inside grow(), while it holds MB MiB
(a bytearray, every page touched) in a sleep of HOLD seconds: its last
records are never published, so the monitor salvages them from its ring
(tests/py/test_memory_rss.py).  With 'fork', a forked child does it and
the parent waits for it; else the program itself."""
import os
import sys
import time

MB = int(sys.argv[1])
HOLD = float(sys.argv[2])
FORK = sys.argv[3:] == ["fork"]


def grow():
    block = bytearray(MB << 20)
    block[::4096] = b"\1" * len(range(0, MB << 20, 4096))
    time.sleep(HOLD)
    os._exit(0)


def main():
    time.sleep(0.1)
    if FORK:
        pid = os.fork()
        if pid == 0:
            grow()
        os.waitpid(pid, 0)
        time.sleep(0.1)
    else:
        grow()


main()
