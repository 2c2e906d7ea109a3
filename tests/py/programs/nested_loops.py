"""A program for tests/py/test_export_correction.py: outer() calls
inner() 3000 times and middle() 3000 times, which calls inner() too; each
inner() loops a few microseconds, so no frame is shorter than the hook's
cost and the corrected times need no clamping."""


def inner(n):
    s = 0
    for i in range(n):
        s += i
    return s


def middle(n):
    return inner(n) + inner(n // 2)


def outer():
    total = 0
    for k in range(3000):
        total += inner(100 + k % 7) + middle(60)
    return total


outer()
