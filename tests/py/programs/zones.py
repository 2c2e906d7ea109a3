"""ulma.zone, ulma.instant, ulma.counter and ulma.thread_name with known
counts (tests/py/test_zones.py): "block" 7, "method" 7, "decorated" 18
(7 + 7 + 4 from a thread), "raises" 3, "outer" and "inner" 1, "recursive"
5 (nested in itself), "threaded" 4; and marks with keyword arguments."""
import threading

import ulma


@ulma.zone("decorated")
def leaf(i):
    return i * 2


class Box:
    @ulma.zone("method")
    def get(self, x):
        return leaf(x)


@ulma.zone("raises")
def fails():
    raise ValueError("inside a zone")


RECURSIVE = ulma.zone("recursive")


def recurse(n):
    with RECURSIVE:
        if n:
            recurse(n - 1)


def in_thread():
    ulma.thread_name("zone-worker")
    for _ in range(4):
        with ulma.zone("threaded"):
            leaf(0)


class Odd:
    def __str__(self):
        return "odd\n\"value\""


def work():
    total = 0
    box = Box()
    for i in range(7):
        with ulma.zone("block"):
            total += leaf(i)
            total += box.get(i)
        ulma.instant("checkpoint", step=i, ok=True, ratio=i / 2, tags=["a", None], obj=Odd())
        ulma.counter("queue_depth", i)
        ulma.counter("load", i * 0.5)
    ulma.instant("plain")
    ulma.counter("huge", 10 ** 400)
    ulma.instant("inf", x=float("inf"), nested={"k": [1, {"d": 2}]}, s="tab\there \u00e9")
    for _ in range(3):
        try:
            fails()
        except ValueError:
            pass
    with ulma.zone("outer"):
        with ulma.zone("inner"):
            pass
    recurse(4)
    t = threading.Thread(target=in_thread)
    t.start()
    t.join()
    return total


if __name__ == "__main__":
    print(work())
