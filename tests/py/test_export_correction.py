"""One set of times everywhere (docs/overhead.md): every export takes the
hook's measured cost out of its times by the summary's rule, and
--no-correction leaves them as measured.  Checked with the real pstats
module against the JSON report, corrected and raw, on a program whose
frames are all longer than the hook's cost (so no time is clamped)."""
import json
import pstats

import pytest

from export_helpers import export_trace, run_export  # noqa: F401 (fixtures)


@pytest.fixture(scope="module")
def traced(export_trace, report_json):
    t = export_trace("nested_loops.py")
    corrected, _ = report_json(t["trace"])
    return t, corrected


def pstats_rows(path, program):
    """{name: (calls, tottime s, cumtime s)} of the program's functions."""
    st = pstats.Stats(str(path))
    return {func[2]: (nc, tt, ct) for func, (cc, nc, tt, ct, callers) in st.stats.items() if func[0] == program}


def report_rows(report, program):
    return {f["name"]: f for f in report["functions"] if f["file"] == program}


@pytest.mark.parametrize("corrected", [True, False], ids=["corrected", "raw"])
def test_pstats_times_are_the_summary_times(traced, run_export, tmp_path, corrected):
    t, corrected_report = traced
    report = corrected_report if corrected else t["report"]  # the fixture's report is raw
    assert report["overhead_ns_per_event"] > 0, "the program measured no hook cost"
    out = tmp_path / "p.pstats"
    run_export(t["trace"], "pstats", out, corrected=corrected)
    got = pstats_rows(out, t["path"])
    want = report_rows(report, t["path"])
    for name in ("outer", "middle", "inner"):
        calls, tottime, cumtime = got[name]
        row = want[name]
        assert calls == row["calls"], (name, calls, row)
        # both are rounded to the ns here and there: allow 1 us per thousand calls
        slack = 1e-6 * (1 + calls / 1000)
        assert tottime == pytest.approx(row["self_ns"] / 1e9, rel=1e-3, abs=slack), (name, tottime, row)
        assert cumtime == pytest.approx(row["total_ns"] / 1e9, rel=1e-3, abs=slack), (name, cumtime, row)


def test_the_correction_is_the_hooks_cost(traced, run_export, tmp_path):
    """Corrected and raw differ by the cost of the events each figure holds:
    inner's self time loses its 9,000 exits; outer's total the entries and
    exits of the 12,000 frames under it and its own exit."""
    t, corrected_report = traced
    raw, cor = tmp_path / "raw.pstats", tmp_path / "cor.pstats"
    run_export(t["trace"], "pstats", raw)
    run_export(t["trace"], "pstats", cor, corrected=True)
    r, c = pstats_rows(raw, t["path"]), pstats_rows(cor, t["path"])
    cost = corrected_report["overhead_ns_per_event"] / 1e9
    assert r["inner"][1] - c["inner"][1] == pytest.approx(9000 * cost, rel=0.01), (r["inner"], c["inner"], cost)
    events_in_outer = 2 * (3000 + 3000 + 6000) + 1
    assert r["outer"][2] - c["outer"][2] == pytest.approx(events_in_outer * cost, rel=0.01)


def test_chrome_durations_are_corrected_too(traced, run_export, tmp_path):
    t, corrected_report = traced
    out = tmp_path / "t.json"
    run_export(t["trace"], "chrome", out, corrected=True)
    events = [e for e in json.load(open(out))["traceEvents"] if e.get("ph") == "X"]
    outer = [e for e in events if e["name"] == "outer"]
    assert len(outer) == 1
    row = report_rows(corrected_report, t["path"])["outer"]
    assert outer[0]["dur"] == pytest.approx(row["total_ns"] / 1e3, rel=1e-3, abs=1)
