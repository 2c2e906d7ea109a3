"""Ends with os._exit(5): no atexit, no flush, no interpreter shutdown."""
import os


def work(n):
    return sum(i * i for i in range(n))


print("before", work(100), flush=True)
os._exit(5)
