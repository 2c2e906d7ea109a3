"""`ulma run --memory`'s native half (docs/memory.md, "Native allocations"):
a C extension (tests/native/memmod.c, built here with gcc) that calls
malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc,
reallocarray, mmap, munmap and free directly, with known answers:

- N blocks of S bytes malloc'd in the native function grab() are N native
  allocations of N * S bytes charged to grab's frame (instrumented build)
  or to the C function the interpreter called (plain build), and freed
  later they are its free_count;
- one block by each allocator function has the sizes the program asked;
- PyMem_RawMalloc's blocks are Python's, counted once, not also as the
  malloc underneath;
- native threads that allocate and exit, and a fork while one allocates:
  no crash, each kept block counted once;
- numpy's data buffers are counted once, with their exact bytes, in the
  frame that made the array;
- the live summary and `ulma report` agree.
"""
import json
import os
import subprocess
import sysconfig

import pytest

from test_native import cc  # noqa: F401 (the compiler fixture)

N, S, CHURN, CHURN_S, KEEP2, KEEP2_S = 1000, 100, 500, 1000, 10, 12345
PYMEM, PYMEM_S = 10, 700
THREADS, THREAD_N, THREAD_S = 4, 200, 333
BUSY = 300000
VARIETY_BYTES = 3 * 1000 + 100 + 5000 + 4096 + 8192 + 2048 + 4096 + 10 * 300 + 65536
VARIETY_COUNT = 9

SCRIPT = """\
import os
import sys
import threading
sys.path.insert(0, sys.argv[1])
import memmod

def keeper():
    memmod.keep(%(N)d, %(S)d)

def churner():
    memmod.churn(%(CHURN)d, %(CHURN_S)d)

def various():
    memmod.variety()

def pym():
    memmod.pymem(%(PYMEM)d, %(PYMEM_S)d)

def freer():
    memmod.release()

def keeper2():
    memmod.keep(%(KEEP2)d, %(KEEP2_S)d)

def threaded():
    memmod.threads(%(THREADS)d, %(THREAD_N)d, %(THREAD_S)d)

def forked():
    busy = threading.Thread(target=memmod.churn, args=(%(BUSY)d, 64))
    busy.start()
    pid = os.fork()  # while busy mallocs and frees
    if pid == 0:
        memmod.churn(100, 64)
        os._exit(0)
    busy.join()
    os.waitpid(pid, 0)

def main():
    keeper()
    churner()
    various()
    pym()
    freer()
    keeper2()
    threaded()
    if len(sys.argv) > 2:
        forked()

main()
""" % dict(BUSY=BUSY, N=N, S=S, CHURN=CHURN, CHURN_S=CHURN_S, KEEP2=KEEP2, KEEP2_S=KEEP2_S, PYMEM=PYMEM, PYMEM_S=PYMEM_S,
           THREADS=THREADS, THREAD_N=THREAD_N, THREAD_S=THREAD_S)


@pytest.fixture(scope="module")
def memmod(cc):  # noqa: F811
    """tests/native/memmod.c built as an extension of this interpreter:
    {"instrumented": dir, "plain": dir}."""
    inc = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    dirs = {}
    for instrument in (True, False):
        d = os.path.join(cc.dir, "memmod_%s" % ("i" if instrument else "p"))
        os.makedirs(d, exist_ok=True)
        cc(["memmod.c"], os.path.join(d, "memmod" + suffix), shared=True, extra=["-I" + inc, "-lpthread"],
           link_rt=instrument, instrument=instrument)
        dirs["instrumented" if instrument else "plain"] = d
    return dirs


def run_memory(run_ulma, argv, trace):
    proc = run_ulma(["run", "--memory", "--no-live", "--summary", "json", "-o", trace] + argv)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    err = proc.stderr.decode()
    return json.loads(err[err.index("{"):])  # 3.12+ may warn about a fork with threads first


def functions(data):
    return {f["name"]: f for f in data["functions"]}


@pytest.fixture(scope="module")
def runs(memmod, run_ulma, report_json, tmp_path_factory):
    d = tmp_path_factory.mktemp("memnative")
    script = d / "use_memmod.py"
    script.write_text(SCRIPT)
    out = {}
    for build in ("instrumented", "plain"):
        trace = str(d / (build + ".trace"))
        live = run_memory(run_ulma, [str(script), memmod[build]], trace)
        report, _ = report_json(trace)
        out[build] = (live, report)
    return out


def test_n_native_blocks_charged_to_the_native_frame(runs):
    live, _ = runs["instrumented"]
    fs = functions(live)
    grab = fs["grab"]
    assert grab["native_alloc_count"] == N + KEEP2 and grab["native_alloc_bytes"] == N * S + KEEP2 * KEEP2_S, grab
    assert grab["alloc_count"] == grab["native_alloc_count"], "nothing of Python's in grab"
    assert grab["free_count"] == N, "release() freed the first N"
    assert grab["native_net_bytes"] == grab["net_bytes"] == KEEP2 * KEEP2_S, grab
    leaks = [leak for leak in live["leaks"] if leak["stack"][-1:] == ["grab"]]
    assert len(leaks) == 1 and leaks[0]["stack"][-4:] == ["keeper2", "memmod.keep", "memmod_keep", "grab"], leaks
    assert leaks[0]["native_count"] == leaks[0]["count"] == KEEP2
    assert leaks[0]["native_bytes"] == leaks[0]["bytes"] == KEEP2 * KEEP2_S


