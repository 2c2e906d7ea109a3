"""A program for tests/py/test_lines_memory.py: one line
sleeps 100 ms, the next spins on the CPU."""
import time


def work():
    time.sleep(0.1)
    end = time.perf_counter() + 0.05
    while time.perf_counter() < end: pass
    return 0


work()
