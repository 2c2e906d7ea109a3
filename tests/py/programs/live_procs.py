"""A program for the live view's process rows (tests/py/test_live.py).

The main process starts two worker processes (multiprocessing, fork) that
compute until the file --stop FILE exists, waits for them, then sleeps until
--end FILE exists (or after --seconds S, default 60, in all).  It writes
"PARENT CHILD1 CHILD2" (the pids) to --pids FILE once the workers run.
Workers call mark() every few hundred microseconds, so the monitor samples
their CPU time and keeps their open frames current."""
import multiprocessing
import os
import sys
import time


def mark():
    pass


def spin(stop, deadline):
    while not os.path.exists(stop) and time.monotonic() < deadline:
        mark()
        n = 0
        while n < 5000:
            n += 1


def main():
    opts = {"--seconds": "60", "--stop": "", "--end": "", "--pids": ""}
    for name, value in zip(sys.argv[1::2], sys.argv[2::2]):
        opts[name] = value
    deadline = time.monotonic() + float(opts["--seconds"])
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=spin, args=(opts["--stop"], deadline)) for _ in range(2)]
    for w in workers:
        w.start()
    with open(opts["--pids"] + ".tmp", "w") as f:
        f.write("%d %d %d\n" % (os.getpid(), workers[0].pid, workers[1].pid))
    os.rename(opts["--pids"] + ".tmp", opts["--pids"])
    for w in workers:
        w.join()
    while not os.path.exists(opts["--end"]) and time.monotonic() < deadline:
        time.sleep(0.05)


if __name__ == "__main__":
    main()
