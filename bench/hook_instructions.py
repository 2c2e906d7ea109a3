"""Instructions per traced call, counted with callgrind: the hooks' own cost.

Usage: python bench/hook_instructions.py [--native | --memory]

Counts, with callgrind, the instructions the traced process runs, at two
sizes of each workload, and divides the difference by the difference in
calls, so start-up cancels out.  Counts do not depend on the machine's
load (timings here do); the monitor, another process, is not counted.

- fib: naive recursive fib(18) against fib(20), untraced and under
  `ulma run`: instructions per Python call (two events each).
- randint: a list comprehension of random.randint calls, 20,000 against
  40,000, as in bench/workloads/bootstrap.py's hot loop: instructions per
  iteration (six Python calls and two C calls each).
- --native: bench/native/kernel.c's `calls` built with
  -finstrument-functions, 200,000 against 400,000 calls: bound to glibc's
  empty hooks (the compiler's instrumentation alone), with ulma's hooks
  present but tracing off, and under `ulma run`: instructions per native
  event (two per call), and ulma's own, over the empty hooks.
- --memory: a loop of bytes(100) made and freed (one allocation and one
  free each, in the OBJ domain, no call event), 200,000 against 400,000
  times, under `ulma run` and `ulma run --memory`: the instructions the
  program runs per allocation event, and those the monitor (`ulma run`
  itself, the parent of the traced program) runs per allocation event,
  draining, applying to the profile and writing the trace.  Both run with
  `--split schedstat` (the scheduler's switch records would be as many as
  the times the program waits for the slowed monitor) and a ring that
  holds the whole run (a program waiting for room would count its
  waiting), and PYTHONHASHSEED=0.  The monitor's count still includes
  its timed work (an RSS read every 15 ms, schedstat samples, of a run
  that valgrind makes long), a small share, and moves with the program's
  addresses (ASLR: the live-block table's probe lengths).

Under valgrind glibc registers no rseq area, so each Python event also
counts sched_getcpu (about 35 instructions) that a real run reads from the
rseq area in one load; native events read no CPU.  Asserts nothing.
"""
import argparse
import os
import subprocess
import sys
import tempfile

from benchlib import callgrind_counts, ulma_binary

HERE = os.path.dirname(os.path.abspath(__file__))
FIB = "import sys\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nfib(int(sys.argv[1]))\n"
RANDINT = ("import random, sys\nrandom.seed(1)\ndata = [random.random() for _ in range(100)]\n"
           "sample = [data[random.randint(0, 99)] for _ in range(int(sys.argv[1]))]\n")


def fib_calls(n):
    a, b = 1, 1
    for _ in range(n):
        a, b = b, a + b
    return 2 * a - 1


def python_counts(ulma, out):
    count = callgrind_counts(out)
    trace = os.path.join(out, "w.trace")
    print("Python %s, instructions per call (fib) or per iteration (randint), in the traced process"
          % sys.version.split()[0])
    for name, source, small, large, calls in (("fib", FIB, 18, 20, fib_calls),
                                               ("randint", RANDINT, 20000, 40000, lambda n: n)):
        script = os.path.join(out, name + ".py")
        with open(script, "w") as f:
            f.write(source)
        per = {}
        for variant in ("untraced", "ulma"):
            def cmd(n):
                if variant == "untraced":
                    return lambda py: [py, script, str(n)]
                return lambda py: [ulma, "run", "--no-live", "--summary", "none", "-o", trace,
                                   "--python", py, script, str(n)]
            per[variant] = (count(cmd(large)) - count(cmd(small))) / (calls(large) - calls(small))
        print("%-8s untraced %7.0f  ulma %7.0f  added %7.0f" % (name, per["untraced"], per["ulma"],
                                                             per["ulma"] - per["untraced"]))


