"""`ulma export --format pstats`: the file Python's own pstats module loads.

The reader is the real one: pstats.Stats(path) in this interpreter, and
`python -m pstats` printing it.  Call counts per function must equal the
JSON report's, which the suite already proves equal to the interpreter's
own count; primitive-call counts and callers follow cProfile's rules;
times add up to the report's.
"""
import marshal
import pstats
import sys

import pytest

from export_helpers import export_trace, function_key, no_temp_files, report_calls, report_row, run_export  # noqa: F401

FIB_CALLS = 10 * 21891  # fib_calls.py: fib(20) ten times from main


def _load(path):
    return pstats.Stats(str(path)).stats


@pytest.fixture(scope="module")
def varied(export_trace, run_export, tmp_path_factory):
    t = export_trace("varied.py")
    out = tmp_path_factory.mktemp("pstats") / "varied.pstats"
    run_export(t["trace"], "pstats", out)
    return dict(t, out=out, stats=_load(out))


@pytest.fixture(scope="module")
def fib(export_trace, run_export, tmp_path_factory):
    t = export_trace("fib_calls.py")
    out = tmp_path_factory.mktemp("pstats") / "fib.pstats"
    run_export(t["trace"], "pstats", out)
    return dict(t, out=out, stats=_load(out))


def test_every_function_with_the_reports_call_count(varied):
    want = report_calls(varied["report"], pstats_keys=True)
    got = {key: nc for key, (cc, nc, tt, ct, callers) in varied["stats"].items()}
    assert set(got) == set(want)
    diffs = {k: (want[k], got[k]) for k in want if want[k] != got[k]}
    assert not diffs, "function: (report calls, pstats ncalls) differ: %r" % diffs
    # the program's own functions are there under their (file, line, name)
    mine = [k for k in got if k[0] == varied["path"]]
    assert len(mine) >= 20


def test_c_functions_have_cprofile_style_keys(varied):
    key = ("~", 0, "<built-in method builtins.divmod>")
    assert key in varied["stats"], sorted(k for k in varied["stats"] if k[0] == "~")[:20]
    cc, nc, tt, ct, callers = varied["stats"][key]
    assert (cc, nc) == (7, 7)  # varied.py calls divmod 7 times, all from main
    (caller,) = callers
    assert caller[0] == varied["path"] and caller[2].endswith("main")
    assert callers[caller][:2] == (7, 7)


def test_recursion_primitive_calls_and_callers(fib):
    """fib(20) called 10 times by main: 10 primitive calls of 218910; each
    outermost fib calls fib twice, so the pair fib -> fib has 20 primitive
    calls, as cProfile counts them."""
    path = fib["path"]
    fib_key = (path, 4, "fib")
    main_key = (path, 8, "main")
    stats = fib["stats"]
    cc, nc, tt, ct, callers = stats[fib_key]
    assert (cc, nc) == (10, FIB_CALLS)
    assert set(callers) == {fib_key, main_key}
    assert callers[main_key][:2] == (10, 10)  # (nc, cc) as cProfile orders callers
    assert callers[fib_key][:2] == (FIB_CALLS - 10, 20)
    # times: self within cumulative, which counts only outermost frames
    assert 0 < tt <= ct <= stats[main_key][3]
    assert callers[main_key][3] == pytest.approx(ct, rel=1e-6)


def test_times_match_the_report(fib, varied):
    for data in (fib, varied):
        report = data["report"]
        got = {key: (tt, ct) for key, (cc, nc, tt, ct, callers) in data["stats"].items()}
        total_self = sum(f["self_ns"] for f in report["functions"]) / 1e9
        assert sum(tt for tt, ct in got.values()) == pytest.approx(total_self, rel=0.01, abs=1e-5)
        rows = {}  # rows merged under one key (type.__new__ and object.__new__, say) add up
        for f in report["functions"]:
            rows.setdefault(function_key(f, pstats_keys=True), []).append(f)
        for key, fs in rows.items():
            self_ns, total_ns = sum(f["self_ns"] for f in fs), sum(f["total_ns"] for f in fs)
            if total_ns > 1_000_000:  # the bigger rows, to the microsecond
                tt, ct = got[key]
                assert tt == pytest.approx(self_ns / 1e9, rel=0.01, abs=2e-6), fs
                if len(fs) == 1:
                    assert ct == pytest.approx(total_ns / 1e9, rel=0.01, abs=2e-6), fs
                else:  # one row's frames may hold another's, counted once
                    assert max(f["total_ns"] for f in fs) / 1e9 - 2e-6 <= ct <= total_ns / 1e9 + 2e-6, fs
    row = report_row(fib["report"], fib["path"], "fib")
    assert fib["stats"][(fib["path"], 4, "fib")][2] == pytest.approx(row["self_ns"] / 1e9, rel=0.01)


