"""For bench/lines.py --instructions: `line_loops.py f N` runs f(N), a loop
that calls an (unchosen) empty function, `line_loops.py h N` runs h(N), a
loop of nothing but its two lines."""
import sys


def g():
    pass


def f(n):
    for i in range(n):
        g()


def h(n):
    for i in range(n):
        pass


{"f": f, "h": h}[sys.argv[1]](int(sys.argv[2]))
