"""A program that runs a profiler of its own, for tests/py/test_foreign_profiler.py.

usage: python foreign_profiler.py SCENARIO [STATS_FILE]

Each scenario prints what the program itself observes (its profile
functions' events, cProfile's and profile's call counts, getprofile()), so
that a traced run can be compared with an untraced one line for line, and
makes a known number of calls for the tracer to count:
  none      the issue's program: a() 1000 times, sys.setprofile(None), b() 1000 times
  python    a() 1000 times under a Python profile function, then b() 1000 times without
  python_over_cprofile  the same while cProfile is enabled (on 3.12+ a sys.monitoring tool that
            watches calls, so the profile function is told of its own sys.setprofile's return)
  all_threads  a() 100 times under a profile function given to threading.setprofile_all_threads
            (3.12+; prints only "no setprofile_all_threads" before)
  cprofile  work() under cProfile: runcall, with, enable/disable twice, cProfile.run
  pyprofile work() under the pure-Python profile module
  raising   profile functions that raise on a call, a C call and a return
  threads   threading.setprofile(hook), a thread, threading.setprofile(None), a thread
  replaced  PyEval_SetProfile called from C (through ctypes) behind the tracer's back
"""
import collections
import re
import sys
import threading


def a():
    return 1


def b():
    return 2


def c():
    return 3


def leaf(n):
    return n * 2


def work(n):
    total = 0
    for i in range(n):
        total += leaf(i)
    sorted([3, 1, 2])
    return total + len("abc")


def tail():
    return 0


def none():
    for _ in range(1000):
        a()
    sys.setprofile(None)
    for _ in range(1000):
        b()


def python():
    events = collections.Counter()

    def counter(frame, event, arg):
        if event in ("c_call", "c_return", "c_exception"):
            events[event, getattr(arg, "__name__", "?")] += 1
        elif frame.f_code.co_filename == __file__:
            events[event, frame.f_code.co_name] += 1

    before = sys.getprofile()
    print("before:", before if before is None else type(before).__name__)
    sys.setprofile(counter)
    print("set:", sys.getprofile() is counter)
    for _ in range(1000):
        a()
    sys.setprofile(None)
    print("unset:", sys.getprofile())
    for _ in range(1000):
        b()
    print("events:", sorted(events.items()))


def python_over_cprofile():
    import cProfile

    pr = cProfile.Profile()
    pr.enable()
    python()
    pr.disable()


def all_threads():
    if not hasattr(threading, "setprofile_all_threads"):
        print("no setprofile_all_threads")
        return
    events = collections.Counter()

    def counter(frame, event, arg):
        if event in ("c_call", "c_return", "c_exception"):
            events[event, getattr(arg, "__name__", "?")] += 1
        elif frame.f_code.co_filename in (__file__, threading.__file__):
            events[event, frame.f_code.co_name] += 1

    threading.setprofile_all_threads(counter)
    for _ in range(100):
        a()
    threading.setprofile_all_threads(None)
    print("events:", sorted(events.items()))


def stats_rows(stats, files):
    """(function, primitive calls, calls, [(caller, calls)]) for the functions of `files`
    and the builtins, from a pstats.Stats of cProfile or profile."""
    rows = []
    for (file, _line, name), (cc, nc, _tt, _ct, callers) in stats.stats.items():
        if file in files:
            # profile names the function runcall was given by its repr, address included
            by = sorted((re.sub(" at 0x[0-9a-f]+", "", key[2]), value[0] if isinstance(value, tuple) else value)
                        for key, value in callers.items())
            rows.append((name, cc, nc, by))
    return sorted(rows)


def cprofile(stats_file):
    import cProfile
    import pstats

    here = (__file__, "~", "<string>")
    pr = cProfile.Profile()
    pr.runcall(work, 200)
    print("runcall:", stats_rows(pstats.Stats(pr), here))
    print("getprofile after runcall:", sys.getprofile())
    with cProfile.Profile() as pr:
        print("getprofile inside with:", sys.getprofile() is pr)
        work(50)
    print("with:", stats_rows(pstats.Stats(pr), here))
    pr = cProfile.Profile()
    pr.enable()
    work(10)
    pr.disable()
    pr.enable()  # a second round into the same profiler
    work(5)
    pr.disable()
    print("enable/disable:", stats_rows(pstats.Stats(pr), here))
    cProfile.run("work(30)", stats_file)
    print("cProfile.run:", stats_rows(pstats.Stats(stats_file), here))
    print("getprofile at the end:", sys.getprofile())
    for _ in range(100):
        tail()


def pyprofile():
    import profile
    import pstats

    pr = profile.Profile()
    pr.runcall(work, 20)
    print("profile:", stats_rows(pstats.Stats(pr), (__file__, "~")))
    print("getprofile at the end:", sys.getprofile())
    for _ in range(100):
        tail()


class Refused(Exception):
    pass


def boom():
    return 1


def after():
    return 2


def returns():
    return 3


def raising():
    """A profile function that raises is unset by CPython, and its exception
    propagates from where the event happened."""
    seen = []

    def on(event_wanted, name_wanted):
        def profile_function(frame, event, arg):
            name = getattr(arg, "__name__", None) if event.startswith("c_") else frame.f_code.co_name
            if event == event_wanted and name == name_wanted:
                raise Refused("%s %s" % (event, name))
            if event.startswith("c_") or frame.f_code.co_filename == __file__:
                seen.append((event, name))

        return profile_function

    for event, name, call in (("call", "boom", boom), ("c_call", "len", lambda: len("abc")),
                              ("return", "returns", returns)):
        seen.clear()
        sys.setprofile(on(event, name))
        try:
            call()
        except Refused as exc:
            print("caught:", exc)
        print("getprofile after it raised:", sys.getprofile())
        print("seen:", seen)
        for _ in range(100):
            after()


def threads():
    seen = collections.Counter()
    profiles = []

    def hook(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "work":
            seen[threading.current_thread().name] += 1

    def run(n):
        profiles.append((threading.current_thread().name, sys.getprofile() is hook, sys.getprofile() is None))
        for _ in range(n):
            work(3)

    getprofile = getattr(threading, "getprofile", None)  # 3.10+
    print("threading.getprofile before:", getprofile() if getprofile else None)
    threading.setprofile(hook)
    print("threading.getprofile set:", getprofile() is hook if getprofile else True)
    t = threading.Thread(target=run, args=(100,), name="hooked")
    t.start()
    t.join()
    threading.setprofile(None)
    print("threading.getprofile unset:", getprofile() if getprofile else None)
    t = threading.Thread(target=run, args=(50,), name="plain")
    t.start()
    t.join()
    run(10)
    print("hook saw:", sorted(seen.items()))
    print("getprofile in each thread:", profiles)


def replaced():
    import ctypes

    set_profile = ctypes.pythonapi.PyEval_SetProfile
    set_profile.restype = None
    set_profile.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    for _ in range(100):
        a()
    set_profile(None, None)  # as a C extension would
    for _ in range(100):
        b()
    sys.setprofile(None)
    for _ in range(100):
        c()
    print("done")


def main():
    scenario = sys.argv[1]
    if scenario == "cprofile":
        cprofile(sys.argv[2])
    else:
        globals()[scenario]()


if __name__ == "__main__":
    main()
