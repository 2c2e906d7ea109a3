"""Options of `ulma run` that change what is recorded: --no-c-calls."""


def test_no_c_calls_records_python_functions_only(prog, run_ulma, report_json, tmp_path):
    trace = str(tmp_path / "py-only.trace")
    proc = run_ulma(["run", "--lossless", "--no-c-calls", "-o", trace, prog("fib_calls.py")])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    data, _ = report_json(trace)
    kinds = {f["kind"] for f in data["functions"]}
    assert kinds == {"python"}, data["functions"][:5]
    assert data["lost"] == 0


def test_no_c_calls_keeps_python_counts(prog, run_ulma, report_json, tmp_path):
    """The same program with and without builtins: Python call counts agree."""
    counts = []
    for opts in ([], ["--no-c-calls"]):
        trace = str(tmp_path / ("t%d.trace" % len(counts)))
        proc = run_ulma(["run", "--lossless", "-o", trace] + opts + [prog("builtins_only.py")])
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        data, _ = report_json(trace)
        counts.append({(f["file"], f["line"]): f["calls"] for f in data["functions"]
                       if f["kind"] == "python"})
    assert counts[0] == counts[1]
    assert counts[0], "expected at least the module's own code"
