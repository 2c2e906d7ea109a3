"""What the bench scripts share: finding the installed `ulma` program and
timing a command.  The scripts run as `python bench/NAME.py`, so this
module is importable beside them."""
import os
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


def callgrind_counts(out, program=sys.executable):
    """count(cmd): run cmd(wrapper), where wrapper runs `program` (this
    interpreter unless told) under callgrind, and return the instructions
    the processes it started ran.  Files go to the directory `out`."""
    wrapper = os.path.join(out, "python-under-callgrind")
    with open(wrapper, "w") as f:
        f.write('#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file=%s/cg.%%p.out %s "$@"\n' % (
            out, program))
    os.chmod(wrapper, 0o755)

    def count(cmd):
        for name in os.listdir(out):
            if name.startswith("cg."):
                os.unlink(os.path.join(out, name))
        subprocess.run(cmd(wrapper), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        total = 0
        for name in os.listdir(out):
            if name.startswith("cg."):
                with open(os.path.join(out, name)) as f:
                    total += sum(int(line.split()[1]) for line in f if line.startswith("summary:"))
        return total

    return count
