"""A program for tests/py/test_lines_inline.py.  `lines_inline.py block
TRACE` runs main() in a `with ulma.profile(TRACE, lines=[wrapped,
"by_pat*"])` block; `lines_inline.py run` runs it without one (under
`ulma run`).  marked() carries @ulma.lines; late() is marked inside the
block, after tracing started; wrapped() is given to the block through
the decorator that wraps it."""
import functools
import sys

import ulma


def deco(f):
    @functools.wraps(f)
    def wrapper(*args):
        return f(*args)
    return wrapper


@deco
def wrapped(n):
    t = 0
    for i in range(n):
        t += i
    return t


@ulma.lines
def marked(n):
    return n * 2


def by_pattern(n):
    return n + 1


def late(n):
    return n - 1


def untouched(n):
    return n


def main():
    wrapped(3)
    marked(2)
    by_pattern(1)
    untouched(1)
    ulma.lines(late)
    late(1)


if sys.argv[1] == "block":
    with ulma.profile(sys.argv[2], summary="none", lines=[wrapped, "by_pat*"]):
        main()
    main()  # untraced again
else:
    main()
