"""Overhead of `ulma run` against the untraced program and `python -m cProfile`.

Columns: ulma (every call, builtins included, as cProfile), ulma --no-c-calls
(Python functions only), cProfile.

Usage: python bench/overhead.py [--rounds N] [--workloads fib,mergesort] [--baseline ULMA]

--baseline runs another build's `ulma` program (an earlier commit, installed
in a venv of its own with this Python: give that venv's bin/ulma, whose
python3 beside it has the build's extension) in the same rotation, as one
more column: before and after a change, measured side by side.

For each workload in bench/workloads/, runs the three variants interleaved
(untraced, ulma, cProfile, untraced, ulma, ...) N times each, so machine
noise hits all of them alike, and prints the median wall time ratio to
untraced.  Every tool writes to a file (ulma's trace, cProfile's -o), so no
tool pays for printing.  ulma's row also gives the trace size and bytes per
event.  Uses the `ulma` program installed beside this Python.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from benchlib import ulma_binary, timed

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.join(HERE, "workloads")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workloads", default="fib,mergesort")
    ap.add_argument("--baseline", help="another build's ulma program (a venv's bin/ulma), timed in the same rotation")
    args = ap.parse_args()
    if args.baseline and not os.access(os.path.join(os.path.dirname(os.path.abspath(args.baseline)), "python3"),
                                       os.X_OK):
        sys.exit("bench: --baseline %s: no python3 beside it; give the ulma in another venv's bin/" % args.baseline)
    ulma = ulma_binary()
    env = dict(os.environ, ULMA_PYTHON=sys.executable)
    out = tempfile.mkdtemp(prefix="ulma-bench-")
    trace = os.path.join(out, "w.trace")
    prof = os.path.join(out, "w.prof")
    print("Python %s, %d rounds, median wall-time ratio to untraced" % (
        sys.version.split()[0], args.rounds))
    print("%-10s %10s %10s %12s %10s %12s %10s%s" % ("workload", "untraced", "ulma", "ulma --no-c",
                                                     "cProfile", "trace", "B/event",
                                                     " %10s" % "baseline" if args.baseline else ""))
    for name in args.workloads.split(","):
        script = os.path.join(WORKLOADS, name + ".py")
        variants = {
            "untraced": [sys.executable, script],
            "ulma": [ulma, "run", "--summary", "none", "-o", trace, script],
            "ulma-py": [ulma, "run", "--summary", "none", "--no-c-calls", "-o", trace + ".py", script],
            "cProfile": [sys.executable, "-m", "cProfile", "-o", prof, script],
        }
        if args.baseline:
            # with the interpreter installed beside it, which has its own extension
            python = os.path.join(os.path.dirname(os.path.abspath(args.baseline)), "python3")
            variants["baseline"] = [args.baseline, "run", "--python", python, "--summary", "none", "-o",
                                    trace + ".base", script]
        times = {k: [] for k in variants}
        for _ in range(args.rounds):
            for k, cmd in variants.items():
                times[k].append(timed(cmd, env, quiet_stderr=False))
        base = statistics.median(times["untraced"])
        rep = subprocess.run([ulma, "report", trace, "--format", "json"], check=True,
                             capture_output=True, text=True, env=env)
        summary = json.loads(rep.stdout)
        print("%-10s %9.2fs %9.2fx %11.2fx %9.2fx %10.1fMB %10.2f%s   (lost %d)" % (
            name, base, statistics.median(times["ulma"]) / base,
            statistics.median(times["ulma-py"]) / base,
            statistics.median(times["cProfile"]) / base, summary["trace_bytes"] / 1e6,
            summary["bytes_per_event"],
            " %9.2fx" % (statistics.median(times["baseline"]) / base) if args.baseline else "",
            summary["lost"]))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
