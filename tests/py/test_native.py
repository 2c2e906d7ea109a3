"""Native code in the call stack: programs and extension modules built with
-finstrument-functions, and ulma's C API, traced end to end with known
answers (docs/native.md).

The C sources are in tests/native/; each test compiles what it needs with
gcc (g++ for C++) against the runtime and header this environment's ulma
package installed, and skips if there is no compiler.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig

import pytest

from conftest import base_env
from test_live import needs_tmux, pane, table  # noqa: F401 (pane: the tmux fixture)

NATIVE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "native")


def ulma_package_dir():
    import ulma

    return os.path.dirname(ulma.__file__)


@pytest.fixture(scope="module")
def cc(tmp_path_factory):
    """cc(sources, out, shared=False, cxx=False, extra=()) -> path of the built file."""
    if not shutil.which("gcc"):
        pytest.skip("no gcc here")
    pkg = ulma_package_dir()
    include = os.path.join(pkg, "include")
    assert os.path.exists(os.path.join(include, "ulma", "ulma.h")), "ulma.h is not installed with the package"
    assert os.path.exists(os.path.join(pkg, "libulma_rt.so")), "libulma_rt.so is not installed with the package"
    out_dir = tmp_path_factory.mktemp("native")

    def build(sources, out, shared=False, cxx=False, extra=(), link_rt=True, instrument=True):
        compiler = "g++" if cxx else "gcc"
        if not shutil.which(compiler):
            pytest.skip("no %s here" % compiler)
        path = str(out_dir / out)
        argv = [compiler, "-O1", "-g", "-I" + include]
        if instrument:
            argv.append("-finstrument-functions")
        if shared:
            argv += ["-shared", "-fPIC"]
        argv += [os.path.join(NATIVE, s) for s in sources] + ["-o", path] + list(extra)
        if link_rt:
            argv += ["-L" + pkg, "-lulma_rt", "-Wl,-rpath," + pkg]
        subprocess.run(argv, check=True, capture_output=True, timeout=120)
        return path

    build.dir = str(out_dir)
    return build


def run_json(run_ulma, argv, trace, cwd=None, extra=()):
    proc = run_ulma(["run", "--no-live", "--summary", "json", "-o", trace] + list(extra) + argv, cwd=cwd)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc, json.loads(proc.stderr.decode())


def rows(data, kind=None):
    return {f["name"]: f for f in data["functions"] if kind is None or f["kind"] == kind}


def decl_line(source, pattern):
    """Line of the first line of tests/native/SOURCE matching the regex."""
    with open(os.path.join(NATIVE, source)) as f:
        for n, line in enumerate(f, 1):
            if re.search(pattern, line):
                return n
    raise AssertionError("%s not in %s" % (pattern, source))


def test_c_recursion_has_its_exact_count_and_name(cc, run_ulma, tmp_path):
    prog = cc(["recurse.c"], "recurse")
    proc, data = run_json(run_ulma, [prog, "20"], str(tmp_path / "r.trace"))
    assert proc.stdout == b"fib 6765\n"
    native = rows(data, "native")
    fib = native["fib"]
    assert fib["calls"] == 2 * 10946 - 1  # fib(n) is called 2*fib(n+1)-1 times
    assert fib["file"].endswith("tests/native/recurse.c") and fib["line"] == decl_line("recurse.c", r"long fib\(")
    assert native["main"]["calls"] == 1
    assert data["lost"] == 0 and data["resynced"] == 0
    # all of the program's time is native code
    assert data["native_ns"] > 0 and data["python_ns"] == 0
    assert fib["total_native_ns"] == fib["total_ns"]
    # the report of the trace says the same
    rep = run_ulma(["report", str(tmp_path / "r.trace"), "--format", "json"])
    assert rep.returncode == 0, rep.stderr
    assert rows(json.loads(rep.stdout), "native")["fib"]["calls"] == fib["calls"]


def _figures(data):
    return {(f["name"], f["file"], f["line"]): f for f in data["functions"]}


def test_run_summary_equals_report_for_native_code(cc, cmod, run_ulma, tmp_path):
    """The monitor's fast loop takes native records (their leaves without a
    frame) as it takes Python's; the reader takes them its own way.  Every
    figure of every function must agree: native recursion, and native code
    under and over Python frames."""
    script = tmp_path / "use_cmod.py"
    script.write_text(CMOD_SCRIPT)
    for name, argv in (("fib", [cc(["recurse.c"], "recurse_same"), "22"]), ("cmod", [str(script), cmod[0]])):
        trace = str(tmp_path / (name + ".trace"))
        _, data = run_json(run_ulma, argv, trace)
        rep = run_ulma(["report", trace, "--format", "json"])
        assert rep.returncode == 0, rep.stderr
        assert _figures(data) == _figures(json.loads(rep.stdout)), name
        assert data["lost"] == 0 and data["resynced"] == 0
    assert rows(data)["leaf_impl"]["calls"] == 5


def test_deep_native_recursion(cc, run_ulma, tmp_path):
    prog = cc(["recurse.c"], "recurse_deep")
    proc, data = run_json(run_ulma, [prog, "deep", "200000"], str(tmp_path / "d.trace"))
    assert proc.stdout == b"depth 200000\n"
    assert rows(data, "native")["down"]["calls"] == 200001
    assert data["lost"] == 0 and data["resynced"] == 0


def test_c_api_zones_and_native_frames(cc, run_ulma, tmp_path):
    prog = cc(["api_prog.c"], "api_prog")
    trace = str(tmp_path / "a.trace")
    proc, data = run_json(run_ulma, [prog], trace)
    assert proc.stdout.startswith(b"done ")
    zones = rows(data, "zone")
    assert zones["work"]["calls"] == 10 and zones["tail"]["calls"] == 1
    assert zones["work"]["file"].endswith("api_prog.c") and zones["work"]["line"] == decl_line("api_prog.c", "ULMA_ZONE\\(\"work")
    native = rows(data, "native")
    assert native["leaf"]["calls"] == 1001 and native["step"]["calls"] == 10
    # the header's helpers are never frames of their own
    assert not any("ulma" in name for name in native), sorted(native)
    # a zone inside native code is native time
    assert zones["work"]["total_native_ns"] == zones["work"]["total_ns"]
    # the thread's name (ulma_thread_name), live and from the trace
    assert [t.get("name") for t in data["thread_list"]] == ["main-loop"], data["thread_list"]
    rep = run_ulma(["report", trace, "--format", "json"])
    assert [t.get("name") for t in json.loads(rep.stdout)["thread_list"]] == ["main-loop"]
    # the text summary has the nat% column and the native line
    text = run_ulma(["report", trace]).stderr.decode() + run_ulma(["report", trace]).stdout.decode()
    assert "nat%" in text and re.search(r"^native: [\d.]+ m?s in C functions and native code", text, re.M), text


def test_longjmp_and_a_stray_exit_are_repaired_and_said(cc, run_ulma, tmp_path):
    prog = cc(["unwind.c"], "unwind")
    trace = str(tmp_path / "u.trace")
    proc, data = run_json(run_ulma, [prog], trace)
    assert proc.stdout == b"after\n"
    native = rows(data, "native")
    assert native["thrower"]["calls"] == 3 and native["catcher"]["calls"] == 1 and native["after"]["calls"] == 1
    # three thrower frames left by longjmp, and one exit of a function never entered
    assert data["resynced"] == 4, data["resynced"]
    # catcher's total covers the throwers it called: they are its children
    assert native["catcher"]["total_ns"] >= native["thrower"]["total_ns"]
    text = run_ulma(["report", trace])
    assert "resynchronised: 4 frames" in text.stdout.decode() + text.stderr.decode()


def test_garbage_in_the_programs_own_ring_is_refused_and_said(cc, run_ulma, tmp_path):
    """docs/design.md, "Hostile writers": a program that writes records
    breaking the session's format into its own ring (through its thread's
    writer, as a C extension scribbling on the mapping could) between two
    zones.  The monitor survives, applies everything else, refuses exactly
    those records, and the summary says so, live and from the trace."""
    root = os.path.dirname(os.path.dirname(NATIVE))
    prog = cc(["hostile_ring.c", "../../src/core/ring.c", "../../src/core/clock.c"], "hostile_ring", instrument=False,
              extra=["-I" + os.path.join(root, "include"), "-I" + os.path.join(root, "src"), "-D_GNU_SOURCE"])
    trace = str(tmp_path / "h.trace")
    proc, data = run_json(run_ulma, [prog], trace)
    written = int(proc.stdout.split()[1])
    assert written == 9, proc.stdout
    assert data["refused"] == written, data["refused"]
    zones = rows(data, "zone")
    assert zones["first"]["calls"] == 1 and zones["work"]["calls"] == 2, zones
    assert data["resynced"] == 0 and data["lost"] == 0
    assert "?" not in rows(data), "a refused id is not named"
    text = run_ulma(["run", "--no-live", "-o", str(tmp_path / "t.trace"), prog])
    assert text.returncode == 0 and "refused: 9 malformed records" in text.stderr.decode(), text.stderr.decode()
    rep = run_ulma(["report", trace, "--format", "json"])
    assert rep.returncode == 0 and json.loads(rep.stdout)["refused"] == written
    rep = run_ulma(["report", trace])
    assert "refused: 9 malformed records" in rep.stdout.decode() + rep.stderr.decode()


def test_cxx_exception_through_instrumented_frames(cc, run_ulma, tmp_path):
    prog = cc(["unwind_cxx.cpp"], "unwind_cxx", cxx=True)
    proc, data = run_json(run_ulma, [prog], str(tmp_path / "x.trace"))
    assert proc.stdout == b"caught 5\n"
    native = rows(data, "native")
    inner = [f for name, f in native.items() if name.startswith("work::inner")]
    assert len(inner) == 1 and inner[0]["calls"] == 20, sorted(native)  # demangled, 4 deep, 5 times
    assert rows(data, "zone")["inner-zone"]["calls"] == 20
    # nothing is left open: main's total holds every inner frame
    assert native["main"]["total_ns"] >= inner[0]["total_ns"]


@pytest.mark.parametrize("stripped", [False, True], ids=["symbols", "dynsym-only"])
def test_library_loaded_by_dlopen_after_tracing_started(cc, run_ulma, tmp_path, stripped):
    lib = cc(["dl_lib.c"], "libdl_%s.so" % ("s" if stripped else "p"), shared=True, link_rt=False)
    if stripped:
        subprocess.run(["strip", "--strip-all", lib], check=True)
    prog = cc(["dl_main.c"], "dl_main")
    proc, data = run_json(run_ulma, [prog, lib], str(tmp_path / "dl.trace"))
    assert proc.stdout == b"work %d\n" % sum(i * i for i in range(7))
    native = rows(data, "native")
    assert native["dl_work"]["calls"] == 1 and native["dl_square"]["calls"] == 7, sorted(native)
    if stripped:  # names from .dynsym, and no debug information for a line
        assert native["dl_square"]["file"] == "~" and native["dl_square"]["line"] == 0
    else:
        assert native["dl_square"]["file"].endswith("dl_lib.c")
        assert native["dl_square"]["line"] == decl_line("dl_lib.c", r"int dl_square\(")


@pytest.fixture(scope="module")
def cmod(cc):
    """tests/native/cmod.c built as an extension of this interpreter:
    (instrumented dir, plain dir)."""
    inc = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    dirs = []
    for instrument in (True, False):
        d = os.path.join(cc.dir, "cmod_%s" % ("i" if instrument else "p"))
        os.makedirs(d, exist_ok=True)
        cc(["cmod.c"], os.path.join(d, "cmod" + suffix), shared=True, extra=["-I" + inc], link_rt=instrument,
           instrument=instrument)
        dirs.append(d)
    return dirs


CMOD_SCRIPT = """\
import sys
sys.path.insert(0, sys.argv[1])
import cmod

