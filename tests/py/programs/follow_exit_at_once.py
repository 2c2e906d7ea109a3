"""Starts a child that exits at once while the monitor (this program's
parent under `ulma run`) is stopped, so that the monitor first looks at
the child's thread after the child has finished: a Python subprocess
(which stops tracing as it exits), or with 'fork' a forked child leaving
by os._exit (no stop runs), reaped before the monitor goes on.  Either
must be named all the same (tests/py/test_follow.py).  Prints the
child's pid and exit status."""
import os
import signal
import subprocess
import sys
import time

monitor = os.getppid()
os.kill(monitor, signal.SIGSTOP)
try:
    if sys.argv[1:] == ["fork"]:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    else:
        child = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(0)", "at-once"])
        time.sleep(0.5)  # the child runs and stops meanwhile
        pid = None
finally:
    os.kill(monitor, signal.SIGCONT)
if pid is None:
    pid, code = child.pid, child.wait()
print(pid, code)
