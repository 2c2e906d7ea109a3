"""Says "ready" from inside nap(), then naps until interrupted
(KeyboardInterrupt left uncaught)."""
import sys
import time

said_ready = False


def nap():
    global said_ready
    if not said_ready:
        print("ready", flush=True)
        said_ready = True
    time.sleep(0.02)


deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    nap()
print("never interrupted")
sys.exit(7)
