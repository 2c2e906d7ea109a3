"""The HTML report's bounds, side by side: its size and the time headless
Chromium takes to make it interactive, for a 10^7- and a 10^8-event trace.

Usage: python bench/html.py [--rounds 3] [--small N] [--large N]

Records two traces of the same program (four threads, each computing
fib(N) recursively; N = 29 gives about 1.3 * 10^7 events, N = 34 about
1.5 * 10^8), exports each with `ulma report --html`, then opens each page
in headless Chromium (tests/py/html_browser.py) --rounds times and reads
the page's own "ulma-ready" performance mark: milliseconds from the start
of navigation to the end of its script (the first drawing of every view
done).  Prints events, trace size, HTML size, export seconds and load
milliseconds (medians), and the ratios large/small; then the same for a
hand-made worst case (tests/py/trace_builder.py): 30000 functions, the
HTML's 4000 rows full, and a 100,000-deep recursion filling its tree.  The bounds it checks
(docs/exports.md): at most 5 MB and 2 s whatever the events.
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
sys.path.insert(0, os.path.join(HERE, "..", "tests", "py"))
import html_browser  # noqa: E402

PROGRAM = """import sys, threading
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
threads = [threading.Thread(target=fib, args=(int(sys.argv[1]),)) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


def record(ulma, out, n):
    prog = os.path.join(out, "fib_threads.py")
    with open(prog, "w") as f:
        f.write(PROGRAM)
    trace = os.path.join(out, "fib%d.trace" % n)
    subprocess.run([ulma, "run", "--no-live", "--summary", "none", "-o", trace, prog, str(n)], check=True,
                   env=dict(os.environ, ULMA_PYTHON=sys.executable))
    summary = json.loads(subprocess.run([ulma, "report", trace, "--format", "json"], check=True,
                                        capture_output=True, text=True).stdout)
    return trace, summary["events"]


def worst(ulma, out):
    """A trace near every bound: 30000 functions and a 100,000-deep recursion."""
    from trace_builder import trace

    names = ["main", "deep"] + ["f%d" % k for k in range(30000)]
    events, t = [(0, "enter", 1)], 1
    for k in range(30000):
        events += [(t, "enter", 3 + k), (t + 5 + k % 7, "exit")]
        t += 20
    for _ in range(100000):
        events.append((t, "enter", 2))
        t += 1
    for _ in range(100000):
        events.append((t, "exit"))
        t += 1
    events.append((t, "exit"))
    path = os.path.join(out, "worst.trace")
    with open(path, "wb") as f:
        f.write(trace(0, 0, t + 1, t + 1, events, func_names=names))
    return path, len(events)


def measure(ulma, out, n, rounds):
    trace, events = record(ulma, out, n) if n else worst(ulma, out)
    page = os.path.join(out, "fib%d.html" % n)
    exports, loads = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        subprocess.run([ulma, "report", trace, "--html", page], check=True)
        exports.append(time.perf_counter() - t)
    browser = html_browser.Browser(tempfile.mkdtemp(dir=out))
    try:
        for _ in range(rounds):
            browser.open(page)
            loads.append(browser.js("performance.getEntriesByName('ulma-ready')[0].startTime"))
    finally:
        browser.close()
    return {"events": events, "trace": os.path.getsize(trace), "html": os.path.getsize(page),
            "export": statistics.median(exports), "load": statistics.median(loads)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--small", type=int, default=29)
    ap.add_argument("--large", type=int, default=34)
    args = ap.parse_args()
    if html_browser.CHROMIUM is None:
        sys.exit("bench: chromium is not installed (scripts/ensure-deps.sh installs it)")
    ulma = ulma_binary()
    out = tempfile.mkdtemp(prefix="ulma-bench-html-")
    rows = [measure(ulma, out, n, args.rounds) for n in (args.small, args.large, 0)]
    print("%-8s %14s %12s %12s %10s %10s" % ("", "events", "trace MiB", "html MB", "export s", "load ms"))
    for name, r in zip(("small", "large", "worst"), rows):
        print("%-8s %14d %12.1f %12.2f %10.2f %10.0f" % (name, r["events"], r["trace"] / 2**20, r["html"] / 1e6,
                                                       r["export"], r["load"]))
    a, b = rows[:2]
    print("%-8s %14.1fx %11.1fx %11.2fx %9.1fx %9.2fx" % ("ratio", b["events"] / a["events"], b["trace"] / a["trace"],
                                                         b["html"] / a["html"], b["export"] / a["export"],
                                                         b["load"] / a["load"]))
    ok = all(r["html"] <= 5e6 and r["load"] <= 2000 for r in rows)
    print("bounds (at most 5 MB, interactive within 2 s):", "met" if ok else "NOT met")


if __name__ == "__main__":
    main()
