"""What the monitor costs, and how fast everything reads (issue "Exact under load").

Usage: python bench/monitor.py [--rounds N] [--skip-busy] [--skip-read] [--baseline PYTHON]

1. Drain: for fib, merge sort and the 4-thread workload (bench/workloads/),
   `ulma run` N times, quiet and with another process spinning on one core
   (busy), each run's monitor CPU time (the JSON's monitor_cpu_ns, measured
   by the monitor itself with getrusage) against the program's CPU time
   (the monitor's child, from wait4 less the monitor's own), events lost,
   and events drained per second of monitor CPU.  Medians.  With
   --baseline PYTHON (another build's interpreter, say a venv with an
   older ulma installed), its `ulma run` takes its turn in each round,
   interleaved with this one, and both rows are printed: the load of a
   shared machine then falls on both alike.
2. Synthetic: build/bench/bench_drain (bench/drain.c): C producer threads
   writing as fast as the monitor lets them into a real session, drained by
   the real collector and writer; events per second of monitor CPU.
3. Read: `ulma report`, `report --html` and every aggregating export of the
   fib trace (about 10^8 events), CPU time of each and events read per
   second.

Uses the `ulma` installed beside this Python; builds bench_drain with cmake.
Prints ratios and rates measured side by side; asserts nothing.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from benchlib import ulma_binary

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORKLOADS = os.path.join(HERE, "workloads")
EXAMPLES = os.path.join(ROOT, "examples")


def run_cpu(argv, env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE):
    """Run argv; return (exit status, user+sys CPU seconds of it and its
    waited-for children, stderr bytes)."""
    with tempfile.TemporaryFile() as err:
        pid = os.posix_spawn(argv[0], argv, env, file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, err.fileno(), 2)])
        _, status, ru = os.wait4(pid, 0)
        err.seek(0)
        return os.waitstatus_to_exitcode(status), ru.ru_utime + ru.ru_stime, err.read()


class Spinner:
    """Another process keeping one core busy for the duration of a block."""

    def __enter__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def drain_once(ulma, env, script, trace, busy):
    """(events, program CPU s, monitor CPU s, lost) of one `ulma run`."""
    ctx = Spinner() if busy else None
    if ctx:
        ctx.__enter__()
    try:
        code, cpu, err = run_cpu([ulma, "run", "--no-live", "--summary", "json", "-o", trace, script], env)
    finally:
        if ctx:
            ctx.__exit__(None, None, None)
    if code != 0:
        sys.exit("bench: %s run %s failed (%d): %s" % (ulma, script, code, err.decode(errors="replace")))
    s = json.loads(err)
    mon = s["monitor_cpu_ns"] / 1e9
    return s["events"], cpu - mon, mon, s["lost"]


def drain(builds, out, rounds, busy):
    """builds: (label, ulma program, environment) of each build, run in
    turn within each round."""
    print("\n1. the monitor's cost while tracing (%s), medians of %d runs" % (
        "one core kept busy by another process" if busy else "quiet", rounds))
    print("%-10s %-9s %12s %12s %9s %12s %8s %14s" % ("workload", "build", "events", "program s", "monitor s",
                                                      "monitor/prog", "lost", "M events/s"))
    for name in ("fib", "mergesort", "threads"):
        script = os.path.join(WORKLOADS, name + ".py")
        trace = os.path.join(out, name + ".trace")
        rows = {label: [] for label, _, _ in builds}
        for _ in range(rounds):
            for label, ulma, env in builds:
                rows[label].append(drain_once(ulma, env, script, trace, busy))
        for label, _, _ in builds:
            r = rows[label]
            events = statistics.median(x[0] for x in r)
            prog = statistics.median(x[1] for x in r)
            mon = statistics.median(x[2] for x in r)
            ratio = statistics.median(x[2] / x[1] for x in r)
            lost = max(x[3] for x in r)
            print("%-10s %-9s %12d %12.3f %9.3f %11.1f%% %8d %14.1f" % (name, label, events, prog, mon, 100 * ratio,
                                                                        lost, events / mon / 1e6))
        sys.stdout.flush()


def synthetic(rounds):
    build = os.path.join(ROOT, "build", "bench")
    binary = os.path.join(build, "bench_drain")
    subprocess.run(["cmake", "-S", ROOT, "-B", build, "-G", "Ninja", "-DULMA_BUILD_TESTS=ON",
                    "-DCMAKE_BUILD_TYPE=Release"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build, "--target", "bench_drain"], check=True, stdout=subprocess.DEVNULL)
    print("\n2. drain rate with synthetic C producers (bench/drain.c), medians of %d runs" % rounds)
    print("%-10s %16s %10s" % ("producers", "M events/s", "ns/event"))
    for producers in (1, 3):
        rates = []
        for _ in range(rounds):
            out = subprocess.run([binary, str(producers), str(60_000_000 // producers)], check=True,
                                 capture_output=True, text=True).stdout
            line = [l for l in out.splitlines() if l.startswith("drain rate:")][0]
            rates.append(float(line.split()[2]))
        rate = statistics.median(rates)
        print("%-10d %16.1f %10.2f" % (producers, rate, 1e3 / rate))


def read(ulma, env, out, rounds):
    trace = os.path.join(out, "fib-example.trace")
    code, _, err = run_cpu([ulma, "run", "--no-live", "--summary", "json", "-o", trace,
                            os.path.join(EXAMPLES, "fib.py")], env)
    if code != 0:
        sys.exit("bench: tracing examples/fib.py failed: %s" % err.decode(errors="replace"))
    events = json.loads(err)["events"]
    print("\n3. reading a trace of %d events (%.0f MB), CPU time, medians of %d runs" % (
        events, os.path.getsize(trace) / 1e6, rounds))
    print("%-22s %10s %14s" % ("reader", "cpu s", "M events/s"))
    cases = [("report", ["report", trace]), ("report --format json", ["report", trace, "--format", "json"]),
             ("report --html", ["report", trace, "--html", os.path.join(out, "r.html")])]
    for fmt in ("pstats", "callgrind", "folded"):
        cases.append(("export " + fmt, ["export", trace, "--format", fmt, "-o", os.path.join(out, "x." + fmt)]))
    for label, args in cases:
        times = []
        for _ in range(rounds):
            code, cpu, err = run_cpu([ulma] + args, env)
            if code != 0:
                sys.exit("bench: ulma %s failed: %s" % (" ".join(args), err.decode(errors="replace")))
            times.append(cpu)
        cpu = statistics.median(times)
        print("%-22s %10.3f %14.1f" % (label, cpu, events / cpu / 1e6))
        sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-busy", action="store_true")
    ap.add_argument("--skip-read", action="store_true")
    ap.add_argument("--baseline", metavar="PYTHON",
                    help="another build's interpreter (its installed ulma runs beside this one in the drain rounds)")
    args = ap.parse_args()
    ulma = ulma_binary()
    env = dict(os.environ, ULMA_PYTHON=sys.executable)
    print("Python %s, ulma %s" % (sys.version.split()[0], ulma))
    builds = [("this", ulma, env)]
    if args.baseline:
        found = subprocess.run([args.baseline, "-c", "from ulma._locate import ulma_binary; print(ulma_binary())"],
                               capture_output=True, text=True)
        if found.returncode != 0 or not found.stdout.strip():
            sys.exit("bench: no ulma installed beside %s" % args.baseline)
        builds.append(("baseline", found.stdout.strip(), dict(os.environ, ULMA_PYTHON=args.baseline)))
        print("baseline: %s" % builds[1][1])
    with tempfile.TemporaryDirectory(prefix="ulma-bench-") as out:
        drain(builds, out, args.rounds, busy=False)
        if not args.skip_busy:
            drain(builds, out, args.rounds, busy=True)
        synthetic(args.rounds)
        if not args.skip_read:
            read(ulma, env, out, args.rounds)


if __name__ == "__main__":
    main()
