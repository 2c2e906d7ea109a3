"""Prints what a program can see of how it was started."""
import os
import sys

print("argv", sys.argv)
print("path0", sys.path[0])
print("name", __name__)
print("file", __file__)
print("package", __package__)
print("spec", __spec__ is None)
print("main", sys.modules["__main__"].__dict__ is globals())
# ULMA_SESSION_PATH is the one documented addition (children join the
# session through it); test_follow checks it separately
print("env", sorted(k for k in os.environ if k.startswith("ULMA_") and k not in ("ULMA_PYTHON", "ULMA_SESSION_PATH")))
print("fds", sorted(int(fd) for fd in os.listdir("/proc/self/fd")))
print("stdin", sys.stdin.isatty(), sys.stdin.fileno())
