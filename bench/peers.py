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
writes to a file with its default settings (yappi with its wall clock: its
default CPU clock costs a system call per event), so none pays for a
terminal.  Peak RSS comes from bench/peak_rss.c, a small launcher.
The "untraced (sanity)" row runs the program under the same runner with no
tool at all and must come out at 1.00 +/- 0.05.  A tool that fails on a
workload shows as "failed" with the reason.

--write-doc regenerates this Python version's section of the Markdown file
(other versions' sections are kept; --refresh-doc only rewrites the header
and the verdicts), with a verdict per workload computed
from the same numbers: where ulma stands among the tools that record every
call, and how far it is from the fastest sampler.  Do not edit its numbers by
hand.  ulma is reinstalled from this tree on every run, so the table always
measures the checked-out code.
"""
import argparse
import datetime
import re
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

DETERMINISTIC = ["cProfile", "viztracer", "yappi"]
TIE = 0.02  # ratios this close are not told apart by 5 pairs on a 2-core machine
SAMPLERS = ["pyinstrument", "py-spy", "scalene"]

# what each tool records: a sampler's lower ratio is read in that light
CAPTURES = {
    "ulma": "every call (Python + builtins), per-thread timeline, trace file",
    "cProfile": "every call (Python + builtins), aggregated; before 3.12 only in the thread that started it "
                "(sys.setprofile), so its figure on the threads workload leaves the worker threads out",
    "viztracer": "every call, timeline, JSON trace; by default it keeps only the last 1,000,000 entries "
                 "(a circular buffer), so on long runs its file holds the end of the run only",
    "yappi": "every call, aggregated, wall clock (`-c wall`: its default CPU clock costs a system call "
             "per event, several times slower)",
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
        sh([python, "-m", "venv", "--clear", env])
        sh([py, "-m", "pip", "install", "-q", "--upgrade", "pip"])
        for peer in PEERS:  # one at a time: a peer that fails to install is reported, not fatal
            r = subprocess.run([py, "-m", "pip", "install", "-q", peer], capture_output=True, text=True)
            if r.returncode:
                print("bench: could not install %s: %s" % (peer, r.stderr.strip().splitlines()[-1:]))
    # always this tree's ulma, built for this Python in its own build directory
    sh([py, "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", ROOT,
        "-Cbuild-dir=" + os.path.join(ROOT, "build", "py-bench-" + tag)])
    return env, py


def commands(env, py, tool, script, out):
    b = lambda name: os.path.join(env, "bin", name)  # noqa: E731
    return {
        "untraced (sanity)": [py, script],
        "ulma": [b("ulma"), "run", "--summary", "none", "-o", out + ".trace", script],
        "cProfile": [py, "-m", "cProfile", "-o", out + ".prof", script],
        "viztracer": [b("viztracer"), "--quiet", "-o", out + ".json", script],
        "yappi": [py, "-m", "yappi", "-c", "wall", "-o", out + ".pstat", "-f", "pstat", script],
        "pyinstrument": [b("pyinstrument"), "-r", "speedscope", "-o", out + ".speedscope", script],
        "py-spy": [b("py-spy"), "record", "-o", out + ".svg", "--", py, script],
        "scalene": [b("scalene"), "run", "-o", out + ".scalene.json", script],
        "memray": [py, "-m", "memray", "run", "-f", "-o", out + ".memray", script],
    }[tool]


def peak_rss_launcher():
    """bench/peak_rss.c, built once into build/: see there why the runner needs it."""
    exe = os.path.join(ROOT, "build", "bench-peak-rss")
    src = os.path.join(HERE, "peak_rss.c")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        os.makedirs(os.path.dirname(exe), exist_ok=True)
        sh([os.environ.get("CC", "cc"), "-O2", "-o", exe, src])
    return exe


def timed(cmd, env_vars, launcher, rss_file):
    """(wall seconds, peak RSS in KiB of the command and its descendants)."""
    t = time.perf_counter()
    proc = subprocess.run([launcher, rss_file] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          env=env_vars)
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines() or ["exit %d" % proc.returncode]
        errors = [line for line in lines if "Error" in line]  # the cause, not a backtrace's last frame
        raise RuntimeError((errors[0] if errors else lines[-1]).strip()[:120])
    with open(rss_file) as f:
        return elapsed, int(f.read())


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
    ap.add_argument("--write-doc", metavar="PATH", help="regenerate this Python version's section of a Markdown file")
    ap.add_argument("--refresh-doc", metavar="PATH",
                    help="measure nothing: rewrite the file's header and every section's verdict from its table")
    args = ap.parse_args()
    if args.refresh_doc:
        if not os.path.isfile(args.refresh_doc):
            sys.exit("bench/peers.py: no such file to refresh: %s" % args.refresh_doc)
        write_doc(args.refresh_doc, None, args, None, None)
        return

    env, py = ensure_venv(args.python, args.rebuild)
    version = subprocess.check_output([py, "-c", "import platform; print(platform.python_version())"],
                                      text=True).strip()
    env_vars = dict(os.environ, ULMA_PYTHON=py, PATH=os.path.join(env, "bin") + os.pathsep + os.environ["PATH"])
    outdir = tempfile.mkdtemp(prefix="ulma-peers-")
    launcher, rss_file = peak_rss_launcher(), os.path.join(outdir, "peak-rss")
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
                    base_t.append(timed([py, script], env_vars, launcher, rss_file)[0])
                    t, m = timed(commands(env, py, tool, script, out), env_vars, launcher, rss_file)
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
    for line in verdicts(rows, version_tuple(version)):
        print(line)
    if args.write_doc:
        write_doc(args.write_doc, version, args, rows, tool_versions_of(py))


def ratio_of(cell):
    m = re.match(r"([0-9.]+)x$", cell["ratio"])
    return float(m.group(1)) if m else None


def main_thread_only(tool, workload, version):
    """cProfile before 3.12 profiles the thread that started it, so on the threads workload it does
    not record the calls the other tools are timed on."""
    return tool == "cProfile" and workload == "threads" and version < (3, 12)


def verdicts(rows, version):
    """One line per workload, computed from the table: ulma against every-call tools and samplers.
    `version` is the (major, minor) of the Python measured."""
    lines = []
    for name in dict.fromkeys(r[0] for r in rows):
        cells = {tool: ratio_of(c) for n, tool, c in rows if n == name}
        ulma = cells.get("ulma")
        if ulma is None:
            lines.append("- **%s**: ulma failed or was not run." % name)
            continue
        left_out = ["%s (%.2fx) is left out: before 3.12 it records only the thread that started it, "
                    "none of the workers" % (t, r) for t, r in cells.items()
                    if r is not None and main_thread_only(t, name, version)]
        det = sorted((r, t) for t, r in cells.items()
                     if t in DETERMINISTIC and r is not None and not main_thread_only(t, name, version))
        smp = sorted((r, t) for t, r in cells.items() if t in SAMPLERS and r is not None)
        if det and det[0][0] < ulma <= det[0][0] + TIE:
            where = "ulma (%.2fx) is **tied** with %s (%.2fx): within %.2f, this machine's noise" % (
                ulma, det[0][1], det[0][0], TIE)
        elif det and det[0][0] < ulma:
            where = "**not the lowest** of the tools that record every call: %s runs at %.2fx, ulma at %.2fx" % (
                det[0][1], det[0][0], ulma)
        elif det:
            where = "ulma (%.2fx) is the lowest of the tools that record every call; next is %s at %.2fx" % (
                ulma, det[0][1], det[0][0])
        else:
            where = "ulma ran at %.2fx; no other every-call tool finished" % ulma
        if left_out:
            where += "; " + "; ".join(left_out)
        if smp:
            where += "; the fastest sampler, %s, adds %.0f%% to the run time where ulma adds %.0f%%" % (
                smp[0][1], max(smp[0][0] - 1, 0) * 100, max(ulma - 1, 0) * 100)
        lines.append("- **%s**: %s." % (name, where))
    sane = [ratio_of(c) for n, t, c in rows if t == "untraced (sanity)"]
    bad = [r for r in sane if r is None or abs(r - 1.0) > 0.05 + 1e-9]  # 0.95 and 1.05 pass
    if bad:
        lines.append("- **Sanity check failed**: the runner with no tool came out at %s, outside 1.00 +/- 0.05; "
                     "the machine was not quiet, so read this section with care." % ", ".join(
                         "%.2fx" % r if r is not None else "failed" for r in sane))
    else:
        lines.append("- Sanity check passed: with no tool the runner came out at %s (must be 1.00 +/- 0.05)." %
                     ", ".join("%.2fx" % r for r in sane))
    return lines


VERDICT = "\nVerdict, computed from the table above:\n"


def section(version, args, rows, tool_versions):
    commit = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    out = ["## Python %s, %s\n" % (version, datetime.date.today().isoformat()),
           "Machine: %s, %d CPUs, %s. %d interleaved pairs per cell; median wall-time ratio to untraced." % (
               platform.processor() or platform.machine(), os.cpu_count(), platform.platform(), args.rounds),
           "ulma at commit %s." % commit,
           "Command: `python bench/peers.py --rounds %d --workloads %s --write-doc docs/benchmarks.md`" % (
               args.rounds, args.workloads),
           "Tool versions: %s.\n" % ", ".join("%s %s" % kv for kv in sorted(tool_versions.items())),
           "| workload | tool | ratio | peak RSS | output | bytes/event |", "|---|---|---|---|---|---|"]
    for name, tool, c in rows:
        out.append("| %s | %s | %s | %s | %s | %s |" % (name, tool, c["ratio"], c["rss"], c["size"], c["bpe"]))
    out.append(VERDICT)
    out.extend(verdicts(rows, version_tuple(version)))
    return "\n".join(out) + "\n"


def version_tuple(version):
    """(3, 11) from "3.11.7"."""
    return tuple(int(x) for x in version.split(".")[:2])


def reverdict(part):
    """A kept section with its verdict computed again from its own table (the wording may have changed)."""
    version = version_tuple(re.match(r"## Python ([0-9.]+)", part).group(1))
    table = part.split(VERDICT.strip(), 1)[0].rstrip()
    rows = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 6 and cells[0] != "workload":
            rows.append((cells[0], cells[1], dict(zip(["ratio", "rss", "size", "bpe"], cells[2:]))))
    return table + "\n" + VERDICT + "\n" + "\n".join(verdicts(rows, version)) + "\n" if rows else part


HEADER_END = "<!-- sections by Python version follow -->"


def write_doc(path, version, args, rows, tool_versions):
    """Replace this Python version's section of `path`, keeping the others, sorted by version."""
    sections = {}
    if os.path.exists(path):
        text = open(path).read()
        body = text.split(HEADER_END, 1)[1] if HEADER_END in text else ""
        for part in re.split(r"(?m)^(?=## Python )", body):
            m = re.match(r"## Python (\d+)\.(\d+)", part)
            if m:
                sections[(int(m.group(1)), int(m.group(2)))] = reverdict(part.strip() + "\n")
    if version:  # else only the header and the verdicts are rewritten
        sections[version_tuple(version)] = section(version, args, rows, tool_versions)
    head = ["# Benchmarks: ulma against the tools users would pick instead\n",
            "Generated by `bench/peers.py` (`make bench-peers`); do not edit the numbers by hand.",
            "Each cell runs the workload untraced and under the tool in turns, and divides the median",
            "times. Every tool writes a file, with its default settings but for yappi's clock (below).",
            "Peak RSS is that of the largest of the run's processes (for ulma, the monitor or the",
            "program), measured by bench/peak_rss.c. Bytes/event is the output size over the calls",
            "and returns recorded.\n",
            "What each tool records, so that a sampler's lower ratio is read in that light:\n"]
    head += ["- **%s**: %s" % kv for kv in CAPTURES.items()]
    head += ["",
             "The interpreter's hook sets a floor under every tool that records every call, whatever it",
             "does per event. On Python 3.11 a C profile function (`PyEval_SetProfile`, which cProfile,",
             "yappi and ulma use there) sends every bytecode through the interpreter's tracing path, run",
             "unspecialized, so code that runs many bytecodes per call slows down too: the threads",
             "workload's loop does, with an empty callback, about as much as under ulma.",
             "`bench/hook_floor.py` measures that floor for each mechanism and version, and",
             "[hooks.md](hooks.md) quotes it. On 3.12 and later, `sys.monitoring` costs such loops",
             "little."]
    with open(path, "w") as f:
        f.write("\n".join(head) + "\n\n" + HEADER_END + "\n\n")
        f.write("\n".join(sections[k] for k in sorted(sections, reverse=True)))


def tool_versions_of(py):
    listing = json.loads(subprocess.check_output([py, "-m", "pip", "list", "--format", "json"], text=True))
    wanted = set(PEERS) | {"ulma"}
    return {p["name"].lower(): p["version"] for p in listing if p["name"].lower() in wanted}


if __name__ == "__main__":
    main()
