"""What line-level profiling costs: `ulma run --lines` against line_profiler.

Usage: python bench/lines.py [--rounds N] [--workload bootstrap] [--function bootstrap_ci]
       python bench/lines.py --instructions

Runs the workload (bench/workloads/NAME.py) side by side, interleaved so
that machine noise hits every variant alike, N times each (default 5):
untraced; `ulma run` (every call, no lines); `ulma run --lines FUNCTION`
(its hot function line by line, every call too); `ulma run --lines` with
a pattern that matches nothing (what unchosen code pays for lines being
on); `ulma run --lines all`; and `kernprof -l` on a copy of the workload with `@profile` on the same
function (line_profiler times that function's lines, and nothing else).
Prints the median wall time of each, its ratio to untraced, and the time
each adds to the untraced run; then what the lines add to ulma's run, and
ulma's added time over line_profiler's.  Uses the `ulma` program and the
line_profiler installed beside this Python (pip install line_profiler).

--instructions counts instead, with callgrind, the instructions the traced
process runs per iteration of bench/workloads/line_loops.py's two loops
(the count at N = 200,000 less the count at 100,000, over 100,000): f, a
loop that calls an empty function, and h, a loop of two lines alone,
each chosen by name.  Counts do not depend on the machine's load; the
monitor, another process, is not counted.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

from benchlib import callgrind_counts, ulma_binary, timed

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.join(HERE, "workloads")


def decorated_copy(script, function, out):
    """A copy of the workload with @profile (kernprof's) on `function`."""
    with open(script) as f:
        source = f.read()
    marked, n = re.subn(r"^def %s\(" % re.escape(function), "@profile\ndef %s(" % function, source, flags=re.M)
    if n != 1:
        sys.exit("bench: %s defines no top-level function %s" % (script, function))
    path = os.path.join(out, os.path.basename(script))
    with open(path, "w") as f:
        f.write(marked)
    return path


def instructions(ulma, out):
    count = callgrind_counts(out)
    script = os.path.join(WORKLOADS, "line_loops.py")
    trace = os.path.join(out, "w.trace")
    run = [ulma, "run", "--no-live", "--summary", "none", "-o", trace]
    print("Python %s, instructions per iteration of line_loops.py, in the traced process" % sys.version.split()[0])
    print("%-5s %9s %7s %14s %12s %12s %9s" % ("loop", "untraced", "ulma", "--lines none", "--lines LOOP",
                                              "kernprof -l", "ulma/lp"))
    for loop in ("f", "h"):
        variants = {
            "untraced": lambda py, n: [py, script, loop, str(n)],
            "ulma": lambda py, n: run + ["--python", py, script, loop, str(n)],
            "none": lambda py, n: run + ["--python", py, "--lines", "no_such_function", script, loop, str(n)],
            "chosen": lambda py, n: run + ["--python", py, "--lines", loop, script, loop, str(n)],
            "kernprof": lambda py, n: [py, "-m", "kernprof", "-l", "-o", os.path.join(out, "w.lprof"),
                                       decorated_copy(script, loop, out), loop, str(n)],
        }
        per = {}
        for k, cmd in variants.items():
            small = count(lambda py: cmd(py, 100000))
            large = count(lambda py: cmd(py, 200000))
            per[k] = (large - small) / 100000
        print("%-5s %9.0f %7.0f %14.0f %12.0f %12.0f %9.2f" % (
            loop, per["untraced"], per["ulma"], per["none"], per["chosen"], per["kernprof"],
            (per["chosen"] - per["untraced"]) / (per["kernprof"] - per["untraced"])))
    print("ulma/lp: what ulma --lines LOOP adds to the untraced loop, over what kernprof -l adds")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workload", default="bootstrap")
    ap.add_argument("--function", default="bootstrap_ci", help="the workload's hot function")
    ap.add_argument("--instructions", action="store_true", help="count instructions with callgrind instead")
    args = ap.parse_args()
    try:
        import line_profiler  # noqa: F401
    except ImportError:
        sys.exit("bench: line_profiler is not installed beside this Python (pip install line_profiler)")
    ulma = ulma_binary()
    env = dict(os.environ, ULMA_PYTHON=sys.executable)
    out = tempfile.mkdtemp(prefix="ulma-bench-lines-")
    if args.instructions:
        return instructions(ulma, out)
    trace = os.path.join(out, "w.trace")
    script = os.path.join(WORKLOADS, args.workload + ".py")
    variants = {
        "untraced": [sys.executable, script],
        "ulma": [ulma, "run", "--no-live", "--summary", "none", "-o", trace, script],
        "ulma --lines F": [ulma, "run", "--no-live", "--summary", "none", "-o", trace, "--lines", args.function,
                           script],
        "ulma --lines none": [ulma, "run", "--no-live", "--summary", "none", "-o", trace, "--lines",
                              "no_such_function", script],
        "ulma --lines all": [ulma, "run", "--no-live", "--summary", "none", "-o", trace, "--lines", "all", script],
        "kernprof -l": [sys.executable, "-m", "kernprof", "-l", "-o", os.path.join(out, "w.lprof"),
                        decorated_copy(script, args.function, out)],
    }
    times = {k: [] for k in variants}
    for _ in range(args.rounds):
        for k, cmd in variants.items():
            times[k].append(timed(cmd, env))
    median = {k: statistics.median(v) for k, v in times.items()}
    base = median["untraced"]
    print("Python %s, %s.py, F = %s, median of %d rounds" % (sys.version.split()[0], args.workload, args.function,
                                                           args.rounds))
    print("%-18s %9s %8s %10s" % ("variant", "wall", "ratio", "added"))
    for k, t in median.items():
        print("%-18s %8.3fs %7.2fx %9.3fs" % (k, t, t / base, t - base))
    added = {k: t - base for k, t in median.items()}
    print("the lines of F add %.3fs to ulma's run (%.2fx of it)" % (
        median["ulma --lines F"] - median["ulma"], median["ulma --lines F"] / median["ulma"]))
    print("ulma --lines F adds %.2f of what kernprof -l adds (%.3fs against %.3fs)" % (
        added["ulma --lines F"] / added["kernprof -l"], added["ulma --lines F"], added["kernprof -l"]))


if __name__ == "__main__":
    main()
