"""`ulma run --memory` (docs/memory.md) with known answers, checked against
the interpreter itself and against tracemalloc:

- N bytes objects of a known length are N blocks of sys.getsizeof's bytes
  (bytes have no free list, and getsizeof is the allocator's size), kept
  by the function that made them; K objects kept alive are its leak;
- per function, the blocks still live at the end, count and bytes, equal
  tracemalloc's (an untraced run of the same program under
  -X tracemalloc=1, grouping its snapshot by the innermost frame's
  function).  tracemalloc keeps no count of blocks already freed, so the
  live blocks are what both can be compared on, exactly, on 3.9-3.13
  (before 3.11, for functions that call no Python function: see COMPARED);
- a known pattern gives the peak within 5% and names its holder;
- the live summary and `ulma report` agree;
- without --memory no allocator hook is installed and call counts are
  those of a run with it;
- ulma.profile(memory=True) records the block's allocations.
"""
import json
import subprocess
import sys

import pytest

from conftest import TIMEOUT, base_env

N, LENGTH, K, PEAK_MB = 1000, 1000, 700, 40
# make_points calls a Python function (Point.__init__).  Before 3.11 a
# frame is a heap object, allocated by the caller, cached by its code
# object once it ends, and allocated again while the cached one is in use:
# where a frame is allocated and which stays cached depends on the profile
# hook (ulma's, a C function on every call) being there, so functions that
# call Python functions are compared from 3.11 on.
COMPARED = ["make_bytes", "make_objects", "make_ints", "grow_array"]
if sys.version_info >= (3, 11):
    COMPARED.append("make_points")


def leaks_by_innermost(data):
    """{innermost function of a leak's stack: [blocks, bytes]} of Python's
    allocators (what tracemalloc sees; native blocks are
    test_memory_native.py's)"""
    out = {}
    for leak in data["leaks"]:
        name = leak["stack"][-1] if leak["stack"] else ""
        row = out.setdefault(name, [0, 0])
        row[0] += leak["count"] - leak["native_count"]
        row[1] += leak["bytes"] - leak["native_bytes"]
    return out


def functions(data):
    return {f["name"]: f for f in data["functions"]}


@pytest.fixture(scope="module")
def known(prog, run_ulma, report_json, tmp_path_factory):
    trace = str(tmp_path_factory.mktemp("memory") / "known.trace")
    args = [str(a) for a in (N, LENGTH, K, PEAK_MB)]
    proc = run_ulma(["run", "--memory", "--summary", "json", "-o", trace, prog("mem_known.py")] + args)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    live = json.loads(proc.stderr)
    sizes = [int(x) for x in proc.stdout.split()]
    report, _ = report_json(trace)
    return live, report, sizes


def test_n_blocks_of_the_allocators_exact_bytes(known):
    live, _, (bytes_size, _, _, _) = known
    assert live["memory"] is True
    f = functions(live)["make_bytes"]
    leaks = leaks_by_innermost(live)
    assert leaks["make_bytes"] == [N, N * bytes_size], leaks["make_bytes"]
    assert f["alloc_count"] >= N and f["net_bytes"] == N * bytes_size, f


def test_n_lists_are_n_arrays_of_exact_bytes(known):
    """Each list's array is one block of 8 * LENGTH bytes; its list object
    is a block of sys.getsizeof([]) bytes unless the list free list (up to
    80 lists freed earlier) gave it."""
    live, _, (_, _, _, empty_list) = known
    count, size = leaks_by_innermost(live)["make_lists"]
    objects = count - N
    assert N - 80 <= objects <= N, (count, size)
    assert size == N * 8 * LENGTH + objects * empty_list, (count, size)


def test_kept_objects_are_a_leak_of_net_k(known):
    live, _, (_, object_size, _, _) = known
    f = functions(live)["hold"]
    assert f["net_bytes"] == K * object_size, f
    assert leaks_by_innermost(live)["hold"] == [K, K * object_size]
    assert f["alloc_count"] - f["free_count"] == K, f
    stacks = [leak["stack"] for leak in live["leaks"] if leak["stack"] and leak["stack"][-1] == "hold"]
    assert stacks and all(s[-2:] == ["main", "hold"] for s in stacks), stacks


def test_churn_frees_what_it_allocates(known):
    live, _, _ = known
    f = functions(live)["churn"]
    assert f["alloc_count"] >= 2000 and f["net_bytes"] == 0, f
    assert f["free_count"] == f["alloc_count"], f


def test_totals_include_callees(known):
    live, _, _ = known
    fs = functions(live)
    main = fs["main"]
    parts = sum(fs[n]["total_alloc_bytes"] for n in ("make_bytes", "make_lists", "hold", "churn", "peak_phase"))
    assert main["total_alloc_bytes"] >= parts
    assert main["total_alloc_count"] >= sum(fs[n]["total_alloc_count"] for n in ("make_bytes", "hold", "churn"))
    assert main["total_alloc_bytes"] - parts < 1 << 20, "main's own and its C callees' only"


