"""What tracing native code costs (issue "Native code in the same call stack").

Usage: python bench/native.py [--rounds N] [--calls N] [--depth D]

Builds bench/native/kernel.c three ways, plain, with -finstrument-functions
linked to libulma_rt (the hooks present, tracing off), and runs, side by
side in every round:
  plain           the kernel without instrumentation
  hooks, off      instrumented, not traced: the cost of the hooks' check
  ulma run        instrumented, traced by `ulma run` (every call is two events)
  ulma run, empty the same with nothing to do: ulma's fixed cost, subtracted
  perf record -g  the plain kernel sampled by perf with call graphs, where perf
                  can run here (it samples; ulma records every call)
for two workloads: `calls` (N calls of a two-instruction function: the
hook's cost with nothing around it) and `tree` (a recursion doing a little
work per call).  Prints medians of wall time, the ratio to plain, and the
cost per instrumented call (off) and per native event (traced).  Asserts
nothing.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def ulma_dir():
    import ulma

    return os.path.dirname(ulma.__file__)


def build(tmp):
    pkg = ulma_dir()
    src = os.path.join(HERE, "native", "kernel.c")
    out = {}
    for name, extra in (("plain", []), ("hooks", ["-finstrument-functions", "-L" + pkg, "-lulma_rt",
                                                  "-Wl,-rpath," + pkg])):
        path = os.path.join(tmp, "kernel_" + name)
        subprocess.run(["gcc", "-O2", "-g", src, "-o", path] + extra, check=True)
        out[name] = path
    return out


def timed(argv, env=None):
    t = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit("%s failed: %s" % (argv, p.stderr.decode(errors="replace")[-500:]))
    return dt, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20_000_000)
    ap.add_argument("--depth", type=int, default=22)
    args = ap.parse_args()
    ulma = shutil.which("ulma", path=os.path.dirname(sys.executable)) or "ulma"
    perf = shutil.which("perf")
    if perf and subprocess.run([perf, "record", "-q", "-g", "-o", "/dev/null", "true"], capture_output=True).returncode:
        perf = None
    with tempfile.TemporaryDirectory() as tmp:
        k = build(tmp)
        trace = os.path.join(tmp, "k.trace")
        workloads = {"calls": (["calls", str(args.calls)], args.calls + 1),
                     "tree": (["tree", str(args.depth)], 2 ** (args.depth + 1) - 1 + 1)}
        for wl, (wargs, ncalls) in workloads.items():
            times = {"plain": [], "hooks, off": [], "ulma run": [], "ulma run, empty": [], "perf record -g": []}
            lost = []
            for _ in range(args.rounds):
                times["plain"].append(timed([k["plain"]] + wargs)[0])
                times["hooks, off"].append(timed([k["hooks"]] + wargs)[0])
                dt, err = timed([ulma, "run", "--no-live", "--summary", "json", "-o", trace, k["hooks"]] + wargs)
                times["ulma run"].append(dt)
                lost.append(json.loads(err.decode())["lost"])
                empty = [wargs[0], "0"]  # the same run with nothing to trace: ulma's fixed cost
                times["ulma run, empty"].append(
                    timed([ulma, "run", "--no-live", "--summary", "none", "-o", trace, k["hooks"]] + empty)[0])
                if perf:
                    times["perf record -g"].append(
                        timed([perf, "record", "-q", "-g", "-o", os.path.join(tmp, "perf.data"), k["plain"]] + wargs)[0])
            base = statistics.median(times["plain"])
            off = statistics.median(times["hooks, off"])
            on = statistics.median(times["ulma run"]) - statistics.median(times["ulma run, empty"])
            print("\n%s: %d calls, %d rounds, medians (lost events: %s)" % (wl, ncalls, args.rounds, max(lost)))
            print("%-16s %9s %8s" % ("", "wall s", "ratio"))
            for name, v in times.items():
                if v:
                    m = statistics.median(v)
                    print("%-16s %9.3f %7.2fx" % (name, m, m / base))
            print("hooks present, tracing off: %.2f ns per instrumented call" % ((off - base) / ncalls * 1e9))
            print("traced: %.2f ns per native event (2 per call; ulma's fixed cost, the empty run, taken out)"
                  % ((on - off) / (2 * ncalls) * 1e9))


if __name__ == "__main__":
    main()
