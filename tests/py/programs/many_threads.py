"""300 threads alive at once (tests/py/test_threads_many.py): each calls
leaf() 100 times, then waits on a barrier that all 300 and the main thread
share, then calls leaf() 100 times more.  More threads than the 128 slots
ulma once had, all with events at the same time."""
import threading

N = 300
barrier = threading.Barrier(N + 1)


def leaf(x):
    return x + 1


def worker():
    s = 0
    for k in range(100):
        s = leaf(s)
    barrier.wait()
    for k in range(100):
        s = leaf(s)


threads = [threading.Thread(target=worker) for _ in range(N)]
for t in threads:
    t.start()
barrier.wait()
for t in threads:
    t.join()
print("joined", len(threads))
