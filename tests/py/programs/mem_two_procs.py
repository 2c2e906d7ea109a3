"""Two processes with known memory (test_export_html_memory.py): the
parent holds PARENT_MB blocks of 1 MiB, forks a child that holds
CHILD_MB more and leaves, then waits for it.  Arguments: PARENT_MB CHILD_MB."""
import os
import sys

PARENT_MB, CHILD_MB = (int(a) for a in sys.argv[1:3])


def hold(mb):
    return [bytes(1 << 20) for _ in range(mb)]


def child(mb):
    held = hold(mb)
    os._exit(0 if len(held) == mb else 1)


def main():
    kept = hold(PARENT_MB)
    pid = os.fork()
    if pid == 0:
        child(CHILD_MB)
    os.waitpid(pid, 0)
    print(len(kept))


main()
