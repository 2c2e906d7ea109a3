"""A program for tests/py/test_inline_cost.py: f() holds a
`with ulma.profile(TRACE):` block that is empty ("empty") or calls leaf()
100 times ("body").  f is running when the block starts, so it is recorded
as entered then and left at the block's end; its self time must be the
block's, not that of starting and stopping the tracer."""
import sys

import ulma


def leaf():
    pass


def f(trace, body):
    with ulma.profile(trace, summary="none"):
        if body:
            for _ in range(100):
                leaf()


f(sys.argv[1], sys.argv[2] == "body")
