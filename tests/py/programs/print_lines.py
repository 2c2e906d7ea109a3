"""Prints N numbered lines (default 30000) of 70 characters each,
"LINE 000001 xxx...", then "LINES-DONE": a chatty program whose output
can be checked line by line for loss (tests/py/test_live_faults.py)."""
import sys


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30000
    for i in range(1, n + 1):
        print("LINE %06d %s" % (i, "x" * 58))
    print("LINES-DONE")


main()
