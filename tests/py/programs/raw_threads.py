"""Threads started with _thread directly, as threading does underneath:
one calls leaf() 100 times, one raises ValueError (CPython reports it as
unraisable "in thread started by" its function), one raises SystemExit
(silently ended).  The main thread waits for each to run and to end."""
import _thread
import sys


def leaf(i):
    return i + 1


def work(n, done):
    total = 0
    for i in range(n):
        total += leaf(i)
    print("worker", total, flush=True)
    done.release()


def boom(done):
    done.release()
    raise ValueError("raised in a raw thread")


def leave(done):
    done.release()
    raise SystemExit(3)


def main():
    import time

    for target, args in ((work, (100,)), (boom, ()), (leave, ())):
        done = _thread.allocate_lock()
        done.acquire()
        _thread.start_new_thread(target, args + (done,))
        done.acquire()  # released by the thread: it ran
        while _thread._count():  # it has ended, its error reported
            time.sleep(0.001)
    print("threading loaded:", "threading" in sys.modules)


main()
