"""MPI under ulma (docs/mpi.md), measured side by side in one run:

1. overhead: a message-heavy program (bench/mpi/messages.c: ranks 0 and 1
   exchange 8-byte messages, 2 ranks) run by mpirun untraced and under
   `ulma run`, alternating, median of --repeat runs each; the ratio of the
   medians and the cost per MPI call;
2. merge rate: `ulma merge` of --ranks ranks' traces of the same program
   with millions of native calls, events read per second of its CPU time
   (median of --repeat), and its peak memory;
3. merge memory: `ulma merge` of the program's traces at --merge-rounds
   and 10x that many round trips (2 ranks, no other calls): peak RSS and
   events per second of CPU at both sizes, side by side.  CPU time and
   peak RSS come from /usr/bin/time (a child of this interpreter would
   carry the interpreter's peak past its exec).

Usage: python bench/mpi.py [--rounds N] [--calls-k K] [--ranks R] [--merge-rounds N] [--repeat N]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import ulma_binary

HERE = os.path.dirname(os.path.abspath(__file__))


def mpirun(n, cmd):
    argv = ["mpirun", "--oversubscribe", "-n", str(n)]
    if os.geteuid() == 0:
        argv.insert(1, "--allow-run-as-root")
    return argv + cmd


def wall(cmd, cwd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def child_cpu_and_rss(cmd, cwd):
    """CPU seconds and peak RSS (KiB) of cmd alone, as /usr/bin/time measures them."""
    p = subprocess.run(["/usr/bin/time", "-f", "%U %S %M"] + cmd, cwd=cwd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    if p.returncode:
        sys.exit("bench: %s failed" % " ".join(cmd))
    user, system, rss = p.stderr.decode().split()[-3:]
    return float(user) + float(system), int(rss)


def merge_figures(ulma, traces, repeat, cwd):
    """Median CPU seconds, last peak RSS (KiB) and events of `ulma merge traces`."""
    cpus, rss = [], 0
    for _ in range(repeat):
        cpu, rss = child_cpu_and_rss([ulma, "merge", traces, "-o", traces + ".trace"], cwd)
        cpus.append(cpu)
    return statistics.median(cpus), rss, events_of(ulma, traces + ".trace", cwd)


def events_of(ulma, trace, cwd):
    import json
    p = subprocess.run([ulma, "report", trace, "--format", "json"], cwd=cwd, check=True, stdout=subprocess.PIPE)
    return json.loads(p.stdout)["events"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=100000)
    ap.add_argument("--calls-k", type=int, default=4000)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--merge-rounds", type=int, default=50000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    if not shutil.which("mpirun") or not shutil.which("mpicc"):
        sys.exit("bench: Open MPI (mpirun, mpicc) is needed")
    if not os.access("/usr/bin/time", os.X_OK):
        sys.exit("bench: /usr/bin/time is needed (Debian's time)")
    ulma = ulma_binary()
    with tempfile.TemporaryDirectory() as d:
        prog = os.path.join(d, "messages")
        subprocess.run(["mpicc", "-O2", "-finstrument-functions", os.path.join(HERE, "mpi", "messages.c"),
                        "-o", prog], check=True)
        plain, traced, plain0, traced0 = [], [], [], []
        ulma_run = [ulma, "run", "--no-live", "--summary", "none", "-o", "ov"]
        for _ in range(a.repeat):  # alternate, so both see the same machine
            plain.append(wall(mpirun(2, [prog, str(a.rounds), "0"]), d))
            traced.append(wall(mpirun(2, ulma_run + [prog, str(a.rounds), "0"]), d))
            plain0.append(wall(mpirun(2, [prog, "0", "0"]), d))
            traced0.append(wall(mpirun(2, ulma_run + [prog, "0", "0"]), d))
        mp, mt = statistics.median(plain), statistics.median(traced)
        fixed = statistics.median(traced0) - statistics.median(plain0)  # start-up and end, no messages
        per_rank_calls = 2 * a.rounds  # each of the two ranks makes a send and a receive per round
        print("message-heavy program, %d round trips of 8 bytes on 2 ranks (median of %d):" % (a.rounds, a.repeat))
        print("  untraced %.3f s, under ulma run %.3f s: %.2fx; ulma's start and end %.3f s, "
              "then %.2f us more per MPI call" % (mp, mt, mt / mp, fixed, (mt - mp - fixed) / per_rank_calls * 1e6))
        subprocess.run(mpirun(a.ranks, [ulma, "run", "--no-live", "--summary", "none", "-o", "big", prog, "1000",
                                        str(a.calls_k)]), cwd=d, check=True, stdout=subprocess.DEVNULL)
        cpu, rss, events = merge_figures(ulma, "big", a.repeat, d)
        size = os.path.getsize(os.path.join(d, "big.trace"))
        print("merge of %d ranks, %d events (%.1f MB merged): %.3f s of CPU, %.1f M events/s, peak RSS %.1f MB"
              % (a.ranks, events, size / 1e6, cpu, events / cpu / 1e6, rss / 1024))
        print("merge memory against messages (2 ranks, median of %d):" % a.repeat)
        for rounds in (a.merge_rounds, 10 * a.merge_rounds):
            traces = "msgs%d" % rounds
            subprocess.run(mpirun(2, [ulma, "run", "--no-live", "--summary", "none", "-o", traces, prog, str(rounds),
                                      "0"]), cwd=d, check=True, stdout=subprocess.DEVNULL)
            cpu, rss, events = merge_figures(ulma, traces, a.repeat, d)
            rate = "%.1f M events/s" % (events / cpu / 1e6) if cpu else "too fast to time"
            print("  %7d round trips (%d messages), %d events: %.2f s of CPU, %s, peak RSS %.1f MB"
                  % (rounds, 2 * rounds, events, cpu, rate, rss / 1024))


if __name__ == "__main__":
    main()
