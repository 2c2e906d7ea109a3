"""Trace a block that calls into an instrumented Cython module, without
`ulma run`: python inline_demo.py OUT.trace [variant].  Both the "native"
variant (linked with ulma.get_link_args()) and the "unlinked" one are
recorded: when tracing starts, ulma points the unlinked module's hooks,
bound to glibc's empty ones, at its own (docs/native.md, "How the hooks
reach ulma")."""
import importlib
import sys

import ulma

demo = importlib.import_module("ulma_demo_" + (sys.argv[2] if len(sys.argv) > 2 else "native"))


def main():
    with ulma.profile(sys.argv[1], summary="none"):
        print(demo.crunch(1237))


if __name__ == "__main__":
    main()
