"""The HTML report of a --memory trace (docs/html.md, "Memory"): what its
Memory view costs `ulma report --html`, side by side with another build.

Usage: python bench/html_memory.py [--rounds 5] [--size 200000] [--baseline ULMA]

Records a merge sort of SIZE random integers (bench/workloads/mergesort.py's
algorithm, once) under `ulma run --memory`, then runs `ulma report --html`
of it --rounds times, alternating with --baseline (another build's `ulma`
program, e.g. one built from the commit before the Memory view) when given,
and prints for each build the medians of the export's CPU time (user +
system of that process alone, from wait4) and of its maximum resident
size, the page's size, and the ratios to the baseline; then the page's
load time in headless Chromium (the page's `ulma-ready` mark, median of
--rounds loads) for this build's page.  The second walk up to the peak is
what the ratio shows.
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
sys.path.insert(0, os.path.join(HERE, "..", "tests", "py"))
import html_browser  # noqa: E402

PROGRAM = """import random, sys
def merge(a, b):
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            out.append(a[i]); i += 1
        else:
            out.append(b[j]); j += 1
    out.extend(a[i:]); out.extend(b[j:])
    return out
def sort(xs):
    if len(xs) <= 1:
        return xs
    mid = len(xs) // 2
    return merge(sort(xs[:mid]), sort(xs[mid:]))
rng = random.Random(1)
data = [rng.randrange(10**9) for _ in range(int(sys.argv[1]))]
assert sort(data) == sorted(data)
"""


def export(ulma, trace, page):
    """CPU seconds and maximum resident MB of one `ulma report --html`."""
    proc = subprocess.Popen([ulma, "report", trace, "--html", page], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit("bench: %s report --html failed (%d)" % (ulma, proc.returncode))
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--size", type=int, default=200000)
    ap.add_argument("--baseline", help="another build's ulma program, run alternately")
    args = ap.parse_args()
    ulma = ulma_binary()
    out = tempfile.mkdtemp(prefix="ulma-bench-htmlmem-")
    prog, trace = os.path.join(out, "sort.py"), os.path.join(out, "sort.trace")
    with open(prog, "w") as f:
        f.write(PROGRAM)
    subprocess.run([ulma, "run", "--memory", "--no-live", "--summary", "none", "-o", trace, prog, str(args.size)],
                   check=True, env=dict(os.environ, ULMA_PYTHON=sys.executable))
    rep = json.loads(subprocess.run([ulma, "report", trace, "--format", "json"], check=True,
                                    capture_output=True, text=True).stdout)
    print("trace: %d events, %d allocations and %d frees, %.1f MiB; peak at %.0f%% of the run" % (
        rep["events"], rep["alloc_count"], rep["free_count"], os.path.getsize(trace) / 2**20,
        100 * rep["peak_time_ns"] / max(rep.get("duration_ns") or rep["wall_ns"], 1)))
    builds = [("this", ulma)] + ([("baseline", args.baseline)] if args.baseline else [])
    got = {name: {"cpu": [], "rss": []} for name, _ in builds}
    for _ in range(args.rounds):
        for name, binary in builds:
            cpu, rss = export(binary, trace, os.path.join(out, name + ".html"))
            got[name]["cpu"].append(cpu)
            got[name]["rss"].append(rss)
    print("%-9s %12s %12s %10s" % ("build", "export CPU s", "max RSS MB", "html MB"))
    for name, _ in builds:
        print("%-9s %12.2f %12.1f %10.2f" % (name, statistics.median(got[name]["cpu"]),
                                             statistics.median(got[name]["rss"]),
                                             os.path.getsize(os.path.join(out, name + ".html")) / 1e6))
    if args.baseline:
        med = {name: {k: statistics.median(v) for k, v in g.items()} for name, g in got.items()}
        print("%-9s %11.2fx %11.2fx %9.2fx" % ("ratio", med["this"]["cpu"] / med["baseline"]["cpu"],
                                               med["this"]["rss"] / med["baseline"]["rss"],
                                               os.path.getsize(os.path.join(out, "this.html")) /
                                               os.path.getsize(os.path.join(out, "baseline.html"))))
    if html_browser.CHROMIUM is None:
        print("load: chromium is not installed (scripts/ensure-deps.sh installs it)")
        return
    browser = html_browser.Browser(tempfile.mkdtemp(dir=out))
    loads = []
    try:
        for _ in range(args.rounds):
            browser.open(os.path.join(out, "this.html"))
            loads.append(browser.js("performance.getEntriesByName('ulma-ready')[0].startTime"))
    finally:
        browser.close()
    print("load of this build's page: %.0f ms (median of %d)" % (statistics.median(loads), args.rounds))


if __name__ == "__main__":
    main()
