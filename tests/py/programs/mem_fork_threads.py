"""Threads that allocate and exit while the main thread forks: each of
THREADS workers keeps K objects and exits; a forked child keeps K objects
in child_work and leaves with os._exit; the parent keeps K in parent_work.
Another thread allocates and frees without pause during the fork."""
import os
import sys
import threading

K = int(sys.argv[1])
THREADS = 4
KEEP = []
lock = threading.Lock()
stop = threading.Event()


def worker(k):
    mine = []
    for _ in range(k):
        mine.append(object())
    with lock:
        KEEP.extend(mine)


def churner():
    while not stop.is_set():
        x = [bytes(64) for _ in range(32)]
        del x


def child_work(k):
    for _ in range(k):
        KEEP.append(object())


def parent_work(k):
    for _ in range(k):
        KEEP.append(object())


def main():
    churn = threading.Thread(target=churner)
    churn.start()
    workers = [threading.Thread(target=worker, args=(K,)) for _ in range(THREADS)]
    for t in workers:
        t.start()
    pid = os.fork()
    if pid == 0:
        child_work(K)
        os._exit(0)
    for t in workers:
        t.join()
    parent_work(K)
    os.waitpid(pid, 0)
    stop.set()
    churn.join()


main()
print("done")