def test_peak_within_5_percent_and_its_holder(known):
    live, _, (bytes_size, object_size, mib_size, empty_list) = known
    expected = PEAK_MB * mib_size + N * bytes_size + N * (8 * LENGTH + empty_list) + K * object_size
    assert abs(live["peak_bytes"] - expected) <= 0.05 * expected, (live["peak_bytes"], expected)
    holders = sorted(live["functions"], key=lambda f: f.get("peak_held_bytes", 0), reverse=True)
    assert holders[0]["name"] == "peak_phase", [(f["name"], f["peak_held_bytes"]) for f in holders[:3]]
    assert holders[0]["peak_held_bytes"] >= 0.95 * PEAK_MB * mib_size
    assert 0 < live["peak_time_ns"] <= live["duration_ns"]


def test_report_agrees_with_the_live_summary(known):
    live, report, _ = known
    keys = ["memory", "peak_bytes", "peak_time_ns", "alloc_count", "alloc_bytes", "free_count", "free_bytes",
            "unknown_frees", "leak_groups", "leaks"]
    assert {k: live[k] for k in keys} == {k: report[k] for k in keys}
    per = ["alloc_count", "alloc_bytes", "free_count", "net_bytes", "total_alloc_count", "total_alloc_bytes",
           "peak_held_bytes"]
    lf, rf = functions(live), functions(report)
    for name in ("make_bytes", "make_lists", "hold", "churn", "peak_phase", "main"):
        assert {k: lf[name][k] for k in per} == {k: rf[name][k] for k in per}, name


def test_live_blocks_per_function_equal_tracemallocs(prog, run_ulma, run_python, tmp_path):
    """--no-c-calls: a block made in a builtin belongs to the Python
    function that called it, as tracemalloc has it."""
    path = prog("mem_compare.py")
    out = tmp_path / "tracemalloc.json"
    proc = run_python(["-X", "tracemalloc=1", path, "--tracemalloc", str(out)])
    assert proc.returncode == 0, proc.stderr
    expected = json.loads(out.read_text())
    proc = run_ulma(["run", "--memory", "--no-c-calls", "--summary", "json", "-o", str(tmp_path / "t.trace"), path])
    assert proc.returncode == 0, proc.stderr
    got = leaks_by_innermost(json.loads(proc.stderr))
    for name in COMPARED:
        assert got.get(name, [0, 0]) == expected[name], (name, got.get(name), expected[name])
    if sys.version_info >= (3, 11):  # before, names are bare: other modules' __init__ too
        assert "Point.__init__" not in got and expected["__init__"] == [0, 0]


def _dladdr_owners(proc):
    lines = proc.stdout.decode().split()
    return lines[:3]


def test_off_installs_no_hook_and_counts_calls_alike(prog, run_ulma, report_json, tmp_path):
    path = prog("mem_off_check.py")
    calls = {}
    for mode in ("off", "on"):
        trace = str(tmp_path / (mode + ".trace"))
        proc = run_ulma(["run", "-o", trace] + (["--memory"] if mode == "on" else []) + [path])
        assert proc.returncode == 0, proc.stderr
        owners = _dladdr_owners(proc)
        ours = [o for o in owners if o.startswith("_ulma")]
        if mode == "off":
            assert ours == [], owners
        else:
            assert len(ours) == 3, owners
        data, _ = report_json(trace)
        assert data["memory"] is (mode == "on")
        if mode == "off":
            assert all("alloc_count" not in f for f in data["functions"])
        calls[mode] = {f["name"]: f["calls"] for f in data["functions"]
                       if f["file"] == path or f["name"] in ("list.append", "builtins.range")}
    assert calls["off"] == calls["on"] and calls["off"]["work"] == 50, calls


def test_inline_profile_with_memory(prog, report_json, tmp_path):
    trace = tmp_path / "inline.trace"
    proc = subprocess.run([sys.executable, prog("mem_inline.py"), str(trace), str(K)], capture_output=True,
                          stdin=subprocess.DEVNULL, env=base_env(), timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    data, _ = report_json(str(trace))
    assert data["memory"] is True
    assert leaks_by_innermost(data)["hold"] == [K, K * sys.getsizeof(object())]
    assert functions(data)["hold"]["net_bytes"] == K * sys.getsizeof(object())


def test_record_memory_attaches_and_detaches(prog, ulma_bin, tmp_path, report_json):
    """`ulma record PID --memory` on an attachable program: allocations are
    recorded while attached, the allocators are put back at the detach, and
    the program goes on and ends as it would."""
    from test_live_attach import Program, control, STATE_DETACHED

    p = Program(prog, ulma_bin, tmp_path, True)
    try:
        trace = str(tmp_path / "rec.trace")
        rec = subprocess.run([ulma_bin, "record", str(p.pid), "-d", "1", "--memory", "-o", trace],
                             stdin=subprocess.DEVNULL, capture_output=True, env=base_env(), timeout=TIMEOUT)
        assert rec.returncode == 0, rec.stderr.decode()
        data, _ = report_json(trace)
        assert data["memory"] is True and data["alloc_count"] > 0 and data["free_count"] > 0
        assert control(p.pid)[2] == STATE_DETACHED
        code, out, err = p.finish()
        assert code == 5, (out, err)
    finally:
        p.kill()
