"""What the bench scripts share: finding the installed `ulma` program and
timing a command.  The scripts run as `python bench/NAME.py`, so this
module is importable beside them."""
import subprocess
import sys
import time


def ulma_binary():
    """The `ulma` program of the installed package (its __init__ loads the
    extension, which a source tree lacks); exits with a message if none."""
    from ulma._locate import ulma_binary as locate

    found = locate()
    if not found:
        sys.exit("bench: cannot find the ulma program; run `make install` first")
    return found


def timed(cmd, env, quiet_stderr=True):
    """Wall seconds of running cmd to completion (it must succeed)."""
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL if quiet_stderr else None, env=env)
    return time.perf_counter() - t
