"""What recording a native allocation costs, and what interposing costs by
each mechanism (docs/memory.md, "Native allocations").

Usage: python bench/native_alloc.py [--rounds N] [--iterations N]

Builds bench/native/alloc_loop.c (N times malloc(64) and free in one
native function, built with -finstrument-functions so that `ulma run`
starts tracing at main) and bench/native/preload_shim.c (a preloaded
malloc and free that only forward to libc's), and runs side by side in
every round:
  plain               the loop, nothing interposed
  LD_PRELOAD shim     malloc and free interposed by preloading, recording nothing
  ulma run            traced without --memory (malloc is libc's)
  ulma run --memory   malloc and free rebound in the program's GOT to
                      libulma_rt's wrappers, every call recorded
The program times its loop itself (its thread's CPU time per iteration,
one malloc and one free), so neither start-up nor a loaded machine's waits
count.  Prints the medians and the differences per allocation event (an
iteration is two).  Uses the `ulma` installed beside this Python.  Asserts
nothing.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

from benchlib import ulma_binary

HERE = os.path.dirname(os.path.abspath(__file__))


def build(tmp):
    import ulma

    pkg = os.path.dirname(ulma.__file__)
    loop = os.path.join(tmp, "alloc_loop")
    subprocess.run(["gcc", "-O2", "-finstrument-functions", os.path.join(HERE, "native", "alloc_loop.c"), "-o", loop,
                    "-L" + pkg, "-lulma_rt", "-Wl,-rpath," + pkg], check=True)
    shim = os.path.join(tmp, "preload_shim.so")
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", os.path.join(HERE, "native", "preload_shim.c"), "-o", shim,
                    "-ldl"], check=True)
    return loop, shim


def per_iteration(argv, env=None):
    out = subprocess.run(argv, check=True, capture_output=True, text=True, env=env)
    return float(out.stdout.split()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iterations", type=int, default=3_000_000)
    args = ap.parse_args()
    ulma = ulma_binary()
    with tempfile.TemporaryDirectory() as tmp:
        loop, shim = build(tmp)
        trace = os.path.join(tmp, "t.trace")
        n = str(args.iterations)
        runs = {
            "plain": lambda: per_iteration([loop, n]),
            "LD_PRELOAD shim": lambda: per_iteration([loop, n], env=dict(os.environ, LD_PRELOAD=shim)),
            "ulma run": lambda: per_iteration([ulma, "run", "--no-live", "--summary", "none", "-o", trace, loop, n]),
            "ulma run --memory": lambda: per_iteration([ulma, "run", "--memory", "--no-live", "--summary", "none",
                                                        "-o", trace, loop, n]),
        }
        times = {k: [] for k in runs}
        for _ in range(args.rounds):
            for name, run in runs.items():
                times[name].append(run())
    med = {k: statistics.median(v) for k, v in times.items()}
    print("ns per iteration (malloc(64) + free), medians of %d rounds, %s iterations" % (args.rounds, n))
    for name, v in med.items():
        print("  %-20s %8.2f   (%s)" % (name, v, " ".join("%.2f" % x for x in times[name])))
    print("interposing by LD_PRELOAD: %+.2f ns per call" % ((med["LD_PRELOAD shim"] - med["plain"]) / 2))
    print("recording (ulma --memory less ulma): %+.2f ns per allocation event" %
          ((med["ulma run --memory"] - med["ulma run"]) / 2))


if __name__ == "__main__":
    sys.exit(main())
