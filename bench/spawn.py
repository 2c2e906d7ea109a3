"""What `ulma run` costs a program that starts short-lived Python
processes: the program runs `python -c pass` 30 times, one after the
other, each child traced (it joins the session) and ending at once.

Prints the median wall time and CPU time (user + sys of the whole process
tree) of `ulma run --summary none` over the program, per build, rounds
interleaved; with --baseline, another build's `ulma` program in the same
rotation (before and after a change, side by side).  The children's
interpreter is the one beside each `ulma` program.

Usage: python bench/spawn.py [--rounds N] [--children N] [--baseline ULMA]
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import ulma_binary

PROGRAM = """import subprocess, sys
for _ in range(%d):
    subprocess.run([sys.executable, "-c", "pass"], check=True)
"""


def run(cmd):
    """Wall and CPU seconds (children's user + sys) of cmd."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--children", type=int, default=30)
    ap.add_argument("--baseline", help="another build's ulma program, timed in the same rotation")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        prog = os.path.join(tmp, "spawn.py")
        with open(prog, "w") as f:
            f.write(PROGRAM % args.children)
        trace = os.path.join(tmp, "t.trace")
        builds = {"this": ulma_binary()}
        if args.baseline:
            builds["baseline"] = args.baseline
        cmds = {"untraced": [sys.executable, prog]}
        for name, ulma in builds.items():
            python = sys.executable if name == "this" else os.path.join(os.path.dirname(os.path.abspath(ulma)), "python3")
            cmds[name] = [ulma, "run", "--python", python, "--summary", "none", "-o", trace, prog]
        times = {name: [] for name in cmds}
        for _ in range(args.rounds):
            for name, cmd in cmds.items():
                times[name].append(run(cmd))
    print("%d children of `python -c pass`, median of %d interleaved rounds" % (args.children, args.rounds))
    print("%-10s %10s %10s" % ("", "wall s", "cpu s"))
    for name, got in times.items():
        print("%-10s %10.3f %10.3f" % (name, statistics.median(w for w, _ in got), statistics.median(c for _, c in got)))


if __name__ == "__main__":
    main()
