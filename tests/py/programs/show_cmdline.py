"""Prints the bytes of /proc/self/cmdline, what ps and pgrep -f read."""
import sys

with open("/proc/self/cmdline", "rb") as f:
    sys.stdout.write(repr(f.read()) + "\n")