def f(i):
    return cmod.leaf(i)

def main():
    print(cmod.apply(f, 5))

main()
"""


def chrome_frames(run_ulma, trace, tmp_path):
    out = str(tmp_path / "c.json")
    proc = run_ulma(["export", trace, "--format", "chrome", "--no-correction", "-o", out])  # raw times: nest strictly
    assert proc.returncode == 0, proc.stderr
    with open(out) as fh:
        d = json.load(fh)
    events = d["traceEvents"] if isinstance(d, dict) else d
    return [e for e in events if e.get("ph") == "X"]


def test_python_callback_inside_native_code_nests(cmod, run_ulma, tmp_path):
    script = tmp_path / "use_cmod.py"
    script.write_text(CMOD_SCRIPT)
    trace = str(tmp_path / "cb.trace")
    proc, data = run_json(run_ulma, [str(script), cmod[0]], trace)
    assert proc.stdout == b"35\n"
    r = rows(data)
    assert r["f"]["calls"] == 5 and r["cmod.leaf"]["calls"] == 5 and r["cmod.apply"]["calls"] == 1
    assert r["cmod_apply"]["kind"] == "native" and r["cmod_apply"]["calls"] == 1
    assert r["twice"]["calls"] == 5 and r["leaf_impl"]["calls"] == 5 and r["cmod_leaf"]["calls"] == 5
    # the Python function f spends all of its time in cmod.leaf and below: native
    assert r["main"]["total_native_ns"] > 0 and r["main"]["total_native_ns"] < r["main"]["total_ns"]
    # nesting by time on the one thread: each frame of the chain inside the one before
    frames = chrome_frames(run_ulma, trace, tmp_path)
    chain = ["main", "cmod.apply", "cmod_apply", "f", "cmod.leaf", "cmod_leaf", "leaf_impl"]
    by_name = {n: [e for e in frames if e["name"] == n] for n in chain}
    leaf = by_name["leaf_impl"][0]
    for outer_name in chain[:-1]:
        inside = [e for e in by_name[outer_name]
                  if e["ts"] <= leaf["ts"] and leaf["ts"] + leaf["dur"] <= e["ts"] + e["dur"] + 0.001]
        assert len(inside) == 1, (outer_name, by_name[outer_name], leaf)


def test_python_counts_unchanged_by_native_tracing(cmod, run_ulma, tmp_path):
    script = tmp_path / "use_cmod.py"
    script.write_text(CMOD_SCRIPT)
    counts = []
    for d in cmod:
        _, data = run_json(run_ulma, [str(script), d], str(tmp_path / "n.trace"))
        counts.append({(f["name"], f["file"], f["line"]): f["calls"] for f in data["functions"]
                       if f["kind"] in ("python", "c") and f["file"] == str(script)})
    assert counts[0] == counts[1] and counts[0][("f", str(script), 5)] == 5, counts


INLINE_SCRIPT = """\
import sys
sys.path.insert(0, sys.argv[1])
import ulma
if sys.argv[2] == "before":
    import cmod
