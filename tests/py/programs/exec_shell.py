"""Replaces itself with a shell that prints and exits 6."""
import os
import sys

print("before exec", flush=True)
os.execv("/bin/sh", ["sh", "-c", "echo replaced; exit 6"])