def native_counts(ulma, out):
    import ulma as pkg

    lib = os.path.dirname(pkg.__file__)
    src = os.path.join(HERE, "native", "kernel.c")
    kernel, empty = os.path.join(out, "kernel"), os.path.join(out, "kernel_empty")
    subprocess.run(["gcc", "-O2", "-g", src, "-o", kernel,
                    "-finstrument-functions", "-L" + lib, "-lulma_rt", "-Wl,-rpath," + lib], check=True)
    subprocess.run(["gcc", "-O2", "-g", src, "-o", empty, "-finstrument-functions"], check=True)
    trace = os.path.join(out, "k.trace")
    variants = {"hooks, empty": (empty, lambda n: lambda w: [w, "calls", str(n)]),
                "hooks, off": (kernel, lambda n: lambda w: [w, "calls", str(n)]),
                "ulma run": (kernel, lambda n: lambda w: [ulma, "run", "--no-live", "--summary", "none", "-o", trace,
                                                          "/bin/sh", w, "calls", str(n)])}
    print("native kernel `calls`, instructions per native event (two per call), in the traced process")
    per = {}
    for name, (program, cmd) in variants.items():
        count = callgrind_counts(out, program)
        per[name] = (count(cmd(400000)) - count(cmd(200000))) / 400000
        print("%-13s %6.1f" % (name, per[name]))
    print("ulma's own, off %.1f, traced %.1f (over hooks, empty: glibc's, which only return)"
          % (per["hooks, off"] - per["hooks, empty"], per["ulma run"] - per["hooks, empty"]))


# itertools.repeat: no int object per iteration, only the bytes object
MEMLOOP = "import itertools, sys\nfor _ in itertools.repeat(None, int(sys.argv[1])):\n    bytes(100)\n"


def memory_counts(ulma, out):
    script = os.path.join(out, "memloop.py")
    with open(script, "w") as f:
        f.write(MEMLOOP)
    trace = os.path.join(out, "m.trace")
    small, large = 200000, 400000
    # a ring that holds the whole run: the program never waits for the
    # monitor (a wait would count the writer's waiting loop)
    common = ["--split", "schedstat", "--ring-records", str(1 << 21)]
    # one string hash seed: dict probes (the call hook's lookups) would
    # otherwise differ between runs by tens of instructions per event
    os.environ["PYTHONHASHSEED"] = "0"
    events = 2 * (large - small)  # an allocation and a free per iteration
    for side in ("program", "monitor"):
        os.mkdir(os.path.join(out, side))
    program = callgrind_counts(os.path.join(out, "program"))
    monitor = callgrind_counts(os.path.join(out, "monitor"), ulma)
    per = {}
    for variant, extra in (("ulma", []), ("ulma --memory", ["--memory"])):
        def run(count, n, under_monitor):
            def cmd(w):
                if under_monitor:
                    return [w, "run", "--no-live", "--summary", "none", "-o", trace] + extra + common + [
                        "--python", sys.executable, script, str(n)]
                return [ulma, "run", "--no-live", "--summary", "none", "-o", trace] + extra + common + [
                    "--python", w, script, str(n)]
            return count(cmd)

        per[variant] = ((run(program, large, False) - run(program, small, False)) / events,
                        (run(monitor, large, True) - run(monitor, small, True)) / events)
    print("Python %s, a loop of bytes(100) made and freed: instructions per allocation event" %
          sys.version.split()[0])
    for side, i in (("program", 0), ("monitor", 1)):
        print("%-8s ulma %7.1f  ulma --memory %7.1f  added by --memory %7.1f" % (
            side, per["ulma"][i], per["ulma --memory"][i], per["ulma --memory"][i] - per["ulma"][i]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--native", action="store_true", help="count the -finstrument-functions hooks instead")
    ap.add_argument("--memory", action="store_true", help="count --memory's cost per allocation event instead")
    args = ap.parse_args()
    ulma = ulma_binary()
    with tempfile.TemporaryDirectory() as out:
        (native_counts if args.native else memory_counts if args.memory else python_counts)(ulma, out)


if __name__ == "__main__":
    main()
