"""ulma against the profilers users would pick instead, side by side in one run.

Usage:
  python bench/peers.py [--rounds 5] [--workloads fib,mergesort,...] [--tools ...]
                        [--write-doc docs/benchmarks.md]

Installs the peers from PyPI into its own virtual environment
(build/bench-peers-X.Y: VizTracer, yappi, pyinstrument, py-spy, Scalene,
memray, and ulma from this tree), then runs each workload of bench/workloads/
untraced and under each tool, interleaved (untraced, tool, untraced, tool ...),
`--rounds` pairs each.  It prints, per tool and workload, the median ratio of
wall time to untraced and the peak RSS, and for tracers that write files
(ulma, VizTracer) the output size and bytes per recorded event.  Every tool
writes to a file with its default settings, so none pays for a terminal.
The "untraced (sanity)" row runs the program under the same runner with no
tool at all and must come out at 1.00 +/- 0.05.  A tool that fails on a
workload shows as "failed" with the reason.  --write-doc regenerates the
Markdown table (do not edit its numbers by hand).
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEERS = ["viztracer", "yappi", "pyinstrument", "py-spy", "scalene", "memray"]

# what each tool records: a sampler's lower ratio is read in that light
CAPTURES = {
    "ulma": "every call (Python + builtins), per-thread timeline, trace file",
    "cProfile": "every call (Python + builtins), aggregated",
    "viztracer": "every call, timeline, JSON trace",
    "yappi": "every call, aggregated, wall clock",
    "pyinstrument": "stack samples every 1 ms (statistical)",
    "py-spy": "stack samples at 100 Hz from outside (statistical)",
    "scalene": "CPU/memory samples (statistical)",
    "memray": "every allocation (memory, not time)",
}


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def ensure_venv(python, rebuild=False):
    tag = "%d.%d" % tuple(int(x) for x in subprocess.check_output(
        [python, "-c", "import sys; print(*sys.version_info[:2])"], text=True).split())
    env = os.path.join(ROOT, "build", "bench-peers-" + tag)
    py = os.path.join(env, "bin", "python")
    if rebuild or not os.path.exists(py):
        sh([python, "-m", "venv", env])
        sh([py, "-m", "pip", "install", "-q", "--upgrade", "pip"])
        for peer in PEERS:  # one at a time: a peer that fails to install is reported, not fatal
            r = subprocess.run([py, "-m", "pip", "install", "-q", peer], capture_output=True, text=True)
            if r.returncode:
                print("bench: could not install %s: %s" % (peer, r.stderr.strip().splitlines()[-1:]))
        sh([py, "-m", "pip", "install", "-q", ROOT, "-Cbuild-dir=" + os.path.join(ROOT, "build", "py-bench")])
    return env, py


def commands(env, py, tool, script, out):
    b = lambda name: os.path.join(env, "bin", name)  # noqa: E731
    return {
        "untraced (sanity)": [py, script],
        "ulma": [b("ulma"), "run", "--summary", "none", "-o", out + ".trace", script],
        "cProfile": [py, "-m", "cProfile", "-o", out + ".prof", script],
        "viztracer": [b("viztracer"), "--quiet", "-o", out + ".json", script],
        "yappi": [py, "-m", "yappi", "-o", out + ".pstat", "-f", "pstat", script],
        "pyinstrument": [b("pyinstrument"), "-r", "speedscope", "-o", out + ".speedscope", script],
        "py-spy": [b("py-spy"), "record", "-o", out + ".svg", "--", py, script],
        "scalene": [b("scalene"), "run", "-o", out + ".scalene.json", script],
        "memray": [py, "-m", "memray", "run", "-f", "-o", out + ".memray", script],
    }[tool]


def timed(cmd, env_vars):
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env_vars)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status
    if proc.returncode != 0:
        raise RuntimeError((err.strip().splitlines() or ["exit %d" % proc.returncode])[-1][:120])
    return elapsed, usage.ru_maxrss  # KiB, this process and the children it waited for


def output_stats(tool, out, env_vars, env):
    """(bytes, events) for tools that write a trace of every event."""
    if tool == "ulma":
        rep = subprocess.run([os.path.join(env, "bin", "ulma"), "report", out + ".trace", "--format", "json"],
                             capture_output=True, text=True, env=env_vars, check=True)
        data = json.loads(rep.stdout)
        return data["trace_bytes"], data["events"]
    if tool == "viztracer":
        path = out + ".json"
        with open(path) as f:
            events = len(json.load(f).get("traceEvents", []))
        return os.path.getsize(path), events * 2  # one complete event = an entry and an exit
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workloads", default="fib,mergesort,bootstrap,threads,numeric")
    ap.add_argument("--workload-dir", default=os.path.join(HERE, "workloads"))
    ap.add_argument("--tools", default="untraced (sanity),ulma,cProfile,viztracer,yappi,pyinstrument,py-spy,scalene,memray")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--rebuild", action="store_true", help="recreate the peers' virtual environment")
    ap.add_argument("--write-doc", metavar="PATH", help="append this run's table to a Markdown file")
    args = ap.parse_args()

    env, py = ensure_venv(args.python, args.rebuild)
    version = subprocess.check_output([py, "-c", "import platform; print(platform.python_version())"],
                                      text=True).strip()
    env_vars = dict(os.environ, ULMA_PYTHON=py, PATH=os.path.join(env, "bin") + os.pathsep + os.environ["PATH"])
    outdir = tempfile.mkdtemp(prefix="ulma-peers-")
    tools = args.tools.split(",")
    rows = []
    print("Python %s, %d interleaved pairs per cell, median ratio to untraced" % (version, args.rounds))
    for name in args.workloads.split(","):
        script = os.path.join(args.workload_dir, name + ".py")
        for tool in tools:
            out = os.path.join(outdir, "%s-%s" % (name, tool.split()[0]))
            base_t, tool_t, rss = [], [], []
            try:
                for _ in range(args.rounds):
                    base_t.append(timed([py, script], env_vars)[0])
                    t, m = timed(commands(env, py, tool, script, out), env_vars)
                    tool_t.append(t)
                    rss.append(m)
                ratio = statistics.median(tool_t) / statistics.median(base_t)
                stats = output_stats(tool, out, env_vars, env)
                cell = {"ratio": "%.2fx" % ratio, "rss": "%.0f MB" % (max(rss) / 1024.0),
                        "size": "%.1f MB" % (stats[0] / 1e6) if stats else "-",
                        "bpe": "%.1f" % (stats[0] / max(stats[1], 1)) if stats else "-"}
            except (RuntimeError, OSError, subprocess.CalledProcessError, ValueError) as exc:
                cell = {"ratio": "failed: %s" % exc, "rss": "-", "size": "-", "bpe": "-"}
            rows.append((name, tool, cell))
            print("  %-10s %-18s %-10s rss %-8s out %-9s B/event %s" % (
                name, tool, cell["ratio"], cell["rss"], cell["size"], cell["bpe"]))
            sys.stdout.flush()
    if args.write_doc:
        write_doc(args.write_doc, version, args, rows)


def write_doc(path, version, args, rows):
    new = not os.path.exists(path)
    with open(path, "a") as f:
        if new:
            f.write("# Benchmarks: ulma against the tools users would pick instead\n\n"
                    "Generated by `python bench/peers.py --write-doc docs/benchmarks.md`; "
                    "do not edit the numbers by hand.\n\nWhat each tool records:\n\n")
            for tool, what in CAPTURES.items():
                f.write("- **%s**: %s\n" % (tool, what))
            f.write("\n")
        f.write("## Python %s, %s\n\n" % (version, datetime.date.today().isoformat()))
        f.write("Machine: %s, %d CPUs, %s. %d interleaved pairs per cell; median wall-time ratio "
                "to untraced.\nCommand: `python bench/peers.py --rounds %d --workloads %s`\n\n" % (
                    platform.processor() or platform.machine(), os.cpu_count(), platform.platform(),
                    args.rounds, args.rounds, args.workloads))
        f.write("| workload | tool | ratio | peak RSS | output | bytes/event |\n|---|---|---|---|---|---|\n")
        for name, tool, c in rows:
            f.write("| %s | %s | %s | %s | %s | %s |\n" % (name, tool, c["ratio"], c["rss"], c["size"], c["bpe"]))
        f.write("\n")


if __name__ == "__main__":
    main()
