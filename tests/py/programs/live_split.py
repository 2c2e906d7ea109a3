"""A program for the live view's cpu% run% blk% columns (tests/py/test_live.py).

sleeper() sleeps and busy() runs on a CPU, in turns of 100 ms each, until the
file --stop FILE exists (or after --seconds S, default 60).  Run it with
--no-c-calls, so that the sleep is sleeper()'s own self time.  busy() calls
mark() every few hundred microseconds: those events keep the monitor
sampling the thread's CPU time every millisecond, and keep busy()'s open
frame current in the table (docs/time-split.md, docs/live.md).  Prints
"SPLIT-START" first."""
import os
import sys
import time


def mark():
    pass


def busy(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        mark()
        n = 0
        while n < 5000:
            n += 1


def sleeper(seconds):
    time.sleep(seconds)


def main():
    opts = {"--seconds": "60", "--stop": None}
    for name, value in zip(sys.argv[1::2], sys.argv[2::2]):
        opts[name] = value
    deadline = time.monotonic() + float(opts["--seconds"])
    print("SPLIT-START", flush=True)
    while time.monotonic() < deadline and not (opts["--stop"] and os.path.exists(opts["--stop"])):
        sleeper(0.1)
        busy(0.1)


if __name__ == "__main__":
    main()
