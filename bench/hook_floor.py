"""Cost of each hook mechanism with EMPTY C callbacks, on two workloads.

Usage: python bench/hook_floor.py [--rounds 7]   (builds bench/floor/floor.c for this Python)

Prints, per mechanism and workload, the median ratio to untraced over
interleaved runs.  This is the floor under ulma's own hook, which no work
inside the callbacks can beat; docs/hooks.md quotes it.  Every run is a
fresh process with the hook set before the workload's code first runs, as
under `ulma run`: on 3.12 and later, code that sys.monitoring has once
instrumented stays slower after its events are cleared, so runs that share
a process would slow the untraced baseline too.

- fib: naive fib(24) three times, all calls: the floor per event.
- loop: the threads workload's Collatz loop on one thread, 60,000 calls
  over about 6.5 million loop iterations: what a hook costs code that runs
  many bytecodes per call.  On 3.10 and 3.11 a profile function makes every
  instruction take the interpreter's tracing path; on 3.11 that path also
  runs every instruction unspecialized.
"""
import argparse
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "workloads"))
from threads import collatz_len  # noqa: E402  the threads workload's own loop


def build(where):
    """Compile floor.c for this Python into the directory `where`."""
    out = os.path.join(where, "ulma_floor" + sysconfig.get_config_var("EXT_SUFFIX"))
    inc = sysconfig.get_paths()["include"]
    subprocess.check_call(["cc", "-O2", "-shared", "-fPIC", "-I" + inc,
                           os.path.join(HERE, "floor", "floor.c"), "-o", out])


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def run_fib():
    for _ in range(3):
        fib(24)


def run_loop():
    best = 0
    for n in range(1, 60_000):
        s = collatz_len(n)
        if s > best:
            best = s


WORKLOADS = {"fib": run_fib, "loop": run_loop}


MECHANISMS = ["untraced"] + (["monitoring PY_*", "monitoring PY_* + CALL/C_RETURN"]
                              if sys.version_info >= (3, 12) else []) + ["PyEval_SetProfile"]


def switch(floor, mechanism):
    """(on, off) for one of MECHANISMS, with floor.c's empty callbacks."""
    if mechanism == "untraced":
        return (lambda: None), (lambda: None)
    if mechanism == "PyEval_SetProfile":
        return (lambda: floor.set_profile(True)), (lambda: floor.set_profile(False))
    M = sys.monitoring
    E = M.events
    tool = 5
    M.use_tool_id(tool, "floor")
    events = E.PY_START | E.PY_RETURN | E.PY_RESUME | E.PY_YIELD | E.PY_UNWIND | E.PY_THROW
    call_cb = floor.empty
    if mechanism == "monitoring PY_* + CALL/C_RETURN":
        events |= E.CALL | E.C_RETURN | E.C_RAISE
        call_cb = floor.call_check

    def on():
        for ev in (E.PY_START, E.PY_RESUME, E.PY_THROW, E.PY_RETURN, E.PY_YIELD, E.PY_UNWIND,
                   E.C_RETURN, E.C_RAISE):
            M.register_callback(tool, ev, floor.empty)
        M.register_callback(tool, E.CALL, call_cb)
        M.set_events(tool, events)
    return on, (lambda: M.set_events(tool, 0))


def child(build_dir, mechanism, workload):
    """One run in this fresh process: set the hook, time the workload, print seconds."""
    sys.path.insert(0, build_dir)
    import ulma_floor
    on, off = switch(ulma_floor, mechanism)
    on()
    t = time.perf_counter()
    WORKLOADS[workload]()
    t = time.perf_counter() - t
    off()
    print(repr(t))


def measure(build_dir, rounds):
    """{mechanism: [median ratio to untraced per workload]}, runs interleaved."""
    ratios = {k: [] for k in MECHANISMS}
    for workload in WORKLOADS:
        times = {k: [] for k in MECHANISMS}
        for _ in range(rounds):
            for k in MECHANISMS:
                out = subprocess.check_output([sys.executable, os.path.abspath(__file__), "--child",
                                               build_dir, k, workload], text=True)
                times[k].append(float(out))
        base = statistics.median(times["untraced"])
        for k, v in times.items():
            ratios[k].append(statistics.median(v) / base)
    return ratios


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7, help="interleaved runs per cell (default 7)")
    ap.add_argument("--child", nargs=3, metavar=("BUILD_DIR", "MECHANISM", "WORKLOAD"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(*args.child)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    with tempfile.TemporaryDirectory(prefix="ulma-floor-") as build_dir:
        build(build_dir)
        ratios = measure(build_dir, args.rounds)
    print("Python %s, median of %d interleaved runs, each in a fresh process; ratio to untraced" % (
        sys.version.split()[0], args.rounds))
    print("  %-36s %s" % ("mechanism", "  ".join("%6s" % w for w in WORKLOADS)))
    for k, r in ratios.items():
        print("  %-36s %s" % (k, "  ".join("%5.2fx" % x for x in r)))


if __name__ == "__main__":
    main()
