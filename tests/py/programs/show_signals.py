"""Prints the signal state the program started with: Python's view of
each handler and the kernel's ignored and blocked masks."""
import signal

for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGPIPE", "SIGUSR1", "SIGUSR2", "SIGCHLD"):
    handler = signal.getsignal(getattr(signal, name))
    print(name, int(handler) if isinstance(handler, int) else handler.__name__)
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith(("SigBlk", "SigIgn")):
            print(line.strip())
