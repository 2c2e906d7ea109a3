"""Names a definition cannot hold as they are (programs/unstorable_names.py):
a NUL byte is kept as U+FFFD with the rest of the name after it, not taken
for the end of the name; a name over 65,535 bytes is cut at a character
boundary and ends in "...", in the JSON report and the exports alike."""
import json

from export_helpers import export_trace, run_export  # noqa: F401

NUL_SHOWN = "nul\ufffdafter"
LONG_PREFIX = "long\u00e9\u00e9"


def _long_names(names):
    return [n for n in names if n.startswith(LONG_PREFIX)]


def test_json_report_keeps_the_name_after_a_nul(export_trace):
    names = [f["name"] for f in export_trace("unstorable_names.py")["report"]["functions"]]
    assert NUL_SHOWN in names, [n[:40] for n in names]
    assert "nul" not in names


def test_json_report_marks_a_cut_name(export_trace):
    long = _long_names(f["name"] for f in export_trace("unstorable_names.py")["report"]["functions"])
    assert len(long) == 1, [n[:40] for n in long]
    name = long[0]
    assert name.endswith("\u00e9...") and "END" not in name, name[-20:]
    assert len(name.encode()) <= 65535 and len(name.encode()) > 65000


def test_exports_show_both(export_trace, run_export, tmp_path):
    t = export_trace("unstorable_names.py")
    folded = tmp_path / "t.folded"
    run_export(t["trace"], "folded", folded, "--counts")
    text = folded.read_text(encoding="utf-8")
    assert NUL_SHOWN + " (" in text
    assert "\u00e9... (" in text and "END" not in text
    chrome = tmp_path / "t.json"
    run_export(t["trace"], "chrome", chrome)
    events = json.loads(chrome.read_text(encoding="utf-8"))
    events = events["traceEvents"] if isinstance(events, dict) else events
    names = {e.get("name", "") for e in events}
    assert NUL_SHOWN in names
    long = _long_names(names)
    assert len(long) == 1 and long[0].endswith("\u00e9..."), [n[-20:] for n in long]


# --- characters a terminal acts on (programs/control_names.py) -------------------

CONTROL_NAMES = ["ls\u2028x", "ps\u2029x", "nel\u0085x", "csi\u009bx", "rlo\u202ex", "lri\u2066x",
                 "esc\x1b]0;T\x07x"]
CONTROL_SHOWN = ["ls?x", "ps?x", "nel?x", "csi?x", "rlo?x", "lri?x", "esc?]0;T?x"]
RAW_CONTROLS = [b"\xe2\x80\xa8", b"\xe2\x80\xa9", b"\xc2\x85", b"\xc2\x9b", b"\xe2\x80\xae", b"\xe2\x81\xa6",
                b"\x1b]0;T"]


def _no_raw_controls(data):
    found = [c for c in RAW_CONTROLS if c in data]
    assert found == [], found


def test_text_summary_and_report_show_controls_as_question_marks(prog, run_ulma, tmp_path):
    trace = str(tmp_path / "c.trace")
    proc = run_ulma(["run", "--no-live", "--limit", "100", "-o", trace, prog("control_names.py")])
    assert proc.returncode == 0, proc.stderr
    report = run_ulma(["report", trace, "--limit", "100"])
    assert report.returncode == 0, report.stderr
    for text in (proc.stderr, report.stdout):
        _no_raw_controls(text)
        shown = text.decode("utf-8")
        assert all(name in shown for name in CONTROL_SHOWN), shown


def test_json_summary_escapes_controls_and_keeps_the_names(prog, run_ulma, tmp_path):
    proc = run_ulma(["run", "--no-live", "--summary", "json", "-o", str(tmp_path / "c.trace"),
                     prog("control_names.py")])
    assert proc.returncode == 0, proc.stderr
    _no_raw_controls(proc.stderr)
    names = {f["name"] for f in json.loads(proc.stderr)["functions"]}
    assert set(CONTROL_NAMES) <= names, names


def test_text_summary_marks_a_name_cut_to_its_column(prog, run_ulma, tmp_path):
    proc = run_ulma(["run", "--no-live", "--limit", "100", "-o", str(tmp_path / "u.trace"),
                     prog("unstorable_names.py")])
    assert proc.returncode == 0, proc.stderr
    rows = proc.stderr.decode("utf-8").splitlines()
    long = [r for r in rows if LONG_PREFIX in r]
    assert len(long) == 1 and "\u00e9... " in long[0], long
    assert any(NUL_SHOWN in r for r in rows), rows
