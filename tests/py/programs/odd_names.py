"""Functions whose names hold characters that export formats must escape:
';' (folded's separator), a newline, '%', a tab, quotes and backslashes
(JSON), markup that would run script if a page inserted it as HTML, and
non-ASCII.  Each NAMES[i] is called i + 1
times, directly from main.  The names are set on the code objects, so the
tracer sees them as the interpreter does (co_qualname too on 3.11+)."""
import sys

NAMES = [
    "semi;colon",
    "new\nline",
    "per%cent",
    "tab\there",
    'quote"back\\slash',
    "<script>alert(1)</script>",
    "gr\u00fc\u00dfe \u2028 \U0001f600",
    "<img src=x onerror=\"document.title='pwned'\">",
]


def _template():
    return 1


def make(name):
    code = _template.__code__.replace(co_name=name)
    if sys.version_info >= (3, 11):
        code = code.replace(co_qualname=name)
    fn = type(_template)(code, globals(), name)
    fn.__qualname__ = name
    return fn


def main():
    total = 0
    for i, name in enumerate(NAMES):
        fn = make(name)
        for _ in range(i + 1):
            total += fn()
    print("odd names", total)


if __name__ == "__main__":
    main()
