"""Says "ready", then sleeps until interrupted (KeyboardInterrupt uncaught)."""
import sys
import time


def nap():
    time.sleep(0.02)


print("ready", flush=True)
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    nap()
print("never interrupted")
sys.exit(7)