def test_stats_object_totals(fib):
    s = pstats.Stats(str(fib["out"]))
    assert s.total_calls == sum(nc for cc, nc, tt, ct, callers in fib["stats"].values())
    assert s.total_calls == sum(f["calls"] for f in fib["report"]["functions"])
    assert s.prim_calls < s.total_calls  # fib's recursive calls are not primitive
    assert 0 < s.total_tt <= fib["report"]["duration_ns"] / 1e9


def test_python_m_pstats_prints_it(fib, run_python):
    proc = run_python(["-m", "pstats", str(fib["out"])], input=b"sort tottime\nstats 5\ncallers fib\nquit\n")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert "%d function calls" % sum(f["calls"] for f in fib["report"]["functions"]) in out, out
    assert "%d/10" % FIB_CALLS in out, out
    assert "fib_calls.py:4(fib)" in out and "fib_calls.py:8(main)" in out


def test_marshal_is_plain_data(fib):
    """Only the types cProfile writes: a dict of tuples of str, int, float."""
    with open(str(fib["out"]), "rb") as f:
        data = marshal.load(f)
        assert f.read() == b"", "bytes after the marshalled dict"
    for key, value in data.items():
        assert isinstance(key, tuple) and [type(x) for x in key] == [str, int, str]
        assert [type(x) for x in value] == [int, int, float, float, dict]


def test_filters_change_the_stats(fib, run_export, tmp_path):
    path = fib["path"]
    fib_key, main_key = (path, 4, "fib"), (path, 8, "main")
    print_ct = fib["stats"][("~", 0, "<built-in method builtins.print>")][3]
    main_ct = fib["stats"][main_key][3]
    # exclude fib: its time goes to main (all of main but its print), its calls vanish
    out = tmp_path / "nofib.pstats"
    run_export(fib["trace"], "pstats", out, "--exclude", "fib")
    stats = _load(out)
    assert fib_key not in stats
    cc, nc, tt, ct, callers = stats[main_key]
    assert nc == 1 and tt == pytest.approx(main_ct - print_ct, rel=0.001) and tt <= ct
    # include only the program's file: nothing from elsewhere, counts unchanged
    out = tmp_path / "only.pstats"
    run_export(fib["trace"], "pstats", out, "--include", "*/fib_calls.py", "--exclude", "<module>")
    stats = _load(out)
    assert set(stats) == {fib_key, main_key}
    assert stats[fib_key][1] == FIB_CALLS and stats[main_key][1] == 1
    assert stats[main_key][4] == {}, "main's caller <module> was filtered out"
    # a thread that does not exist: an empty dict (which pstats itself
    # refuses, as it refuses cProfile's empty profiles), and a warning
    out = tmp_path / "none.pstats"
    proc = run_export(fib["trace"], "pstats", out, "--thread", "1")
    with open(str(out), "rb") as f:
        assert marshal.load(f) == {}
    assert b"no frames" in proc.stderr
    assert no_temp_files(tmp_path) == []


def test_min_duration_drops_short_frames(fib, run_export, tmp_path):
    """A fib(20) takes milliseconds, a leaf well under a microsecond: above
    500 us only the big frames stay, and the total self time is kept (the
    dropped frames' time goes to their parents)."""
    out = tmp_path / "long.pstats"
    run_export(fib["trace"], "pstats", out, "--min-duration", "0.5ms")
    stats = _load(out)
    path = fib["path"]
    cc, nc, tt, ct, callers = stats[(path, 4, "fib")]
    assert 10 <= nc < 1000
    before = sum(v[2] for v in fib["stats"].values())
    after = sum(v[2] for v in stats.values())
    assert after == pytest.approx(before, rel=0.01)


# cProfile on its own side ------------------------------------------------

NEW_LABEL = "<built-in method __new__>"  # ulma's label of a type's __new__
# cProfile names dict.fromkeys and OrderedDict.fromkeys alike and keeps one
# of the two entries (snapshot_stats overwrites); ulma adds them up.  Calls
# main() makes of each:
FROMKEYS = ("<built-in method fromkeys>", (6, 5))


def _called_from(stats, files, skip=()):
    """{(callee, caller): (nc, cc)} for every call edge whose caller is a
    function of one of `files`, except callers and callees in `skip`."""
    edges = {}
    for callee, (cc, nc, tt, ct, callers) in stats.items():
        for caller, figures in callers.items():
            if caller[0] in files and caller not in skip and callee not in skip:
                edges[(callee, caller)] = tuple(figures[:2])
    return edges


@pytest.fixture(scope="module")
def against_cprofile(prog, run_python, run_ulma, run_export, tmp_path_factory):
    """programs/c_names.py under `python -m cProfile -o` and under `ulma run`
    + `ulma export --format pstats`, both loaded with pstats."""
    path = prog("c_names.py")
    work = tmp_path_factory.mktemp("against-cprofile")
    cprof_out, ulma_out, trace = work / "cprofile.pstats", work / "ulma.pstats", str(work / "run.trace")
    proc = run_python(["-m", "cProfile", "-o", str(cprof_out), path])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    proc = run_ulma(["run", "--lossless", "--summary", "none", "-o", trace, path])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    run_export(trace, "pstats", ulma_out)
    cprof, ulma = _load(cprof_out), _load(ulma_out)
    with open(path) as f:
        line = next(i for i, text in enumerate(f, 1) if text.startswith("def in_thread("))
    in_thread = (path, line, "in_thread")
    return {"path": path, "cprof": cprof, "ulma": ulma, "cprof_out": cprof_out, "ulma_out": ulma_out,
            "in_thread": in_thread}


