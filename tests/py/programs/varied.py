"""Exercises many kinds of Python calls; tests compare ulma's call counts
for every function here with the interpreter's own count (callcount.py).

Deterministic: the number of calls of each function does not depend on
thread scheduling.  builtins.divmod, which neither the standard library
modules imported here nor ulma's bootstrap call, is called exactly
DIVMOD_CALLS times, all in the main thread.
"""
import asyncio
import atexit
import concurrent.futures
import contextlib
import functools
import threading

DIVMOD_CALLS = 7


def countdown(n):
    while n > 0:
        yield n
        n -= 1


def delegating(n):
    yield from countdown(n)
    yield from countdown(n // 2)


def counting_up(log):
    n = 0
    try:
        while True:
            yield n
            n += 1
    finally:
        log.append(n)


def partially_consumed():
    log = []
    gen = counting_up(log)
    first = next(gen), next(gen), next(gen)
    gen.close()  # runs the finally clause: one more entry into the frame
    return sum(first) + log[0]


async def tick(i):
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    return i * 2


async def gather_all():
    results = await asyncio.gather(*[tick(i) for i in range(5)])
    return sum(results)


class Boom(Exception):
    pass


def level3(x):
    if x % 3 == 0:
        raise Boom(x)
    return x


def level2(x):
    return level3(x) + 1


def level1(x):
    try:
        return level2(x)
    except Boom:
        return -1


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


@logged
def decorated(x):
    return x + 1


class Shape:
    def __init__(self, side):
        self._side = side

    @property
    def area(self):
        return self._side * self._side

    @classmethod
    def unit(cls):
        return cls(1)

    @staticmethod
    def sides():
        return 4

    def __call__(self, k):
        return self.area * k


@contextlib.contextmanager
def managed(log):
    log.append("enter")
    try:
        yield len(log)
    finally:
        log.append("exit")


class Manual:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def thread_work(i, out):
    out[i] = sum(fib(12) for _ in range(3))


def pool_square(x):
    return x * x


def at_exit():
    print("varied: at exit")


def main():
    atexit.register(at_exit)
    total = sum(delegating(10))
    total += partially_consumed()
    for i in range(DIVMOD_CALLS):
        total += divmod(i, 3)[0]
    total += asyncio.run(gather_all())
    total += sum(level1(x) for x in range(12))
    total += fib(15)
    total += sum(decorated(x) for x in range(4))
    s = Shape(3)
    total += s.area + Shape.unit().area + Shape.sides() + Shape.sides() + s(2)
    square = lambda v: v * v  # noqa: E731
    total += sum([square(v) for v in range(6)])
    log = []
    for _ in range(3):
        with managed(log) as n:
            total += n
    with Manual():
        total += 1
    out = [0] * 3
    threads = [threading.Thread(target=thread_work, args=(i, out)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total += sum(out)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        total += sum(pool.map(pool_square, range(20)))
    print("varied:", total)


if __name__ == "__main__":
    main()
