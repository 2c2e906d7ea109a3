"""Starts Python children every way a program can: multiprocessing with the
fork, spawn and forkserver start methods (a pool of 2, mapping work() over 10
items), and a subprocess running this file with 'child'.  work() is called
exactly 30 times across the pools, and child_main() once in the subprocess,
which calls fib 8361 times (fib(18))."""
import multiprocessing as mp
import subprocess
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def work(x):
    return x * 2


def child_main():
    print("child", fib(18))


if __name__ == "__main__":
    if sys.argv[1:] == ["child"]:
        child_main()
        sys.exit(0)
    for method in ("fork", "spawn", "forkserver"):
        with mp.get_context(method).Pool(2) as pool:
            print(method, sum(pool.map(work, range(10))))
    out = subprocess.run([sys.executable, __file__, "child"], capture_output=True, text=True)
    print(out.stdout.strip(), out.returncode)
