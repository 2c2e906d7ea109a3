"""C callables of every shape, for tests/py/test_c_names.py: classmethods
of several C classes (one inherited by a subclass), static methods, a
type's __new__, methods called on instances of a subclass and as stored
bound methods, module functions, a function bound to no object; and
Python functions of several shapes.  main() calls each a known number of
times (CALLS, by ulma's name for it); import-time calls are not counted.

    python c_names.py                   run it (under cProfile, under `ulma run`)
    python c_names.py --inline TRACE    trace only main() and run_thread(), with ulma.profile()

run_thread() runs in_thread() in a thread, joined at once, so that
cProfile, which before 3.12 sees only the thread that enabled it, differs
from ulma in a known way.  It runs after every other call of the program:
cProfile 3.12+ keeps one stack for all threads, so the callers it records
for calls made while another thread runs depend on the scheduling.
"""
import codecs
import collections
import datetime
import itertools
import sys
import threading
import time

# ulma's name -> calls main() makes
CALLS = {
    "int.from_bytes": 3,
    "dict.fromkeys": 4 + 2,  # dict.fromkeys 4 times, and MyDict.fromkeys (inherited) twice
    "collections.OrderedDict.fromkeys": 5,
    "bytes.fromhex": 6,
    "datetime.datetime.now": 7,
    "itertools.chain.from_iterable": 8,
    "datetime.date.fromordinal": 2,  # inherited by datetime.datetime, called on it
    "str.maketrans": 2,  # a static method
    "object.__new__": 2,
    "tuple.__new__": 3,
    "list.reverse": 3,  # on an instance of a list subclass, twice as a stored bound method
    "type.mro": 2,  # a method of the metaclass, called on a class
    "time.sleep": 2,
    "builtins.divmod": 4,
    "ignore_errors": 2,  # codecs' error handler: bound to no object
    "Shape.make": 2,
    "Shape.unit": 1,
    "Shape.area": 2,
    "Shape.Inner.depth": 1,
    "main.<locals>.helper": 3,
    "squares": 4,  # one entry and three resumes
    "in_thread": 1,
    "run_thread": 1,
}


class MyDict(dict):
    pass


class MyList(list):
    pass


class Shape:
    def __init__(self, n):
        self.n = n

    @classmethod
    def make(cls, n):
        return cls(n)

    @staticmethod
    def unit():
        return 1

    def area(self):
        return self.n * self.n

    class Inner:
        def depth(self):
            return 2


def squares(n):
    for i in range(n):
        yield i * i


def in_thread(out):
    out.append(abs(-4))


def run_thread():
    out = []
    worker = threading.Thread(target=in_thread, args=(out,))
    worker.start()
    worker.join()
    return out[0]


def main():
    def helper(x):
        return x + 1

    for _ in range(3):
        int.from_bytes(b"\x01\x02", "little")
    for _ in range(4):
        dict.fromkeys("ab")
    for _ in range(2):
        MyDict.fromkeys("ab")
    for _ in range(5):
        collections.OrderedDict.fromkeys("abc")
    for _ in range(6):
        bytes.fromhex("00ff")
    for _ in range(7):
        datetime.datetime.now()
    for _ in range(8):
        itertools.chain.from_iterable([[1], [2]])
    for _ in range(2):
        datetime.datetime.fromordinal(1000)
    for _ in range(2):
        str.maketrans("ab", "cd")
    for _ in range(2):
        object.__new__(Shape)
    for _ in range(3):
        tuple.__new__(tuple, (1, 2))
    mine = MyList([1, 2, 3])
    mine.reverse()
    reverse = mine.reverse
    reverse()
    reverse()
    for _ in range(2):
        Shape.mro()
    for _ in range(2):
        time.sleep(0)
    for i in range(4):
        divmod(i, 3)
    ignore = codecs.lookup_error("ignore")
    for _ in range(2):
        ignore(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid"))
    shapes = [Shape.make(2), Shape.make(3)]
    for s in shapes:
        s.area()
    Shape.unit()
    Shape.Inner().depth()
    for i in range(3):
        helper(i)
    return sum(squares(3))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--inline"]:
        import ulma

        with ulma.profile(sys.argv[2], summary="none", lossless=True):
            main()
            run_thread()
    else:
        print("c_names", main())
        run_thread()
