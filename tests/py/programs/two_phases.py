"""A program for tests/py/test_overhead.py: the same work twice, half a
second apart, so that the monitor has written the first half's events into
the trace before the program's stop measures the hook's cost again.  Each
inner() loops a few microseconds and phase() spins a little between its
calls (a `while`: no call), so no stretch of a frame's own time is shorter
than the hook's cost: none is clamped, and the exports' per-event correction
and the summary's per-function one agree."""
import time


def inner(n):
    s = 0
    for i in range(n):
        s += i
    return s


def phase():
    total = 0
    for k in range(2000):
        i = 0
        while i < 10:
            i += 1
        total += inner(100 + k % 7)
    return total


phase()
time.sleep(0.5)
phase()
