"""Does some work, then kills itself: with SIGKILL, or with the signal
named by its first argument (SIGABRT goes through os.abort())."""
import os
import signal
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


print("fib", fib(15), flush=True)
name = sys.argv[1] if len(sys.argv) > 1 else "SIGKILL"
if name == "SIGABRT":
    os.abort()
os.kill(os.getpid(), getattr(signal, name))
print("still alive")
