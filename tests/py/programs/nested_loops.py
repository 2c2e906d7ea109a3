"""A program for tests/py/test_export_correction.py: outer() calls
inner() 3000 times and middle() 3000 times, which calls inner() too; each
inner() loops a few microseconds, and outer() and middle() spin a little
(a `while`: no call) between their calls, so no stretch of any frame's own
time is shorter than the hook's cost, even where a start-up in a slow spell
measured it at twice its usual (59 ns on 3.10 once: middle's calls, a few
bytecodes apart, then had some stretches clamped at zero, which the
summary's per-function correction and the exports' per-event one count
differently), and the corrected times need no clamping."""


def inner(n):
    s = 0
    for i in range(n):
        s += i
    return s


def middle(n):
    i = 0
    while i < 10:
        i += 1
    a = inner(n)
    while i < 20:
        i += 1
    b = inner(n // 2)
    while i < 30:
        i += 1
    return a + b


def outer():
    total = 0
    for k in range(3000):
        i = 0
        while i < 10:
            i += 1
        a = inner(100 + k % 7)
        while i < 20:
            i += 1
        total += a + middle(60)
        while i < 30:
            i += 1
    return total


outer()
