"""A program for the live view tests (tests/py/test_live.py).

Prints "LIVE-START pid=N isatty=B", calls a few functions in a loop
(printing "LIVE-WORKING" once the first round is done), and stops after
--seconds S (default 4) or as soon as the file --stop FILE exists; then
prints "LIVE-DONE" and exits with --code N (default 0).  --pidfile FILE
gets its pid before anything else happens.  --attachable 1 calls
ulma.attachable() first and prints "LIVE-ATTACHABLE <path>"."""
import os
import sys
import time


def leaf(n):
    return n * 2


def work(n):
    total = 0
    for i in range(n):
        total += leaf(i)
    return total


def idle():
    time.sleep(0.001)


def options(argv):
    opts = {"--seconds": "4", "--stop": None, "--code": "0", "--pidfile": None, "--attachable": None}
    for name, value in zip(argv[::2], argv[1::2]):
        opts[name] = value
    return float(opts["--seconds"]), opts["--stop"], int(opts["--code"]), opts["--pidfile"], opts["--attachable"]


def main():
    seconds, stop, code, pidfile, attachable = options(sys.argv[1:])
    if attachable:
        import ulma

        print("LIVE-ATTACHABLE %s" % ulma.attachable(), flush=True)
    if pidfile:
        with open(pidfile + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(pidfile + ".tmp", pidfile)
    print("LIVE-START pid=%d isatty=%s" % (os.getpid(), sys.stdout.isatty()), flush=True)
    deadline = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < deadline:
        work(200)
        idle()
        rounds += 1
        if rounds == 1:
            print("LIVE-WORKING", flush=True)
        if stop and rounds % 16 == 0 and os.path.exists(stop):
            break
    print("LIVE-DONE", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
