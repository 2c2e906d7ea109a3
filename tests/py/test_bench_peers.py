"""bench/peers.py without the peers: the Markdown it writes (one section per
Python version, replaced and kept; verdicts computed from each table: lowest,
tie, not the lowest, the sanity bound; --refresh-doc) and bench/peak_rss.c,
the launcher that measures each run's peak RSS (the command's own, not the
runner's; exit status passed through).  The measuring itself needs the peers
and an hour: `make bench-peers`."""
import importlib.util
import os
import signal
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def peers():
    spec = importlib.util.spec_from_file_location("peers", ROOT / "bench" / "peers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cell(ratio):
    return {"ratio": ratio, "rss": "9 MB", "size": "-", "bpe": "-"}


def rows(ulma, cprofile, sanity="1.00x", workload="fib"):
    return [(workload, "untraced (sanity)", cell(sanity)), (workload, "ulma", cell(ulma)),
            (workload, "cProfile", cell(cprofile)), (workload, "py-spy", cell("1.03x"))]


ARGS = Namespace(rounds=5, workloads="fib")


def test_sections_replaced_and_kept(peers, tmp_path):
    doc = tmp_path / "b.md"
    peers.write_doc(str(doc), "3.12.1", ARGS, rows("2.00x", "4.00x"), {"ulma": "0.1.0"})
    peers.write_doc(str(doc), "3.11.7", ARGS, rows("3.00x", "5.00x"), {"ulma": "0.1.0"})
    peers.write_doc(str(doc), "3.12.4", ARGS, rows("2.50x", "4.50x"), {"ulma": "0.1.0"})
    text = doc.read_text()
    assert text.count("## Python 3.12") == 1 and text.count("## Python 3.11") == 1, text
    assert text.index("## Python 3.12.4") < text.index("## Python 3.11.7"), "newest version first"
    assert "| fib | ulma | 2.50x |" in text and "| fib | ulma | 2.00x |" not in text, "3.12 not replaced"
    assert "| fib | ulma | 3.00x |" in text, "3.11 not kept"
    assert text.count("# Benchmarks") == 1 and "do not edit the numbers by hand" in text


@pytest.mark.parametrize("ulma, cprofile, says", [
    ("2.00x", "4.00x", "ulma (2.00x) is the lowest"),
    ("1.12x", "1.11x", "**tied** with cProfile"),
    ("1.95x", "1.01x", "**not the lowest**"),
    ("failed: boom", "1.01x", "ulma failed"),
])
def test_verdicts(peers, ulma, cprofile, says):
    lines = peers.verdicts(rows(ulma, cprofile), (3, 12))
    assert says in lines[0], lines
    if ulma.endswith("x"):
        assert "py-spy, adds 3%" in lines[0], lines


@pytest.mark.parametrize("sanity, passes", [("1.05x", True), ("0.95x", True), ("0.94x", False), ("1.06x", False)])
def test_sanity_bound(peers, sanity, passes):
    last = peers.verdicts(rows("2.00x", "4.00x", sanity), (3, 12))[-1]
    assert last.startswith("- Sanity check passed" if passes else "- **Sanity check failed**"), last


def test_cprofile_left_out_of_threads_before_312(peers):
    """Before 3.12 cProfile records the main thread only, so on the threads workload its ratio is not
    that of a tool recording every call; from 3.12 on it is, and only on the threads workload."""
    table = rows("1.95x", "1.01x", workload="threads") + [("threads", "yappi", cell("1.99x"))]
    before = peers.verdicts(table, (3, 11))[0]
    assert "ulma (1.95x) is the lowest" in before and "next is yappi at 1.99x" in before, before
    assert "cProfile (1.01x) is left out: before 3.12 it records only the thread that started it" in before
    assert "**not the lowest**" in peers.verdicts(table, (3, 12))[0]
    fib = peers.verdicts(rows("1.95x", "1.01x") + [("fib", "yappi", cell("1.99x"))], (3, 11))[0]
    assert "**not the lowest**" in fib and "left out" not in fib, fib


def test_refresh_doc_recomputes_verdicts(peers, tmp_path):
    doc = tmp_path / "b.md"
    peers.write_doc(str(doc), "3.12.1", ARGS, rows("2.00x", "4.00x"), {"ulma": "0.1.0"})
    text = doc.read_text()
    doc.write_text(text.replace("ulma (2.00x) is the lowest", "an old wording"))
    subprocess.run([sys.executable, str(ROOT / "bench" / "peers.py"), "--refresh-doc", str(doc)], check=True,
                   timeout=60)
    assert doc.read_text() == text
    missing = subprocess.run([sys.executable, str(ROOT / "bench" / "peers.py"), "--refresh-doc",
                              str(tmp_path / "none.md")], stderr=subprocess.PIPE, text=True, timeout=60)
    assert missing.returncode != 0 and "no such file" in missing.stderr
    assert not (tmp_path / "none.md").exists()


def launcher(peers):
    try:
        return peers.peak_rss_launcher()
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip("no C compiler: %s" % exc)


def run(launcher_path, tmp_path, *cmd):
    out = tmp_path / "rss"
    proc = subprocess.run([launcher_path, str(out)] + list(cmd), timeout=60)
    return proc.returncode, (int(out.read_text()) if out.exists() else None)


def test_peak_rss_is_the_commands_own(peers, tmp_path):
    exe = launcher(peers)
    ballast = bytearray(300 << 20)  # this process's peak, which the runner must not pass on
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    code, small = run(exe, tmp_path, sys.executable, "-c", "pass")
    code_big, big = run(exe, tmp_path, sys.executable, "-c", "b = bytearray(200 << 20); b[::4096] = b'x' * len(b[::4096])")
    del ballast
    assert code == 0 and small < 100 << 10, "an empty Python reported %s KiB" % small
    assert code_big == 0 and big >= 200 << 10, "200 MB touched, %s KiB reported" % big


def test_peak_rss_passes_the_exit_status_through(peers, tmp_path):
    exe = launcher(peers)
    assert run(exe, tmp_path, sys.executable, "-c", "raise SystemExit(3)")[0] == 3
    code, _ = run(exe, tmp_path, sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
    assert code == 128 + signal.SIGTERM
    code, rss = run(exe, tmp_path, str(tmp_path / "no-such-program"))
    assert code == 127
    assert subprocess.run([exe], stderr=subprocess.PIPE, timeout=30).returncode == 2
