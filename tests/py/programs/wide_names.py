"""Functions named in characters of other widths, for the summary's
alignment (tests/py/test_summary_width.py): CJK (two columns each), emoji
(two), fullwidth letters (two), a combining accent (none) and ASCII.
NAMES[i] is called i + 1 times.  The names are set on the code objects."""
import sys

NAMES = [
    "\u6570\u636e\u5904\u7406",  # data processing, 4 CJK: 8 columns
    "\U0001f600_grin",  # 2 + 5 columns
    "\uff21\uff22\uff23",  # fullwidth ABC: 6 columns
    "nai\u0308ve",  # combining diaeresis: 5 columns
    "plain_ascii",
    "\ud55c\uad6d\uc5b4_\u65e5\u672c\u8a9e_\u4e2d\u6587_" * 4,  # Korean, Japanese, Chinese: 76 columns, cut
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
    print("wide names", total)


if __name__ == "__main__":
    main()
