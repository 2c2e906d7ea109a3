"""A program for the live view's gil% column (tests/py/test_live.py).

Two threads run contend(), pure Python on a CPU, until the file --stop FILE
exists (or after --seconds S, default 60), so each waits for the GIL the
other holds much of the time.  contend() calls mark() every few hundred
microseconds, which keeps the monitor sampling both threads, and looks for
the stop file only every 50 ms: the stat call lets the GIL go, and the
wait to take it back would be the stat's rather than contend()'s.  The
main thread waits in join().  Prints "GIL-START" first."""
import os
import sys
import threading
import time


def mark():
    pass


def contend(deadline, stop):
    look = 0.0
    while time.monotonic() < deadline:
        if time.monotonic() >= look:
            if stop and os.path.exists(stop):
                break
            look = time.monotonic() + 0.05
        mark()
        n = 0
        while n < 5000:
            n += 1


def main():
    opts = {"--seconds": "60", "--stop": None}
    for name, value in zip(sys.argv[1::2], sys.argv[2::2]):
        opts[name] = value
    deadline = time.monotonic() + float(opts["--seconds"])
    print("GIL-START", flush=True)
    threads = [threading.Thread(target=contend, args=(deadline, opts["--stop"])) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
