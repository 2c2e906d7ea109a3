"""Known answers for the Perfetto export (tests/py/test_export_perfetto.py):
two threads named by marks, each calling fib(10) (177 calls) and sleeping
30 ms in nap(); the main thread makes one instant "go" and five values of
the counter "queue" (0, 1.5, ..., 6), then sleeps in nap() too, and
spins on its CPU in spin() (a loop of fixed length, tens of ms)."""
import threading
import time

import ulma


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def nap():
    time.sleep(0.03)


def worker(k):
    ulma.thread_name("worker-%d" % k)
    fib(10)
    nap()


def spin():
    n = 0
    for i in range(2_000_000):
        n += i
    return n


def main():
    ulma.instant("go")
    for i in range(5):
        ulma.counter("queue", i * 1.5)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    nap()
    spin()


main()
