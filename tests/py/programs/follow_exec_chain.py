"""Runs a chain of programs in one process by exec: this script, then
`python -c CODE chained`, which execs this script again with 'last';
each image calls `step` before it execs, and the last prints its pid.
Each is traced (the session's path is in the environment), and the
process is named by the program it runs last (tests/py/test_follow.py).
With 'at-once' in argv the chain runs while the monitor is stopped, so
that it first looks after the whole chain has ended."""
import os
import signal
import sys

CODE = "import os, sys; sum(range(5)); os.execv(sys.executable, [sys.executable, sys.argv[1], 'last'] + sys.argv[2:])"


def step():
    return sum(range(10))


args = sys.argv[1:]
if args[:1] == ["last"]:
    step()
    print(os.getpid(), flush=True)
    if "at-once" in args:
        os.kill(int(os.environ["FOLLOW_MONITOR"]), signal.SIGCONT)
else:
    if "at-once" in args:
        os.environ["FOLLOW_MONITOR"] = str(os.getppid())
        os.kill(os.getppid(), signal.SIGSTOP)
    step()
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-c", CODE, os.path.abspath(__file__)] + args)
