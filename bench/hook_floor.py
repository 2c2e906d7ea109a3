"""Cost of each hook mechanism with EMPTY C callbacks, on naive fib.

Usage: python bench/hook_floor.py   (builds bench/floor/floor.c for this Python)
Prints, per mechanism, the median ratio to untraced over interleaved runs.
This is the floor under ulma's own hook: docs/hooks.md quotes it.
"""
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def build():
    out = os.path.join(tempfile.mkdtemp(), "ulma_floor" + sysconfig.get_config_var("EXT_SUFFIX"))
    inc = sysconfig.get_paths()["include"]
    subprocess.check_call(["cc", "-O2", "-shared", "-fPIC", "-I" + inc,
                           os.path.join(HERE, "floor", "floor.c"), "-o", out])
    sys.path.insert(0, os.path.dirname(out))
    import ulma_floor
    return ulma_floor


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def work():
    for _ in range(3):
        fib(24)


def timed(setup, teardown):
    setup()
    t = time.perf_counter()
    work()
    t = time.perf_counter() - t
    teardown()
    return t


def main():
    floor = build()
    nothing = lambda: None  # noqa: E731
    variants = {"untraced": (nothing, nothing)}
    if sys.version_info >= (3, 12):
        M = sys.monitoring
        E = M.events
        tool = 5
        M.use_tool_id(tool, "floor")

        def mon(events, call_cb):
            def on():
                for ev in (E.PY_START, E.PY_RESUME, E.PY_THROW, E.PY_RETURN, E.PY_YIELD, E.PY_UNWIND,
                           E.C_RETURN, E.C_RAISE):
                    M.register_callback(tool, ev, floor.empty)
                M.register_callback(tool, E.CALL, call_cb)
                M.set_events(tool, events)

            def off():
                M.set_events(tool, 0)
            return on, off

        py = E.PY_START | E.PY_RETURN | E.PY_RESUME | E.PY_YIELD | E.PY_UNWIND | E.PY_THROW
        variants["monitoring PY_*"] = mon(py, floor.empty)
        variants["monitoring PY_* + CALL/C_RETURN"] = mon(py | E.CALL | E.C_RETURN | E.C_RAISE,
                                                          floor.call_check)
    variants["PyEval_SetProfile"] = (lambda: floor.set_profile(True), lambda: floor.set_profile(False))
    times = {k: [] for k in variants}
    for _ in range(7):
        for k, (on, off) in variants.items():
            times[k].append(timed(on, off))
    base = statistics.median(times["untraced"])
    print("Python %s, fib(24) x 3, median of 7 interleaved runs" % sys.version.split()[0])
    for k, v in times.items():
        print("  %-36s %.2fx" % (k, statistics.median(v) / base))


if __name__ == "__main__":
    main()
