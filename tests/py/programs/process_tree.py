"""A tree of four processes whose parents are known: the program forks a
child, which runs this file as a Python subprocess ("grandchild") and
waits; the program then runs this file as a subprocess too ("sub").
Each process prints "ROLE PID PPID" as the kernel gives it (os.getpid,
os.getppid), so a test can compare an export's parent -> child flows with
those lines."""
import os
import subprocess
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def say(role):
    print(role, os.getpid(), os.getppid(), flush=True)


def run_self(role):
    subprocess.run([sys.executable, __file__, role], check=True)


if __name__ == "__main__":
    if sys.argv[1:]:
        say(sys.argv[1])
        fib(12)
        sys.exit(0)
    say("main")
    pid = os.fork()
    if pid == 0:
        say("child")
        fib(12)
        run_self("grandchild")
        os._exit(0)
    os.waitpid(pid, 0)
    run_self("sub")
