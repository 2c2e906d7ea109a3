"""A small program for line-level profiling (docs/lines.md):
    ulma run --lines main --lines fib examples/lines_demo.py
"""
import time


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def main():
    total = 0
    for i in range(20):
        total += fib(i)
    time.sleep(0.05)
    return total


print(main())
