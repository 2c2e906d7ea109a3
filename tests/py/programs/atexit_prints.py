"""Registers atexit handlers that print, in the order they run."""
import atexit


def first():
    print("handler first")


def second(arg):
    print("handler second", arg)


atexit.register(first)
atexit.register(second, 42)
print("main done")
