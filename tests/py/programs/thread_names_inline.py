"""Known answers for tests/py/test_thread_names.py: threads alive before an
inline ulma.profile() starts are named too.  "idle-worker" waits on an
event while the main thread (renamed "boss" before tracing) profiles
fib(10) into the trace given as argv[1]."""
import sys
import threading

import ulma


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


go = threading.Event()
worker = threading.Thread(target=go.wait, name="idle-worker")
worker.start()
threading.current_thread().name = "boss"
with ulma.profile(sys.argv[1], summary="none", lossless=True):
    fib(10)
go.set()
worker.join()
