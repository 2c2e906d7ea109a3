"""Many memory events and many leaking stacks, for the HTML report's
bounds (test_export_html_memory.py): swing makes and drops SWINGS blocks
of about 70 KB, so the monitor's heap counter moves at every one of them;
nest(d) recurses d deep and keeps one 1000-byte block there, for STACKS
distinct stacks still allocated at the end.  Arguments: SWINGS STACKS."""
import sys

SWINGS, STACKS = (int(a) for a in sys.argv[1:3])
KEEP = []


def swing(n):
    for i in range(n):
        block = bytearray(70000 + i % 64)
        del block


def nest(d):
    if d:
        nest(d - 1)
    else:
        KEEP.append(bytes(1000))


def main():
    swing(SWINGS)
    for d in range(STACKS):
        nest(d)


main()
