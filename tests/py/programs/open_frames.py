"""A program for the open-frames tests (tests/py/test_open_frames.py):
frames that are already running when tracing starts.

main() starts a thread that sits in waiter(), blocked on an event, then
loops in serve(), which calls handle() -> leaf(), until the file --stop
exists; then it releases the waiter, joins it, prints "DONE" and exits.
It prints "READY pid=N" once both are in place.  With --attachable 1 it
calls ulma.attachable() first (else it is expected to run under
`ulma run --attachable`); with --inline TRACE it instead traces a part of
serve() with `with ulma.profile(TRACE):`, from inside serve().  --idle N
starts N more threads in waiter() first.
"""
import os
import sys
import threading
import time


def leaf(n):
    return n + 1


def handle(n):
    return sum(leaf(i) for i in range(n))


def waiter(event):
    event.wait()


def serve(stop, inline):
    if inline:
        import ulma

        with ulma.profile(inline, summary="none"):
            for _ in range(200):
                handle(50)
            time.sleep(0.3)
        return
    while not os.path.exists(stop):
        handle(50)
        time.sleep(0.002)


def main():
    opts = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    if opts.get("--attachable"):
        import ulma

        ulma.attachable()
    event = threading.Event()
    idle = [threading.Thread(target=waiter, args=(event,)) for _ in range(int(opts.get("--idle", 0)))]
    thread = threading.Thread(target=waiter, args=(event,))
    for t in idle + [thread]:
        t.start()
    print("READY pid=%d" % os.getpid(), flush=True)
    serve(opts.get("--stop"), opts.get("--inline"))
    event.set()
    for t in idle + [thread]:
        t.join()
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
