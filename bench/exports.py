"""Decode-and-aggregate and export throughput, in events per second.

Usage: python bench/exports.py [--trace FILE] [--rounds 3]

Without --trace, records a call-heavy trace first (fib(31), about 8.7 M
events).  Then times `ulma report` (decode + aggregate; the goal is 20 M
events/s) and `ulma export` in every format, each the median of --rounds
runs, writing to a file in a temporary directory, and prints events/s and
the output's bytes per event; and `ulma diff` of the trace with itself (it
reads the trace twice: its events/s count the trace's events once), as
JSON and with --html.
(Peak memory is in docs/exports.md, measured with /usr/bin/time: a forked
child's ru_maxrss counts its parent's pages from before exec.)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import ulma_binary

HERE = os.path.dirname(os.path.abspath(__file__))
FORMATS = ["pstats", "folded", "callgrind", "chrome", "perfetto", "speedscope", "ctf", "otf2", "html"]


def run(cmd):
    t = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(cmd), proc.stderr.decode(errors="replace").strip()))
    return time.perf_counter() - t


def output_size(path):
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path))
    return os.path.getsize(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    ulma = ulma_binary()
    out = tempfile.mkdtemp(prefix="ulma-exports-")
    trace = args.trace
    if not trace:
        trace = os.path.join(out, "fib.trace")
        prog = os.path.join(out, "fib31.py")
        with open(prog, "w") as f:
            f.write("def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nfib(31)\n")
        subprocess.run([ulma, "run", "--lossless", "--summary", "none", "-o", trace, prog], check=True,
                       env=dict(os.environ, ULMA_PYTHON=sys.executable))
    summary = json.loads(subprocess.run([ulma, "report", trace, "--format", "json"], check=True,
                                        capture_output=True, text=True).stdout)
    events = summary["events"]
    print("trace: %s, %d events, %.1f MiB" % (trace, events, os.path.getsize(trace) / 2**20))
    print("%-12s %10s %14s %12s" % ("", "seconds", "events/s", "bytes/event"))
    jobs = [("report", [ulma, "report", trace, "--format", "json"])]
    for fmt in FORMATS:
        dest = os.path.join(out, "out." + fmt)
        jobs.append((fmt, [ulma, "export", trace, "--format", fmt, "-o", dest]))
    jobs.append(("diff", [ulma, "diff", trace, trace, "--format", "json"]))
    jobs.append(("diff --html", [ulma, "diff", trace, trace, "--format", "json", "--html", os.path.join(out, "d.html")]))
    for name, cmd in jobs:
        times = []
        for _ in range(args.rounds):
            if name in ("ctf", "otf2"):  # directories: an existing one with files is refused
                subprocess.run(["rm", "-rf", cmd[-1]])
            times.append(run(cmd))
        t = statistics.median(times)
        size = output_size(cmd[-1]) if name not in ("report", "diff") else 0
        print("%-12s %10.2f %13.1fM %12.1f" % (name, t, events / t / 1e6, size / events))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
