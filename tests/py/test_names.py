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
