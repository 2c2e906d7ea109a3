"""Known answers for GIL waits: two threads run spin(), each until it has
used 400 ms of thread CPU time, so each spends much of its time waiting
for the GIL the other holds.  Meanwhile lock_waiter() blocks on a lock
that is released only after both have finished, and the main thread runs
sleeper(), which sleeps 300 ms.  Those two are blocked, but not on the GIL."""
import threading
import time


def spin(seconds):
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        pass


def lock_waiter(lock):
    with lock:
        pass


def sleeper():
    time.sleep(0.3)


def main():
    lock = threading.Lock()
    lock.acquire()
    waiter = threading.Thread(target=lock_waiter, args=(lock,))
    waiter.start()
    spinners = [threading.Thread(target=spin, args=(0.4,)) for _ in range(2)]
    for t in spinners:
        t.start()
    sleeper()
    for t in spinners:
        t.join()
    lock.release()
    waiter.join()
    print("done")


if __name__ == "__main__":
    main()
