"""A program for tests/py/test_lines_coexist.py that traces lines itself:
sys.settrace counts the line events of ours() while counted() runs
before, during and after it.  Prints its counts; they must not change
under `ulma run --lines`."""
import sys


def counted(n):
    total = 0
    for i in range(n):
        total += i
    return total


def ours(n):
    total = 0
    for i in range(n):
        total += counted(i)
    return total


counts = {}


def local(frame, event, arg):
    if event == "line":
        counts[frame.f_lineno] = counts.get(frame.f_lineno, 0) + 1
    return local


def trace(frame, event, arg):
    return local if frame.f_code is ours.__code__ else None


counted(3)
sys.settrace(trace)
ours(3)
sys.settrace(None)
counted(5)
print(sorted(counts.items()))
print("tracer after:", sys.gettrace())
