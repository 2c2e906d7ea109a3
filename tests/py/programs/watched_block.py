"""A `with ulma.profile():` block in a program that watches itself with its
own tracer or profiler, for tests/py/test_foreign_profiler.py.

usage: python watched_block.py MODE TRACE

MODE is one of
  settrace        a sys.settrace function of the program's runs around the block
  profile-thread  cProfile runs around the block, while a second thread is alive
                  across the whole block
  profile-ends    the same, but the second thread ends inside the block

Prints whether the program's tracer or profiler saw ulma's calibration
("saw ulma's calibration: False" is right), and how many calls of work()
and leaf() it counted (the block's included).
"""
import cProfile
import pstats
import sys
import threading

import ulma

CALIBRATION = "<ulma calibration>"


def leaf(n):
    return n + 1


def work(n):
    s = 0
    for i in range(n):
        s = leaf(s)
    return s


def with_settrace(trace):
    calls = {}

    def tracer(frame, event, arg):
        if event == "call":
            key = frame.f_code.co_filename if frame.f_code.co_filename == CALIBRATION else frame.f_code.co_name
            calls[key] = calls.get(key, 0) + 1
        return None

    sys.settrace(tracer)
    work(5)
    with ulma.profile(trace, summary="none"):
        work(10)
    work(20)
    sys.settrace(None)
    return CALIBRATION in calls, calls.get("work", 0), calls.get("leaf", 0)


def with_cprofile(trace, thread_ends):
    release = threading.Event()
    helper = threading.Thread(target=release.wait)
    helper.start()
    pr = cProfile.Profile()
    pr.enable()
    work(5)
    with ulma.profile(trace, summary="none"):
        work(10)
        if thread_ends:
            release.set()
            helper.join()
    work(20)
    pr.disable()
    release.set()
    helper.join()
    stats = pstats.Stats(pr).stats
    seen = any(file == CALIBRATION for file, _line, _name in stats)
    count = {name: nc for (file, _line, name), (_cc, nc, _tt, _ct, _callers) in stats.items() if file == __file__}
    return seen, count.get("work", 0), count.get("leaf", 0)


def main():
    mode, trace = sys.argv[1], sys.argv[2]
    if mode == "settrace":
        seen, works, leaves = with_settrace(trace)
    elif mode in ("profile-thread", "profile-ends"):
        seen, works, leaves = with_cprofile(trace, mode == "profile-ends")
    else:
        sys.exit("watched_block.py: unknown mode " + mode)
    print("saw ulma's calibration:", seen)
    print("work:", works, "leaf:", leaves)


if __name__ == "__main__":
    main()
