"""What recording memory costs: `ulma run --memory` against memray and tracemalloc.

Usage: python bench/memory.py [--rounds N] [--workloads bootstrap,mergesort,...] [--hook-only] [--cpu] [--no-tracemalloc]
                              [--baseline PYTHON]

For each workload in bench/workloads/, runs side by side, interleaved
(untraced, ulma, ulma --memory, ..., untraced, ...), N times each, and
prints the median wall time ratio to untraced:
- ulma: `ulma run` without memory, for reference;
- ulma --memory: every allocation and free of Python's three domains
  (PyMem_RawMalloc, PyMem_Malloc, PyObject_Malloc) and of native code
  (malloc .. munmap), with every call; mem/ulma: its ratio to plain
  `ulma run`, what recording memory adds (memray records no calls);
- ulma sampled: `--memory=sample` (one allocation every 256 KiB on
  average, bytes estimated), and its ratio to plain `ulma run`;
- memray: `python -m memray run -o FILE`, which by default sees only the
  system allocator (malloc .. munmap): of Python's allocations only the
  ones pymalloc passes on (its 256 KiB arenas and blocks over 512 bytes),
  not the objects pymalloc hands out (memray's docs, "Python allocators";
  on bench/workloads/numeric.py `memray stats` counts 1,121 allocations
  without the flag and 15,079,347 with it, ulma 15,105,869); and
  `--native` (it also unwinds native stacks);
- memray -tpa: `memray run --trace-python-allocators`, which also records
  PyMem/PyObject allocations, as ulma --memory does: the columns that
  record the same allocations as ulma --memory; and with `--native`;
  skipped, with a message, when memray is not installed beside this Python;
- baseline (with --baseline PYTHON, an interpreter with another build of
  ulma installed, an earlier commit's): its `ulma run --memory`, in the
  same rotation, with its monitor ns/ev and B/alloc (against this build's
  plain run: the call events are the same);
- tracemalloc: `python -X tracemalloc=1` (one frame per traceback; Python's
  three domains, no native allocation).
Every tool writes its results to a file, so none pays for printing.  Then
from ulma's JSON: the allocation events (allocations and frees) of the
run, the hook's cost per allocation event in the program (the --memory
run's time less the run without memory, over those events: it includes
the monitor's share of a loaded machine), the monitor's CPU per event, and
the trace's bytes per allocation event (the --memory trace less the one
without, over those events).  Last, the hook's own cost: a loop of
bytes objects made and freed (two allocation events each, no call events),
timed inside the program (its thread's CPU time), untraced, under `ulma run` and under
`ulma run --memory`: the difference per allocation event.  Uses the `ulma`
installed beside this Python.  Prints; asserts nothing.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from benchlib import timed, ulma_binary

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.join(HERE, "workloads")


def have_memray():
    return subprocess.run([sys.executable, "-c", "import memray"], capture_output=True).returncode == 0


def summary(ulma, trace, env):
    out = subprocess.run([ulma, "report", trace, "--format", "json"], check=True, capture_output=True,
                         text=True, env=env)
    return json.loads(out.stdout)


HOOK_LOOP = """
import itertools, sys, time

def loop(n):
    t = time.thread_time()  # CPU time: a loaded machine's waits for a CPU left out
    for _ in itertools.repeat(None, n):  # no int object per iteration
        bytes(100)  # one allocation and its free: no free list, no call event
    return time.thread_time() - t
loop(10000)
print(loop(int(sys.argv[1])))
"""


def cpu_time(cmd, env):
    """CPU seconds (user + system) of cmd and every process it waited for."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit("%s failed with %d" % (cmd, proc.returncode))
    return usage.ru_utime + usage.ru_stime


