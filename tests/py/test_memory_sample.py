"""`ulma run --memory=sample:BYTES` (docs/memory.md, "Sampling"): the same
known-answer program recorded exactly and sampled (one allocation every
4 KiB of allocations on average): each function's estimated bytes, and
what it still holds at the end, are within 10% of the exact run's (the
functions allocate 20 to 42 MiB: thousands of samples, a few per cent of
standard error); sampled counts are of the samples; bad values are
refused with one line."""
import json

import pytest

ARGS = ["20000", "1000", "50000", "200"]
SAMPLE = 4096


def run(prog, run_ulma, mode, trace):
    proc = run_ulma(["run", mode, "--no-live", "--summary", "json", "-o", trace, prog("mem_sampled.py")] + ARGS)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return json.loads(proc.stderr)


@pytest.fixture(scope="module")
def runs(prog, run_ulma, report_json, tmp_path_factory):
    d = tmp_path_factory.mktemp("sampled")
    exact = run(prog, run_ulma, "--memory", str(d / "e.trace"))
    sampled = run(prog, run_ulma, "--memory=sample:%d" % SAMPLE, str(d / "s.trace"))
    report, _ = report_json(str(d / "s.trace"))
    return exact, sampled, report


def functions(data):
    return {f["name"]: f for f in data["functions"]}


def test_estimates_within_10_percent_of_exact(runs):
    exact, sampled, _ = runs
    assert exact["memory_sample_bytes"] == 0 and sampled["memory_sample_bytes"] == SAMPLE
    e, s = functions(exact), functions(sampled)
    for name in ("make_bytes", "churn", "big"):
        want, got = e[name]["total_alloc_bytes"], s[name]["total_alloc_bytes"]
        assert want > 10 << 20, (name, want)
        assert abs(got - want) <= 0.1 * want, (name, got, want)
    want, got = e["make_bytes"]["net_bytes"], s["make_bytes"]["net_bytes"]
    assert abs(got - want) <= 0.1 * want, ("held by make_bytes", got, want)
    assert s["churn"]["net_bytes"] <= 0.01 * e["churn"]["alloc_bytes"], "churn frees its samples"
    assert abs(sampled["peak_bytes"] - exact["peak_bytes"]) <= 0.1 * exact["peak_bytes"]


def test_counts_are_of_the_samples(runs):
    exact, sampled, _ = runs
    assert 0 < sampled["alloc_count"] < exact["alloc_count"] / 5, (sampled["alloc_count"], exact["alloc_count"])
    assert sampled["unknown_frees"] == 0, "only sampled blocks' frees are recorded"


def test_report_says_sampled(runs):
    _, sampled, report = runs
    for key in ("memory_sample_bytes", "alloc_bytes", "alloc_count", "peak_bytes", "leaks"):
        assert report[key] == sampled[key], key


@pytest.mark.parametrize("bad", ["--memory=samples", "--memory=sample:", "--memory=sample:0", "--memory=sample:-5",
                                 "--memory=sample:12Q", "--memory=exact"])
def test_bad_values_refused(prog, run_ulma, tmp_path, bad):
    proc = run_ulma(["run", bad, "--no-live", "-o", str(tmp_path / "b.trace"), prog("mem_sampled.py")] + ARGS)
    err = proc.stderr.decode()
    assert proc.returncode != 0 and "--memory" in err and len(err.strip().splitlines()) <= 3, err
    assert not (tmp_path / "b.trace").exists()


def test_inline_profile_sampled(prog, report_json, tmp_path):
    """ulma.profile(memory="sample:4096"): the trace says so; 200000 objects
    of 16 bytes kept (3 MiB) are estimated within 10%."""
    import subprocess
    import sys

    from conftest import TIMEOUT, base_env

    trace = tmp_path / "inline.trace"
    k = 200000
    proc = subprocess.run([sys.executable, prog("mem_inline.py"), str(trace), str(k), "sample:4096"],
                          capture_output=True, stdin=subprocess.DEVNULL, env=base_env(), timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    data, _ = report_json(str(trace))
    assert data["memory_sample_bytes"] == 4096
    hold = functions(data)["hold"]
    want = k * sys.getsizeof(object())
    assert abs(hold["net_bytes"] - want) <= 0.1 * want, (hold["net_bytes"], want)
    bad = subprocess.run([sys.executable, "-c", "import ulma; ulma.profile(memory='yes')"], capture_output=True,
                         env=base_env(), timeout=TIMEOUT)
    assert bad.returncode != 0 and b"memory must be" in bad.stderr
