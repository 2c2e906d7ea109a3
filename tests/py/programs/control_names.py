"""Functions whose names hold characters a terminal acts on: C1 controls
(NEL, CSI), the line and paragraph separators U+2028 and U+2029, a
right-to-left override, a bidirectional isolate and an escape sequence.

    python control_names.py            each called 100 times, then exit
    python control_names.py STOPFILE   called round after round until
                                       STOPFILE exists (or 30 s pass)

The names are set on the code objects (co_qualname too on 3.11+), so the
tracer sees them as the interpreter does.  Prints nothing itself."""
import os
import sys
import time

NAMES = ["ls\u2028x", "ps\u2029x", "nel\u0085x", "csi\u009bx", "rlo\u202ex", "lri\u2066x", "esc\x1b]0;T\x07x"]


def _template():
    return 1


def make(name):
    code = _template.__code__.replace(co_name=name)
    if sys.version_info >= (3, 11):
        code = code.replace(co_qualname=name)
    return type(_template)(code, globals(), name)


def main():
    functions = [make(name) for name in NAMES]
    stop = sys.argv[1] if len(sys.argv) > 1 else None
    deadline = time.monotonic() + 30
    rounds = 0
    while (rounds < 100) if stop is None else (not os.path.exists(stop) and time.monotonic() < deadline):
        for fn in functions:
            for _ in range(50):
                fn()
        rounds += 1
        if stop is not None:
            time.sleep(0.01)


if __name__ == "__main__":
    main()
