"""Prints the names defined in __main__ before any of its own code ran."""
import sys

print(sorted(k for k in vars(sys.modules["__main__"]) if k.startswith("__")))
