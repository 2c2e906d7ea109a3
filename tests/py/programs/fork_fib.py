"""Forks three children that compute fib(18) while the parent computes it
too: each process makes 2*F(19)-1 = 8361 calls of fib."""
import os


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def child_only():
    return fib(18)


pids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        child_only()
        os._exit(0)
    pids.append(pid)
result = fib(18)
for pid in pids:
    os.waitpid(pid, 0)
print(result)
