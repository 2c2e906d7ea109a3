"""Ends with sys.exit(3) from inside a function."""
import sys


def leave():
    print("leaving")
    sys.exit(3)


leave()
