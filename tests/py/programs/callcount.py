"""Ground truth for call counts: run a program untraced under a profile
function installed in every thread (sys.setprofile + threading.setprofile)
and count its events the way the interpreter reports them.

usage: python callcount.py OUT.json PROGRAM.py [args...]

OUT.json gets {"python": [[file, firstlineno, co_name, calls], ...],
"c": [[owner, name, calls], ...]}, written after the program's own atexit
handlers, as ulma stops tracing after them.
"""
import atexit
import json
import os
import runpy
import sys
import threading
from threading import get_ident

# One pair of tables per thread: a thread switch can happen inside the
# profile function, so a shared "d[k] = d.get(k, 0) + 1" would lose updates.
tables = {}  # thread ident -> (python calls, C calls)


def _c_key(fn):
    owner = getattr(fn, "__module__", None)
    if owner is None:
        self = getattr(fn, "__self__", None)
        owner = type(self).__name__ if self is not None else ""
    return owner, getattr(fn, "__name__", "?")


def counter(frame, event, arg):
    if event != "call" and event != "c_call":
        return
    mine = tables.get(get_ident())
    if mine is None:
        mine = tables[get_ident()] = ({}, {})
    if event == "call":
        co = frame.f_code
        key = (co.co_filename, co.co_firstlineno, co.co_name)
        mine[0][key] = mine[0].get(key, 0) + 1
    else:
        key = _c_key(arg)
        mine[1][key] = mine[1].get(key, 0) + 1


def dump(path):
    sys.setprofile(None)
    threading.setprofile(None)
    py_calls, c_calls = {}, {}
    for py, c in list(tables.values()):
        for key, n in py.items():
            py_calls[key] = py_calls.get(key, 0) + n
        for key, n in c.items():
            c_calls[key] = c_calls.get(key, 0) + n
    with open(path, "w") as f:
        json.dump(
            {
                "python": [[k[0], k[1], k[2], v] for k, v in py_calls.items()],
                "c": [[k[0], k[1], v] for k, v in c_calls.items()],
            },
            f,
        )


def main():
    out, program = sys.argv[1], os.path.abspath(sys.argv[2])
    sys.argv[:] = sys.argv[2:]
    sys.path[0] = os.path.dirname(program)
    atexit.register(dump, out)  # first registered, so it runs last
    threading.setprofile(counter)
    sys.setprofile(counter)
    runpy.run_path(program, run_name="__main__")


main()
