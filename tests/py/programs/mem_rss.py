"""Grows its RSS by MB MiB (a bytearray, every page touched), holds it
INNER seconds (default HOLD) inside grow(), frees it, and holds HOLD
seconds before and after: RSS over time's known answer
(tests/py/test_memory_rss.py)."""
import sys
import time

MB = int(sys.argv[1]) if len(sys.argv) > 1 else 200
HOLD = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
INNER = float(sys.argv[3]) if len(sys.argv) > 3 else HOLD


def grow():
    block = bytearray(MB << 20)
    block[::4096] = b"\1" * len(range(0, MB << 20, 4096))
    time.sleep(INNER)
    return len(block)


def main():
    time.sleep(HOLD)
    grow()
    time.sleep(HOLD)


main()
