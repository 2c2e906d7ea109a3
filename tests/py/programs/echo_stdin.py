"""Copies its standard input to its standard output, byte for byte."""
import sys

data = sys.stdin.buffer.read()
sys.stdout.buffer.write(data)
sys.stdout.buffer.write(b"\n%d bytes\n" % len(data))
