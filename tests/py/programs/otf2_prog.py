"""Known answers for the OTF2 export (tests/py/test_export_otf2.py): fib(12)
on the main thread (465 calls) and fib(10) on each of two threads named
"worker-0" and "worker-1" (177 calls each), a zone "load" entered 3 times,
3 instants "checkpoint" and the counter "queue" at 0, 1.5, 3, 4.5."""
import threading

import ulma


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def worker(i):
    ulma.thread_name("worker-%d" % i)
    fib(10)


def main():
    for i in range(3):
        with ulma.zone("load"):
            ulma.instant("checkpoint")
    for i in range(4):
        ulma.counter("queue", i * 1.5)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(fib(12))


if __name__ == "__main__":
    main()
