"""A program for tests/py/test_lines_memory.py: one line allocates a
list of 100000 pointers, the next a bytes object of 300000 bytes through
a call; the last allocates nothing."""


def make_bytes(n):
    return b"x" * n


def work():
    a = [None] * 100000
    b = make_bytes(300000)
    return len(a) + len(b)


print(work())
