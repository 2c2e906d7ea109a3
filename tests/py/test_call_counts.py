"""Call counts: ulma's count for every function of programs/varied.py
equals the interpreter's own count, and builtins appear as C functions
with the exact number of calls the program makes.

Ground truth comes from programs/callcount.py, which runs the same program
untraced under sys.setprofile + threading.setprofile and counts "call"
events per code object (generator and coroutine resumes included, as
cProfile counts them).
"""
import json
import sys

import pytest

QUALNAMES = sys.version_info >= (3, 11)  # ulma reports co_qualname where it exists

# functions of varied.py that must be there, whatever else is: (bare name, qualified name)
EXPECTED = [
    ("<module>", "<module>"),
    ("countdown", "countdown"),
    ("delegating", "delegating"),
    ("counting_up", "counting_up"),
    ("partially_consumed", "partially_consumed"),
    ("tick", "tick"),
    ("gather_all", "gather_all"),
    ("level1", "level1"),
    ("level3", "level3"),
    ("fib", "fib"),
    ("wrapper", "logged.<locals>.wrapper"),
    ("decorated", "decorated"),
    ("area", "Shape.area"),
    ("unit", "Shape.unit"),
    ("sides", "Shape.sides"),
    ("__call__", "Shape.__call__"),
    ("managed", "managed"),
    ("__exit__", "Manual.__exit__"),
    ("<lambda>", "main.<locals>.<lambda>"),
    ("thread_work", "thread_work"),
    ("<genexpr>", "thread_work.<locals>.<genexpr>"),
    ("pool_square", "pool_square"),
    ("at_exit", "at_exit"),
]


@pytest.fixture(scope="module")
def varied(prog, run_python, run_ulma, report_json, tmp_path_factory):
    """Run varied.py once under the counter and once under `ulma run --lossless`."""
    path = prog("varied.py")
    work = tmp_path_factory.mktemp("varied")
    counts_file = str(work / "counts.json")
    plain = run_python([prog("callcount.py"), counts_file, path])
    assert plain.returncode == 0, plain.stderr.decode(errors="replace")
    with open(counts_file) as f:
        truth = json.load(f)
    trace = str(work / "varied.trace")
    traced = run_ulma(["run", "--lossless", "-o", trace, path])
    assert traced.returncode == 0, traced.stderr.decode(errors="replace")
    data, _ = report_json(trace)
    return {"path": path, "truth": truth, "data": data, "plain": plain, "traced": traced}


def _truth_by_line(varied):
    counts = {}
    for file, line, name, calls in varied["truth"]["python"]:
        if file == varied["path"]:
            counts[(line, name)] = counts.get((line, name), 0) + calls
    return counts


def _bare(name):
    """co_name from a reported name: 'logged.<locals>.wrapper' -> 'wrapper'
    (a no-op on 3.9/3.10, where ulma reports co_name itself)."""
    return name.rsplit(".", 1)[-1]


def _ulma_by_line(varied):
    counts = {}
    for f in varied["data"]["functions"]:
        if f["file"] == varied["path"]:
            key = (f["line"], _bare(f["name"]))
            counts[key] = counts.get(key, 0) + f["calls"]
    return counts


def test_counter_saw_the_program(varied):
    """The ground truth itself covers every kind of function varied.py has."""
    names = {name for (_, name) in _truth_by_line(varied)}
    for bare, _ in EXPECTED:
        assert bare in names, "the counter never saw %s: the reference run is broken" % bare


def test_no_event_lost(varied):
    data = varied["data"]
    assert data["lost"] == 0
    assert all(t["lost"] == 0 for t in data["thread_list"])
    assert data["events"] > 0


def test_python_call_counts_equal_interpreter_counts(varied):
    truth = _truth_by_line(varied)
    got = _ulma_by_line(varied)
    diffs = {
        "%s:%d" % (name, line): (truth.get((line, name)), got.get((line, name)))
        for (line, name) in set(truth) | set(got)
        if truth.get((line, name)) != got.get((line, name))
    }
    assert not diffs, "function: (interpreter count, ulma count) differ: %r" % diffs
    assert len(got) >= len(EXPECTED)


