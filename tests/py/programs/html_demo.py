"""The HTML report's test program (tests/py/test_export_html_view.py): two
named worker threads and a forked child, a function that spins on the CPU
and one that sleeps (on-CPU against blocked), a helper called from two
callers (callers and callees), and a recursion 45 deep."""
import os
import threading
import time

import ulma


def spin(n):
    s = 0
    for k in range(n):
        s += k * k
    return s


def nap():
    time.sleep(0.05)


def helper(n):
    return spin(n)


def caller_a():
    return helper(20000)


def caller_b():
    return helper(40000)


def depth(n):
    return spin(100000) if n == 0 else depth(n - 1)


def worker():
    ulma.thread_name(threading.current_thread().name)  # the name the report shows
    for _ in range(3):
        caller_a()
        caller_b()
        nap()


def main():
    pid = os.fork()  # before any thread starts
    if pid == 0:
        caller_b()
        os._exit(0)
    threads = [threading.Thread(target=worker, name="worker-%d" % k) for k in range(2)]
    for t in threads:
        t.start()
    depth(45)
    os.waitpid(pid, 0)
    for t in threads:
        t.join()


main()
