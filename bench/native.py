"""What tracing native code costs (issue "Native code in the same call stack").

Usage: python bench/native.py [--rounds N] [--calls N] [--depth D] [--baseline ULMA]

Builds bench/native/kernel.c three ways and runs, side by side in every round:
  plain           the kernel without instrumentation
  hooks, empty    built with -finstrument-functions, not linked to ulma: the
                  hooks bind to glibc's empty ones.  What the compiler's
                  instrumentation costs by itself (the calls, the registers
                  kept across them), which no hook can cut
  hooks, off      instrumented and linked to libulma_rt, not traced
  ulma run        the same traced by `ulma run` (every call is two events)
  ulma run --may-drop   the same, where a full ring drops rather than waits
                  for the monitor: the writer's own cost
  perf record -g  the plain kernel sampled by perf with call graphs, where
                  perf can run here (it samples; ulma records every call)
for two workloads: `calls` (N calls of a two-instruction function: the
hook's cost with nothing around it) and `tree` (a recursion doing a little
work per call).  The kernel times its own workload (wall and thread CPU),
so process start-up and tracing's set-up and drain are not in the figures.

Prints medians, the ratio to plain, and per call or per event:
  - the compiler's cost (hooks, empty - plain) per call;
  - ulma's cost with tracing off (hooks, off - hooks, empty) per call:
    issue 14's target is at most 2 ns;
  - ulma's cost while tracing (ulma run - hooks, empty) per native event:
    the target is at most 10 ns;
and the floor, from bench/native/floor.c in the same rounds: rdtsc alone,
rdtscp, clock_gettime, CLOCK_MONOTONIC_COARSE (cheap, but a tick coarse), a
record's two 8-byte stores into a 4 MiB ring, and rdtsc with the stores.

--baseline runs another build's `ulma` program (an earlier commit, installed
in its own virtual environment: the `ulma` in its bin/) in the same
rotation: its hooks off (the kernel linked to that build's libulma_rt) and
its `ulma run`, for a before/after of the hooks measured side by side.
Asserts nothing.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def ulma_dir():
    import ulma

    return os.path.dirname(ulma.__file__)


def package_of(ulma):
    """The ulma package directory beside another build's `ulma` program."""
    python = os.path.join(os.path.dirname(os.path.abspath(ulma)), "python3")
    return subprocess.run([python, "-c", "import os, ulma; print(os.path.dirname(ulma.__file__))"],
                          stdout=subprocess.PIPE, check=True).stdout.decode().strip()


def linked(pkg):
    return ["-finstrument-functions", "-L" + pkg, "-lulma_rt", "-Wl,-rpath," + pkg]


def build(tmp, baseline_pkg):
    src = os.path.join(HERE, "native", "kernel.c")
    out = {}
    builds = [("plain", []), ("empty", ["-finstrument-functions"]), ("hooks", linked(ulma_dir()))]
    if baseline_pkg:
        builds.append(("baseline", linked(baseline_pkg)))
    for name, extra in builds:
        path = os.path.join(tmp, "kernel_" + name)
        subprocess.run(["gcc", "-O2", "-g", src, "-o", path] + extra, check=True)
        out[name] = path
    out["floor"] = os.path.join(tmp, "floor")
    subprocess.run(["gcc", "-O2", os.path.join(HERE, "native", "floor.c"), "-o", out["floor"]], check=True)
    return out


def run(argv):
    """The kernel's own (wall, cpu) seconds of its workload, and its stderr."""
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise SystemExit("%s failed: %s" % (argv, p.stderr.decode(errors="replace")[-500:]))
    _, wall, cpu = p.stdout.split()[-3:]
    return (int(wall) * 1e-9, int(cpu) * 1e-9), p.stderr


