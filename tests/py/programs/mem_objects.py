"""Objects of known types made in known functions (test_memory_objects.py):
make_lists makes N one-element lists and keeps them, make_points K
instances of a user class Point, churn D dicts it drops at once."""
import sys

N, K, D = (int(a) for a in sys.argv[1:4])


class Point:
    def __init__(self, x):
        self.x = x


KEEP = []


def make_lists(n):
    for i in range(n):
        KEEP.append([i])


def make_points(n):
    for i in range(n):
        KEEP.append(Point(i))


def churn(n):
    for i in range(n):
        d = {"a": i}
        del d


def main():
    make_lists(N)
    make_points(K)
    churn(D)


main()
