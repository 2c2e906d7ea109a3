"""Does some work, then kills itself with SIGKILL."""
import os
import signal


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


print("fib", fib(15), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
print("still alive")