def test_python_functions_keyed_as_cprofile_keys_them(against_cprofile):
    """(file, line, co_name) for every Python function both saw: `make`, not
    `Shape.make`; `helper`, not `main.<locals>.helper`; the standard
    library's too.  Counts agree for the program's own functions."""
    cprof, ulma, path = against_cprofile["cprof"], against_cprofile["ulma"], against_cprofile["path"]
    def names(stats):
        by_place = {}
        for key in stats:
            if key[0] != "~":
                by_place.setdefault(key[:2], set()).add(key[2])
        return by_place

    names_c, names_u = names(cprof), names(ulma)
    differ = {place: (names_c[place], names_u[place]) for place in set(names_c) & set(names_u)
              if names_c[place] != names_u[place]}
    assert not differ, "(file, line): (cProfile's names, ulma's) %r" % differ
    mine_c = {k: v[1] for k, v in cprof.items() if k[0] == path}
    mine_u = {k: v[1] for k, v in ulma.items() if k[0] == path}
    in_thread = against_cprofile["in_thread"]
    assert in_thread in mine_u
    if sys.version_info < (3, 12):  # cProfile sees only the thread that enabled it
        assert in_thread not in mine_c
        del mine_u[in_thread]
    assert mine_u == mine_c
    assert {k[2] for k in mine_u} >= {"make", "area", "unit", "depth", "helper", "squares", "main", "Inner"}


def test_builtins_keyed_and_counted_as_cprofile_does(against_cprofile):
    """Every C function the program calls has cProfile's key, and each caller
    of the program made as many calls of it, primitive and all, in both.
    Two exceptions: a type's __new__, which cProfile names with the address
    of `type` in its process, so that it can never match; and fromkeys,
    whose two entries cProfile names alike and keeps only one of."""
    cprof, ulma, path = against_cprofile["cprof"], against_cprofile["ulma"], against_cprofile["path"]
    skip = {against_cprofile["in_thread"]}  # cProfile 3.12+ may give its callees another thread's callers
    want = {e: n for e, n in _called_from(cprof, {path}, skip).items() if e[0][0] == "~"}
    got = {e: n for e, n in _called_from(ulma, {path}, skip).items() if e[0][0] == "~"}
    cprof_new = {e for e in want if e[0][2].startswith("<built-in method __new__ of type object at 0x")}
    ulma_new = {e for e in got if e[0][2] == NEW_LABEL}
    assert len(cprof_new) == 1 and len(ulma_new) == 1, (cprof_new, ulma_new)
    assert want[cprof_new.pop()] == got[ulma_new.pop()] == (5, 5)  # object's twice, tuple's 3 times
    want = {e: n for e, n in want.items() if "__new__" not in e[0][2]}
    got = {e: n for e, n in got.items() if e[0][2] != NEW_LABEL}
    labels = {callee[2] for callee, caller in got}
    label, counts = FROMKEYS
    main = next(caller for callee, caller in got if caller[2] == "main")
    assert want.pop((("~", 0, label), main)) in {(n, n) for n in counts}
    assert got.pop((("~", 0, label), main)) == (sum(counts), sum(counts))
    assert got == want
    assert {
        "<built-in method from_bytes>",
        "<built-in method fromkeys>",
        "<built-in method now>",
        "<built-in method maketrans>",
        "<built-in method builtins.divmod>",
        "<built-in method time.sleep>",
        "<method 'reverse' of 'list' objects>",
        "<method 'mro' of 'type' objects>",
        "<ignore_errors>",
    } <= labels, sorted(labels)


def test_merging_with_cprofile_adds_rows_up(against_cprofile):
    """pstats.Stats(ulma).add(cProfile): a function both saw is one row with
    the calls of both, never two rows."""
    cprof, ulma, path = against_cprofile["cprof"], against_cprofile["ulma"], against_cprofile["path"]
    merged = pstats.Stats(str(against_cprofile["ulma_out"]))
    merged.add(str(against_cprofile["cprof_out"]))
    stats = merged.stats
    for key in set(cprof) & set(ulma):
        assert stats[key][1] == cprof[key][1] + ulma[key][1], key
    mine = [k for k in stats if k[0] == path]
    assert len(mine) == len({k[:2] for k in mine}), sorted(mine)
    skip = {against_cprofile["in_thread"]}
    called = {callee for callee, caller in _called_from(stats, {path}, skip) if callee[0] == "~"}
    from_ulma = {callee for callee, caller in _called_from(ulma, {path}, skip) if callee[0] == "~"}
    assert len(called) == len(from_ulma) + 1, sorted(called - from_ulma)  # + cProfile's __new__
