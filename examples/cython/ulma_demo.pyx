# cython: language_level=3
"""A small Cython module for ulma's example and test (tests/py/test_cython.py).

crunch(n) calls the C helpers square() n times and add_one() 2n times.
call_back(f, n) calls the Python function f(i) n times; tests pass an f
that calls helper(i), which calls the C helper triple() once.
"""


cdef int square(int x):
    return x * x


cdef int add_one(int x):
    return x + 1


cdef int triple(int x):
    return 3 * x


def crunch(int n):
    cdef int i
    cdef long total = 0
    for i in range(n):
        total += add_one(add_one(square(i)))
    return total


def call_back(f, int n):
    total = 0
    for i in range(n):
        total += f(i)
    return total


def helper(int x):
    return triple(x)