with ulma.profile(sys.argv[3], summary="json"):
    if sys.argv[2] == "after":
        import cmod
    print(cmod.apply(lambda i: cmod.leaf(i), 4))
"""


@pytest.mark.parametrize("when", ["before", "after"])
def test_inline_profile_traces_an_instrumented_module(cmod, run_python, tmp_path, when):
    script = tmp_path / "inline_cmod.py"
    script.write_text(INLINE_SCRIPT)
    trace = str(tmp_path / "i.trace")
    proc = run_python([str(script), cmod[0], when, trace])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert proc.stdout == b"%d\n" % (sum(2 * i for i in range(4)) + sum(i + 1 for i in range(4)))
    err = proc.stderr.decode()
    data = json.loads(err[err.index('{"functions"'):])
    native = rows(data, "native")
    assert native["leaf_impl"]["calls"] == 4 and native["twice"]["calls"] == 4, sorted(native)


def test_static_executable_is_refused(cc, run_ulma, tmp_path):
    try:
        prog = cc(["recurse.c"], "recurse_static", extra=["-static"], link_rt=False, instrument=False)
    except subprocess.CalledProcessError:
        pytest.skip("no static libc here")
    proc = run_ulma(["run", "--no-live", "-o", str(tmp_path / "s.trace"), prog])
    assert proc.returncode == 2
    assert b"statically linked" in proc.stderr and not (tmp_path / "s.trace").exists()


def test_native_program_that_records_nothing(run_ulma, tmp_path):
    true = shutil.which("true")
    proc = run_ulma(["run", "--no-live", "-o", str(tmp_path / "t.trace"), true])
    assert proc.returncode == 0
    assert b"recorded nothing: build it with -finstrument-functions" in proc.stderr
    assert not (tmp_path / "t.trace").exists()


def test_shell_between_ulma_and_the_program(cc, run_ulma, tmp_path):
    """The runtime is preloaded into the shell too: it must leave the session
    to the program the shell starts, which records its calls."""
    prog = cc(["recurse.c"], "recurse_sh")
    proc, data = run_json(run_ulma, ["/bin/sh", "-c", '"$0" 15', prog], str(tmp_path / "sh.trace"))
    assert proc.stdout == b"fib 610\n"
    assert rows(data, "native")["fib"]["calls"] == 2 * 987 - 1


@needs_tmux
@pytest.mark.once("a C program in the live view: no Python involved")
def test_live_view_of_a_native_program(cc, ulma_bin, tmp_path, pane):
    """`ulma run ./prog` on a terminal: the live table shows the native
    functions as they run, by name, and the summary follows."""
    prog = cc(["spin.c"], "spin")
    trace = str(tmp_path / "live.trace")
    p = pane([ulma_bin, "run", "-o", trace, prog, "3"], width=110)
    screen = p.wait("the native function work in the table", lambda s: table(s).get("work", (0,))[0] > 0)
    calls = table(screen)["work"][0]
    assert "spin.c:" in screen, screen
    p.wait("work's call count growing", lambda s: table(s).get("work", (0,))[0] > calls)
    code, text = p.wait_exit()
    assert code == 0 and "SPIN-DONE" in text and "totals:" in text, text


def test_no_c_calls_still_rebinds_a_module_imported_later(cmod, run_ulma, tmp_path):
    """With --no-c-calls ulma sees no _imp.create_dynamic return; the first
    Python function seen after the import rebinds the module's hooks."""
    script = tmp_path / "use_cmod.py"
    script.write_text(CMOD_SCRIPT)
    proc, data = run_json(run_ulma, [str(script), cmod[0]], str(tmp_path / "ncc.trace"), extra=["--no-c-calls"])
    assert proc.stdout == b"35\n"
    r = rows(data)
    assert "cmod.leaf" not in r  # no C calls recorded, as asked
    assert r["f"]["calls"] == 5 and r["twice"]["calls"] == 5 and r["leaf_impl"]["calls"] == 5, sorted(r)
