"""Known answers for tests/py/test_thread_names.py: Python thread names
recorded by ulma itself, with no call of ulma.thread_name.  The main thread
("MainThread") starts four threads, each calling fib(10) (177 calls):
"worker-1" as named; one named "before" that renames itself to "renamed"
first thing; one created as "early" and renamed "late" before it starts;
one whose name holds a lone surrogate (not UTF-8: written with "?" for it) and
is 70,000 characters long (cut as every long name is)."""
import threading


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def work():
    fib(10)


def rename_self():
    threading.current_thread().name = "renamed"
    fib(10)


def main():
    threads = [
        threading.Thread(target=work, name="worker-1"),
        threading.Thread(target=rename_self, name="before"),
        threading.Thread(target=work, name="early"),
        threading.Thread(target=work, name="odd-\udcff-" + "y" * 70000),
    ]
    threads[2].name = "late"
    for t in threads:
        t.start()
        t.join()


main()
