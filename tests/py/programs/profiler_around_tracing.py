"""A program whose own profilers run before, during and after a stretch of
tracing, for tests/py/test_foreign_profiler.py.

usage: python profiler_around_tracing.py inline TRACE1 TRACE2
       python profiler_around_tracing.py inline --untraced
       python profiler_around_tracing.py attach STOP_FILE

inline: cProfile is enabled around a `with ulma.profile(TRACE1):` block
(with --untraced, a block that does nothing) and prints its counts for
this file's functions; then a second block sets a Python profile function
inside, which must go on counting after the block.
attach: calls ulma.attachable(), prints "READY pid=N", and calls work()
under cProfile until STOP_FILE exists, while a monitor attaches and
detaches; prints how many calls it made and how many cProfile saw.
"""
import collections
import contextlib
import cProfile
import os
import pstats
import sys
import time


def leaf(n):
    return n * 2


def work(n):
    return sum(leaf(i) for i in range(n))


def after_block():
    return 0


def block(trace):
    if trace == "--untraced":
        return contextlib.nullcontext()
    import ulma

    return ulma.profile(trace, summary="none")


def here_rows(profiler):
    stats = pstats.Stats(profiler).stats
    return sorted((name, cc, nc, sorted((key[2], value[0]) for key, value in callers.items()))
                  for (file, _line, name), (cc, nc, _tt, _ct, callers) in stats.items() if file == __file__)


def inline(first, second):
    pr = cProfile.Profile()
    pr.enable()
    work(10)
    with block(first):
        work(20)
    work(30)
    pr.disable()
    print("cProfile around the block:", here_rows(pr))
    print("cProfile saw ulma's start-up calibration:",
          any(file == "<ulma calibration>" for file, _line, _name in pstats.Stats(pr).stats))

    calls = collections.Counter()

    def counter(frame, event, arg):
        if event == "call" and frame.f_code.co_filename == __file__:
            calls[frame.f_code.co_name] += 1

    with block(second):
        work(5)
        sys.setprofile(counter)
        print("getprofile in the block:", sys.getprofile() is counter)
        work(7)
    print("getprofile after the block:", sys.getprofile() is counter)
    for _ in range(3):
        after_block()
    sys.setprofile(None)
    print("counted by the profile function set in the block:", sorted(calls.items()))


def attach(stop):
    import ulma

    ulma.attachable()
    print("READY pid=%d" % os.getpid(), flush=True)
    made = 0
    pr = cProfile.Profile()
    pr.enable()
    while not os.path.exists(stop):
        work(3)
        made += 1
        time.sleep(0.001)
    pr.disable()
    seen = {name: nc for name, _cc, nc, _callers in here_rows(pr)}
    print("made %d, cProfile saw %d" % (made, seen.get("work", 0)), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "inline":
        inline(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else sys.argv[2])
    else:
        attach(sys.argv[2])
