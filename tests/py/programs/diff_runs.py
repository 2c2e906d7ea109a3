"""Two runs for `ulma diff` (tests/py/test_diff.py): `diff_runs.py 1` is run
A, `diff_runs.py 2` run B.  In B, hot() does exactly twice the work,
called() is called exactly twice as often, steady() does the same, and
only_a() / only_b() exist in one run each."""
import sys


def spin(n):
    s = 0
    for i in range(n):
        s += i
    return s


def hot(factor):
    return spin(200000 * factor)


def called():
    return spin(1000)


def steady():
    return spin(100000)


def only_a():
    return spin(100000)


def only_b():
    return spin(100000)


def main(factor):
    for _ in range(10):
        hot(factor)
        steady()
    for _ in range(50 * factor):
        called()
    if factor == 1:
        only_a()
    else:
        only_b()


main(int(sys.argv[1]))