def hook_cost(ulma, env, out, rounds, n=2000000):
    """ns per allocation event the hook adds, timed inside the program."""
    script = os.path.join(out, "hook_loop.py")
    with open(script, "w") as f:
        f.write(HOOK_LOOP)
    variants = {
        "untraced": [sys.executable, script, str(n)],
        "ulma": [ulma, "run", "--no-live", "--summary", "none", "-o", os.path.join(out, "h.trace"), script, str(n)],
        "ulma-memory": [ulma, "run", "--no-live", "--memory", "--summary", "none", "-o",
                        os.path.join(out, "hm.trace"), script, str(n)],
        "ulma-sampled": [ulma, "run", "--no-live", "--memory=sample", "--summary", "none", "-o",
                         os.path.join(out, "hs.trace"), script, str(n)],
    }
    times = {k: [] for k in variants}
    for _ in range(rounds):
        for k, cmd in variants.items():
            run = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
            times[k].append(float(run.stdout.split()[-1]))
    med = {k: statistics.median(v) for k, v in times.items()}
    per = lambda k: (med[k] - med["untraced"]) * 1e9 / (2 * n)  # noqa: E731
    print("hook: a loop of %d allocations and frees, timed inside the program: untraced %.1f ns per event, "
          "+%.1f ns under ulma (its call hook, no allocation events), +%.1f ns under ulma --memory: "
          "%.1f ns per allocation event; sampled (--memory=sample): %+.1f ns" % (
              n, med["untraced"] * 1e9 / (2 * n), per("ulma"), per("ulma-memory"),
              per("ulma-memory") - per("ulma"), per("ulma-sampled") - per("ulma")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workloads", default="bootstrap,mergesort,numeric,threads,fib")
    ap.add_argument("--hook-only", action="store_true", help="only the hook's cost per allocation event")
    ap.add_argument("--cpu", action="store_true",
                    help="ratios of CPU time (the command and its children, user + system) instead of wall time: "
                         "steadier on a loaded machine, and it counts the monitor's CPU too")
    ap.add_argument("--no-tracemalloc", action="store_true", help="leave tracemalloc out (the slowest)")
    ap.add_argument("--baseline", metavar="PYTHON",
                    help="an interpreter with another build of ulma installed: its ulma --memory in the same rotation")
    args = ap.parse_args()
    baseline = None
    if args.baseline:
        baseline = subprocess.run([args.baseline, "-c", "import ulma._locate as l; print(l.ulma_binary() or '')"],
                                  capture_output=True, text=True).stdout.strip()
        if not baseline:
            sys.exit("bench: no ulma program installed beside %s" % args.baseline)
    ulma = ulma_binary()
    env = dict(os.environ, ULMA_PYTHON=sys.executable)
    out = tempfile.mkdtemp(prefix="ulma-bench-memory-")
    if args.hook_only:
        hook_cost(ulma, env, out, args.rounds)
        return
    memray = have_memray()
    if not memray:
        print("memray is NOT installed beside %s: its four columns show '-' (pip install memray)" % sys.executable)
    print("Python %s, %d rounds, median %s ratio to untraced" % (sys.version.split()[0], args.rounds,
                                                               "CPU-time" if args.cpu else "wall-time"))
    print("Same allocations as ulma --memory (Python's three domains and native code): the memray -tpa columns "
          "(--trace-python-allocators).  memray without it sees the system allocator only; tracemalloc sees "
          "Python's domains only.  mem/ulma: what --memory adds to a plain `ulma run` (calls recorded in both)")
    head = ["workload", "untraced", "ulma", "ulma --memory", "mem/ulma", "sampled", "sampled/ulma", "memray",
            "memray --native", "memray -tpa", "-tpa --native", "tracemalloc", "alloc events", "ns/alloc",
            "monitor ns/ev", "B/alloc", "baseline --memory", "its monitor ns/ev", "its B/alloc"]
    print("%-10s %9s %7s %14s %9s %8s %13s %8s %16s %12s %14s %12s %13s %9s %14s %8s %18s %18s %12s" % tuple(head))
    for name in args.workloads.split(","):
        script = os.path.join(WORKLOADS, name + ".py")
        trace = os.path.join(out, name + ".trace")
        mtrace = os.path.join(out, name + ".memory.trace")
        variants = {
            "untraced": [sys.executable, script],
            "ulma": [ulma, "run", "--no-live", "--summary", "none", "-o", trace, script],
            "ulma-memory": [ulma, "run", "--no-live", "--memory", "--summary", "none", "-o", mtrace, script],
            "ulma-sampled": [ulma, "run", "--no-live", "--memory=sample", "--summary", "none", "-o",
                             os.path.join(out, name + ".sampled.trace"), script],
        }
        if baseline:
            variants["baseline-memory"] = [baseline, "run", "--no-live", "--memory", "--summary", "none", "-o",
                                           os.path.join(out, name + ".baseline.trace"), "--python", args.baseline,
                                           script]
        if not args.no_tracemalloc:
            variants["tracemalloc"] = [sys.executable, "-X", "tracemalloc=1", script]
        if memray:
            bin_ = os.path.join(out, name + ".bin")
            variants["memray"] = [sys.executable, "-m", "memray", "run", "-f", "-q", "-o", bin_, script]
            variants["memray-native"] = [sys.executable, "-m", "memray", "run", "--native", "-f", "-q", "-o",
                                         bin_ + ".native", script]
            variants["memray-tpa"] = [sys.executable, "-m", "memray", "run", "--trace-python-allocators", "-f", "-q",
                                      "-o", bin_ + ".tpa", script]
            variants["memray-tpa-native"] = [sys.executable, "-m", "memray", "run", "--trace-python-allocators",
                                             "--native", "-f", "-q", "-o", bin_ + ".tpa.native", script]
        times = {k: [] for k in variants}
        for _ in range(args.rounds):
            for k, cmd in variants.items():
                times[k].append(cpu_time(cmd, env) if args.cpu else timed(cmd, env))
        med = {k: statistics.median(v) for k, v in times.items()}
        base = med["untraced"]
        plain, mem = summary(ulma, trace, env), summary(ulma, mtrace, env)
        events = mem["alloc_count"] + mem["free_count"]
        per_event = (med["ulma-memory"] - med["ulma"]) * 1e9 / events if events else 0.0
        monitor = (mem["monitor_cpu_ns"] - plain["monitor_cpu_ns"]) / events if events else 0.0
        per_byte = (mem["trace_bytes"] - plain["trace_bytes"]) / events if events else 0.0

        def ratio(k):
            return "%.2fx" % (med[k] / base) if k in med else "-"

        its_monitor = its_bytes = "-"
        if baseline:
            old = summary(baseline, os.path.join(out, name + ".baseline.trace"), env)
            old_events = old["alloc_count"] + old["free_count"]
            if old_events:
                its_monitor = "%.1f" % ((old["monitor_cpu_ns"] - plain["monitor_cpu_ns"]) / old_events)
                its_bytes = "%.2f" % ((old["trace_bytes"] - plain["trace_bytes"]) / old_events)
        print("%-10s %8.2fs %7s %14s %9s %8s %13s %8s %16s %12s %14s %12s %13d %9.1f %14.1f %8.2f %18s %18s %12s" % (
            name, base, ratio("ulma"), ratio("ulma-memory"), "%.2fx" % (med["ulma-memory"] / med["ulma"]),
            ratio("ulma-sampled"), "%.2fx" % (med["ulma-sampled"] / med["ulma"]), ratio("memray"),
            ratio("memray-native"), ratio("memray-tpa"), ratio("memray-tpa-native"), ratio("tracemalloc"), events,
            per_event, monitor, per_byte, ratio("baseline-memory"), its_monitor, its_bytes))
        sys.stdout.flush()
    hook_cost(ulma, env, out, args.rounds)


if __name__ == "__main__":
    main()