def test_without_native_frames_the_c_function_that_was_called(runs):
    live, _ = runs["plain"]
    fs = functions(live)
    assert "grab" not in fs
    keep = fs["memmod.keep"]
    assert keep["native_alloc_count"] == N + KEEP2 and keep["native_alloc_bytes"] == N * S + KEEP2 * KEEP2_S, keep
    assert keep["native_net_bytes"] == KEEP2 * KEEP2_S, keep


def test_churn_and_every_allocator_function(runs):
    for build, prefix in (("instrumented", "memmod_"), ("plain", "memmod.")):
        fs = functions(runs[build][0])
        churn = fs[prefix + "churn"]
        assert churn["native_alloc_count"] == CHURN and churn["native_alloc_bytes"] == CHURN * CHURN_S, churn
        assert churn["free_count"] == CHURN and churn["net_bytes"] == 0, churn
        variety = fs[prefix + "variety"]
        assert variety["native_alloc_count"] == VARIETY_COUNT, variety
        assert variety["native_alloc_bytes"] == VARIETY_BYTES, variety
        assert variety["free_count"] == VARIETY_COUNT and variety["native_net_bytes"] == 0, variety


def test_pymem_blocks_are_pythons_and_counted_once(runs):
    for build, prefix in (("instrumented", "memmod_"), ("plain", "memmod.")):
        f = functions(runs[build][0])[prefix + "pymem"]
        assert f["alloc_count"] == PYMEM and f["alloc_bytes"] == PYMEM * PYMEM_S, f
        assert f["native_alloc_count"] == 0, f
        assert f["free_count"] == PYMEM, "freed with free(): the same block"


def test_threads_that_allocate_and_exit(runs):
    live, _ = runs["instrumented"]
    w = functions(live)["worker"]
    assert w["native_alloc_count"] == THREADS * (THREAD_N + 1), w
    assert w["native_net_bytes"] == THREADS * THREAD_S and w["free_count"] == THREADS * THREAD_N, w
    plain, _ = runs["plain"]
    # no frame on those threads: counted, outside any function
    assert plain["outside_alloc_count"] >= THREADS * (THREAD_N + 1), plain["outside_alloc_count"]


def test_report_agrees(runs):
    keys = ["alloc_count", "alloc_bytes", "free_count", "native_alloc_count", "native_alloc_bytes", "leaks"]
    for build in runs:
        live, report = runs[build]
        assert {k: live[k] for k in keys} == {k: report[k] for k in keys}, build


def test_fork_while_native_threads_allocate(memmod, run_ulma, tmp_path):
    script = tmp_path / "use_memmod.py"
    script.write_text(SCRIPT)
    data = run_memory(run_ulma, [str(script), memmod["instrumented"], "fork"], str(tmp_path / "f.trace"))
    churn = functions(data)["memmod.churn"]
    # the main thread's, the busy thread's and the child's (whose native
    # frame has a name or an address: all below memmod.churn's frames)
    assert churn["calls"] == 3 and churn["total_alloc_count"] == CHURN + BUSY + 100, churn
    assert churn["total_alloc_bytes"] == CHURN * CHURN_S + (BUSY + 100) * 64, churn
    assert functions(data)["grab"]["native_net_bytes"] == KEEP2 * KEEP2_S


NUMPY_SCRIPT = """\
import numpy as np

def make(n, length):
    return [np.ones(length) for _ in range(n)]

def main():
    kept = make(%d, %d)
    return kept

kept = main()
"""


def test_numpy_data_buffers_counted_once_with_exact_bytes(run_ulma, tmp_path):
    try:
        import numpy  # noqa: F401
    except ImportError:
        pytest.skip("numpy is not installed here")
    arrays, length = 5, 1000000
    script = tmp_path / "np_arrays.py"
    script.write_text(NUMPY_SCRIPT % (arrays, length))
    data = run_memory(run_ulma, [str(script)], str(tmp_path / "np.trace"))
    held = [leak for leak in data["leaks"] if "make" in leak["stack"]]
    held_bytes = sum(leak["bytes"] for leak in held)
    data_bytes = arrays * length * 8
    # the buffers, once each (numpy 2 asks PyMem_RawMalloc, numpy 1 malloc:
    # either way one block), and the small array objects and the list
    assert data_bytes <= held_bytes < data_bytes + 4096, (held_bytes, held)
    big = sum(leak["count"] for leak in held if leak["bytes"] >= length * 8)
    assert big >= 1