def test_generator_and_coroutine_resumes_are_calls(varied):
    """Spot checks that do not depend on the counter: resumes count as calls."""
    got = {name: calls for (line, name), calls in _ulma_by_line(varied).items()}
    # countdown(10) yields 10 times (11 entries) and countdown(5) 5 times (6)
    assert got["countdown"] == 11 + 6
    # 3 nexts, then close() throws GeneratorExit into the frame: 4 entries
    assert got["counting_up"] == 4
    # delegating: first entry, then one resume per value: 1 + 10 + 5 = 16
    assert got["delegating"] == 16
    # five ticks, each entered, resumed after two sleep(0)s: 3 entries each
    assert got["tick"] == 15
    assert got["pool_square"] == 20
    assert got["thread_work"] == 3
    assert got["at_exit"] == 1


def test_names_are_qualified_where_the_interpreter_has_qualnames(varied):
    names = {f["name"] for f in varied["data"]["functions"] if f["file"] == varied["path"]}
    for bare, qual in EXPECTED:
        expected = qual if QUALNAMES else bare
        assert expected in names, "%r missing; varied.py functions: %s" % (expected, sorted(names))


def test_python_functions_have_kind_python(varied):
    rows = [f for f in varied["data"]["functions"] if f["file"] == varied["path"]]
    assert rows and all(f["kind"] == "python" and f["line"] > 0 for f in rows)


def test_builtin_is_a_c_function_with_exact_count(varied):
    """varied.py calls divmod exactly DIVMOD_CALLS (7) times; nothing else does."""
    rows = [f for f in varied["data"]["functions"] if f["name"].rsplit(".", 1)[-1] == "divmod"]
    assert len(rows) == 1, rows
    row = rows[0]
    assert (row["file"], row["line"], row["kind"]) == ("~", 0, "c")
    assert row["name"] == "builtins.divmod"
    assert row["calls"] == 7
    truth = {(owner, name): calls for owner, name, calls in varied["truth"]["c"]}
    assert truth.get(("builtins", "divmod")) == 7, "reference count of divmod is not 7"


def test_traced_output_is_the_programs(varied):
    assert varied["traced"].stdout == varied["plain"].stdout
    assert b"varied: at exit" in varied["traced"].stdout


def test_every_thread_is_recorded(varied):
    """main + 3 threading.Thread + at least one pool worker."""
    data = varied["data"]
    assert data["threads"] >= 5
    assert data["threads"] == len(data["thread_list"])
    assert len({t["tid"] for t in data["thread_list"]}) >= 5
    assert data["processes"] == 1


def test_sorted_and_list_append_exact_counts(prog, traced_json):
    """A program importing nothing: sorted() 7 times, list.append 11 times."""
    data, _ = traced_json(prog("builtins_only.py"))
    rows = {f["name"]: f for f in data["functions"] if f["kind"] == "c"}
    assert rows["builtins.sorted"]["calls"] == 7
    assert rows["list.append"]["calls"] == 11
    for name in ("builtins.sorted", "list.append"):
        assert rows[name]["file"] == "~" and rows[name]["line"] == 0


def test_forked_children_are_traced_into_the_same_session(prog, traced_json):
    """Children forked while tracing are followed: each gets rings of its own
    (never its parent's), functions first seen in different processes are
    one row, and each of the four processes made exactly 8361 calls of fib,
    though the children leave by os._exit."""
    path = prog("fork_fib.py")
    data, proc = traced_json(path)
    assert proc.stdout == b"2584\n"
    assert data["lost"] == 0
    procs = data["processes"]
    assert procs == 4
    assert len({t["pid"] for t in data["thread_list"]}) == 4
    names = [f["name"] for f in data["functions"] if f["file"] == path]
    assert len(names) == len(set(names)), names  # one row per function
    rows = {f["name"]: f["calls"] for f in data["functions"] if f["file"] == path}
    exits = [f for f in data["functions"] if f["name"] == "posix._exit"]
    assert len(exits) == 1 and exits[0]["calls"] == 3
    assert rows["fib"] == 8361 * procs
    assert rows.get("child_only", 0) == procs - 1
