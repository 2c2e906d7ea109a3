"""A program for the live view's nat% column (tests/py/test_live.py).

in_c() spends its time in a C builtin that computes (sum over a range: the
loop runs in C), in_python() in a loop of Python bytecode that calls
nothing but a clock now and then; each for 100 ms a turn, until the file
--stop FILE exists (or after --seconds S, default 60).  Prints
"NATIVE-START" first."""
import os
import sys
import time


def in_c(seconds):
    end = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < end:
        total += sum(range(100000))
    return total


def in_python(seconds):
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        k = 0
        while k < 20000:
            k += 1
        n += k
    return n


def main():
    opts = {"--seconds": "60", "--stop": None}
    for name, value in zip(sys.argv[1::2], sys.argv[2::2]):
        opts[name] = value
    deadline = time.monotonic() + float(opts["--seconds"])
    print("NATIVE-START", flush=True)
    while time.monotonic() < deadline and not (opts["--stop"] and os.path.exists(opts["--stop"])):
        in_c(0.1)
        in_python(0.1)


if __name__ == "__main__":
    main()
