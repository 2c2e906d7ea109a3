"""Forks: the child works, prints and leaves with sys.exit(4) (running the
inherited atexit handlers); the parent waits and reports the child's code."""
import atexit
import os
import sys


def bye(role):
    print("atexit in", role[0], flush=True)


def child_work():
    return sum(i * i for i in range(1000))


role = ["parent"]
atexit.register(bye, role)
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    role[0] = "child"
    print("child", child_work(), flush=True)
    sys.exit(4)
_, status = os.waitpid(pid, 0)
print("parent saw", os.WEXITSTATUS(status), flush=True)
