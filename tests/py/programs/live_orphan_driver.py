"""Driver for test_live.py's monitor-killed case, run as its own process
because it makes itself a child subreaper: when the monitor dies, the
traced program (the monitor's child) is re-parented to this process, which
can then wait for it and learn its real exit status.

argv: ULMA_BIN TRACE PROGRAM [program args...]
Starts `ULMA_BIN run --lossless --ring-records 1024 -o TRACE PROGRAM ARGS`
with stdout and stderr on pipes, waits for the program's "LIVE-WORKING"
line, kills the monitor with SIGKILL, lets the program finish, and prints
one JSON object: the program's pid, its exit status, its whole stdout, and
the monitor's wait status."""
import ctypes
import json
import os
import signal
import subprocess
import sys

PR_SET_CHILD_SUBREAPER = 36


def main():
    ulma, trace, program = sys.argv[1:4]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print(json.dumps({"error": "prctl: errno %d" % ctypes.get_errno()}))
        return 1
    monitor = subprocess.Popen(
        [ulma, "run", "--lossless", "--ring-records", "1024", "-o", trace, program] + sys.argv[4:],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = b""
    while b"LIVE-WORKING\n" not in out:
        line = monitor.stdout.readline()
        if not line:
            break
        out += line
    pid = int(out.split(b"pid=")[1].split()[0]) if b"pid=" in out else None
    os.kill(monitor.pid, signal.SIGKILL)
    monitor_status = monitor.wait()
    out += monitor.stdout.read()  # EOF once the program's copy of the pipe closes
    err = monitor.stderr.read()
    status = None
    if pid is not None:
        _, raw = os.waitpid(pid, 0)  # re-parented to us
        status = os.waitstatus_to_exitcode(raw) if hasattr(os, "waitstatus_to_exitcode") else raw >> 8
    print(json.dumps({"pid": pid, "status": status, "stdout": out.decode(errors="replace"),
                      "stderr": err.decode(errors="replace"), "monitor": monitor_status}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
