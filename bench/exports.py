"""Read rates of `ulma report`, `ulma report --html` and every export, in events per second of CPU time.

Usage: python bench/exports.py [--trace FILE] [--rounds 3] [--before ULMA] [--only NAME,...]

Without --trace, records a call-heavy trace first (fib(31), about 8.7 M
events; docs/exports.md quotes examples/fib.py's 101.7 M).  Then runs
`ulma report` (decode and aggregate), `ulma report --html`, `ulma export`
in every format (perfetto also with --no-compress) and `ulma diff` of the
trace with itself (it reads the trace twice: its rate counts the trace's
events once), each --rounds times, and prints the median CPU time (user +
system, of the one process: each is single-threaded), events per CPU
second, the output's bytes per event and the peak resident memory.

The last column is the ceiling the output's bytes alone set: the events
per CPU second at which this machine writes that many bytes per event
into a new file beside the output and removes it (64 KiB write() calls
from one buffer, as the exporters flush: the kernel's copy into the page
cache, which every export pays), so a format whose output is large shows
how much of its time its bytes take.  The shared decode's own rate, with
no output at all, is bench_decode's (bench/decode.c, built with the unit
tests).

With --before ULMA (another build's `ulma` program, say main's), each
round runs that program and this one side by side, interleaved, and both
rates are printed with their ratio: the load of a shared machine then
falls on both alike.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import shutil
import tempfile
import time

from benchlib import ulma_binary

FORMATS = ["pstats", "folded", "callgrind", "chrome", "perfetto", "perfetto --no-compress", "speedscope", "ctf",
           "otf2", "html"]
WRITE_CHUNK = 1 << 16


def run(cmd):
    """(CPU seconds, peak RSS in MiB) of running cmd, which must succeed."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stderr.close()
    if proc.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(cmd), err.decode(errors="replace").strip()))
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def output_size(path):
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(path) for n in names)
    return os.path.getsize(path) if os.path.exists(path) else 0


def remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.unlink(path)


def write_seconds(directory, total):
    """CPU seconds of writing `total` bytes into a new file in directory,
    64 KiB at a time, and of removing it (as an export's output is)."""
    buf = b"\x5a" * WRITE_CHUNK
    path = os.path.join(directory, "write-floor")
    t = time.process_time()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    for _ in range(max(1, total // WRITE_CHUNK)):
        os.write(fd, buf)
    os.close(fd)
    seconds = time.process_time() - t
    os.unlink(path)
    return seconds


def jobs_for(ulma, trace, out, tag, only):
    page = os.path.join(out, tag + "r.html")
    jobs = [("report", [ulma, "report", trace, "--format", "json"], None),
            ("report --html", [ulma, "report", trace, "--html", page], page)]
    for fmt in FORMATS:
        name = fmt.split()[0]
        dest = os.path.join(out, "%s%s.%s" % (tag, "-raw" if "--no-compress" in fmt else "", name))
        jobs.append((fmt, [ulma, "export", trace, "--format", name, "-o", dest] + fmt.split()[1:], dest))
    jobs.append(("diff", [ulma, "diff", trace, trace, "--format", "json"], None))
    jobs.append(("diff --html",
                 [ulma, "diff", trace, trace, "--format", "json", "--html", os.path.join(out, tag + "d.html")],
                 os.path.join(out, tag + "d.html")))
    return [j for j in jobs if not only or j[0] in only]


def measure(cmd, dest):
    if dest:  # a fresh output each time (ctf, otf2: an existing directory with files is refused)
        remove(dest)
    return run(cmd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", help="another ulma program to compare with, side by side")
    ap.add_argument("--only", help="comma-separated rows to run (as named in the table)")
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
    only = set(args.only.split(",")) if args.only else None
    print("trace: %s, %d events, %.1f MiB" % (trace, events, os.path.getsize(trace) / 2**20))
    after = jobs_for(ulma, trace, out, "a", only)
    before = jobs_for(args.before, trace, out, "b", only) if args.before else None
    if before:
        print("%-24s %9s %9s %7s %12s %9s %12s" % ("", "before", "after", "ratio", "bytes/event", "MiB peak",
                                                  "bytes floor"))
    else:
        print("%-24s %9s %9s %12s %9s %12s" % ("", "seconds", "events/s", "bytes/event", "MiB peak", "bytes floor"))
    try:
        table(args, events, out, after, before)
    finally:
        shutil.rmtree(out, ignore_errors=True)  # the outputs, and the trace it recorded


def table(args, events, out, after, before):
    for i, (name, cmd, dest) in enumerate(after):
        times, peaks, old = [], [], []
        for _ in range(args.rounds):
            if before:
                old.append(measure(before[i][1], before[i][2])[0])
                if before[i][2]:
                    remove(before[i][2])  # chrome's is 7 GB on fib: one output on disk at a time
            t, peak = measure(cmd, dest)
            times.append(t)
            peaks.append(peak)
        t = statistics.median(times)
        size = output_size(dest) if dest else 0
        if dest:
            remove(dest)
        per_event = size / events
        bytes_floor = "%11.1fM" % (events / write_seconds(out, size) / 1e6) if size > 64 * WRITE_CHUNK else "%12s" % "-"
        if before:
            t0 = statistics.median(old)
            print("%-24s %8.1fM %8.1fM %6.2fx %12.2f %9.0f %s" % (name, events / t0 / 1e6, events / t / 1e6, t0 / t,
                                                                per_event, max(peaks), bytes_floor))
        else:
            print("%-24s %9.2f %8.1fM %12.2f %9.0f %s" % (name, t, events / t / 1e6, per_event, max(peaks),
                                                        bytes_floor))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
