"""A program for tests/py/test_overhead.py: work() makes 100,000 calls to
two tiny functions, so tracing costs it far more than its own work.  It
prints the thread CPU time work() took, as the program itself sees it."""
import time


def leaf(x):
    return x + 1


def middle(x):
    return leaf(x) * 2


def work(n):
    total = 0
    for i in range(n):
        total += middle(i)
    return total


def main():
    start = time.thread_time()
    work(50_000)
    print("work-cpu-ns %d" % int((time.thread_time() - start) * 1e9))


main()
