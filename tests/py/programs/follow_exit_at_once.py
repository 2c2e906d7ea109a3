"""Runs a Python child that exits at once while the monitor (this
program's parent under `ulma run`) is stopped, so that the monitor first
looks at the child's thread after the child has finished: the child must
still be there to be named by its command line (tests/py/test_follow.py).
Prints the child's pid."""
import os
import signal
import subprocess
import sys
import time

monitor = os.getppid()
os.kill(monitor, signal.SIGSTOP)
try:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(0)", "at-once"])
    time.sleep(0.5)  # the child runs and stops meanwhile
finally:
    os.kill(monitor, signal.SIGCONT)
print(child.pid, child.wait())
