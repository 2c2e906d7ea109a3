"""Short-lived threads (tests/py/test_threads_many.py): 1000 threads, one
after another, each calling leaf() 500 times; so every thread slot is
claimed, drained and recycled again and again."""
import threading


def leaf(x):
    return x + 1


def worker():
    s = 0
    for k in range(500):
        s = leaf(s)


for wave in range(1000):
    t = threading.Thread(target=worker)
    t.start()
    t.join()
