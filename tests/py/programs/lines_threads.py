"""A program for tests/py/test_lines_coexist.py: counted(50) in each of
four threads at once, and in the main thread."""
import threading


def counted(n):
    total = 0
    for i in range(n):
        total += i
    return total


threads = [threading.Thread(target=counted, args=(50,)) for _ in range(4)]
for t in threads:
    t.start()
counted(50)
for t in threads:
    t.join()