def floor(path, n):
    p = subprocess.run([path, "floor", str(n)], stdout=subprocess.PIPE, check=True)
    return {name: float(v) for name, v in (line.split() for line in p.stdout.decode().splitlines())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20_000_000)
    ap.add_argument("--depth", type=int, default=22)
    ap.add_argument("--baseline", help="another build's ulma program, timed in the same rotation")
    args = ap.parse_args()
    from benchlib import ulma_binary

    ulma = ulma_binary()
    perf = shutil.which("perf")
    if perf and subprocess.run([perf, "record", "-q", "-g", "-o", "/dev/null", "true"], capture_output=True).returncode:
        perf = None
    with tempfile.TemporaryDirectory() as tmp:
        k = build(tmp, args.baseline and package_of(args.baseline))
        trace = os.path.join(tmp, "k.trace")
        traced = [ulma, "run", "--no-live", "--summary", "json", "-o", trace]
        workloads = {"calls": (["calls", str(args.calls)], args.calls + 1),
                     "tree": (["tree", str(args.depth)], 2 ** (args.depth + 1) - 1 + 1)}
        floors = []
        for wl, (wargs, ncalls) in workloads.items():
            variants = {"plain": [k["plain"]], "hooks, empty": [k["empty"]], "hooks, off": [k["hooks"]],
                        "ulma run": traced + [k["hooks"]],
                        "ulma run --may-drop": traced + ["--may-drop", k["hooks"]]}
            if args.baseline:
                before = [args.baseline] + traced[1:]
                variants.update({"baseline: hooks, off": [k["baseline"]],
                                 "baseline: ulma run": before + [k["baseline"]],
                                 "baseline: --may-drop": before + ["--may-drop", k["baseline"]]})
            if perf:
                variants["perf record -g"] = [perf, "record", "-q", "-g", "-o", os.path.join(tmp, "perf.data"),
                                              k["plain"]]
            times = {name: [] for name in variants}
            lost = {name: [] for name in variants if "run" in name or "drop" in name}
            for _ in range(args.rounds):
                for name, argv in variants.items():
                    t, err = run(argv + wargs)
                    times[name].append(t)
                    if name in lost:
                        lost[name].append(json.loads(err.decode())["lost"])
                floors.append(floor(k["floor"], args.calls))
            med = {name: tuple(statistics.median(t[i] for t in v) for i in (0, 1)) for name, v in times.items()}
            base = med["plain"][0]
            print("\n%s: %d calls, %d rounds, medians of the workload's own time (events lost: %s)"
                  % (wl, ncalls, args.rounds, ", ".join("%s %d" % (n, max(v)) for n, v in lost.items())))
            print("%-20s %9s %9s %8s" % ("", "wall ms", "cpu ms", "ratio"))
            for name, (wall, cpu) in med.items():
                print("%-20s %9.1f %9.1f %7.2fx" % (name, wall * 1e3, cpu * 1e3, wall / base))

            def per(a, b, n):
                return "%.2f ns (cpu %.2f)" % tuple((med[a][i] - med[b][i]) / n * 1e9 for i in (0, 1))

            print("compiler's instrumentation (hooks, empty - plain): %s per call" % per("hooks, empty", "plain", ncalls))
            print("ulma, tracing off (hooks, off - hooks, empty):     %s per call   [target <= 2]"
                  % per("hooks, off", "hooks, empty", ncalls))
            print("  (hooks, off - plain, as quoted before:           %s per call)" % per("hooks, off", "plain", ncalls))
            print("ulma, traced (ulma run - hooks, empty):            %s per event  [target <= 10]"
                  % per("ulma run", "hooks, empty", 2 * ncalls))
            print("ulma, traced, --may-drop:                          %s per event"
                  % per("ulma run --may-drop", "hooks, empty", 2 * ncalls))
            if args.baseline:
                print("baseline, tracing off:                             %s per call"
                      % per("baseline: hooks, off", "hooks, empty", ncalls))
                print("baseline, traced:                                  %s per event"
                      % per("baseline: ulma run", "hooks, empty", 2 * ncalls))
                print("baseline, traced, --may-drop:                      %s per event"
                      % per("baseline: --may-drop", "hooks, empty", 2 * ncalls))
        print("\nfloor, ns per iteration (medians of %d):" % len(floors))
        for name in floors[0]:
            print("  %-14s %6.2f" % (name, statistics.median(f[name] for f in floors)))


if __name__ == "__main__":
    main()
