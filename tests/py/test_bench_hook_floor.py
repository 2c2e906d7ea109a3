"""bench/hook_floor.py end to end, one round: it builds floor.c for this
Python, runs every mechanism on both workloads in fresh processes, and
prints one row per mechanism with a ratio per workload.  The ratios
themselves are benchmark figures (docs/hooks.md), never asserted here."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "hook_floor.py"


def test_table_has_every_mechanism_and_workload():
    out = subprocess.run([sys.executable, str(SCRIPT), "--rounds", "1"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("Python %d.%d" % sys.version_info[:2]), out.stdout
    assert lines[1].split() == ["mechanism", "fib", "loop"], out.stdout
    rows = {}
    for line in lines[2:]:
        m = re.match(r"  (.+?)\s+([0-9.]+)x\s+([0-9.]+)x$", line)
        assert m, "not a table row: %r" % line
        rows[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    want = ["untraced"] + (["monitoring PY_*", "monitoring PY_* + CALL/C_RETURN"]
                           if sys.version_info >= (3, 12) else []) + ["PyEval_SetProfile"]
    assert list(rows) == want, out.stdout
    assert rows["untraced"] == (1.0, 1.0), "untraced is the baseline of each column"
    assert all(r > 0 for ratios in rows.values() for r in ratios)


def test_rounds_must_be_positive():
    out = subprocess.run([sys.executable, str(SCRIPT), "--rounds", "0"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2 and "--rounds must be at least 1" in out.stderr
