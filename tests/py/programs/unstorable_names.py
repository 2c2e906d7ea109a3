"""Functions whose names a definition cannot hold as they are: one with a
NUL byte in the middle, one of 70,000 characters.  Each is called once
from main().  The names are set on the code objects (co_qualname too on
3.11+), so the tracer sees them as the interpreter does."""
import sys

NUL_NAME = "nul\x00after"
LONG_NAME = "long" + "\u00e9" * 35000 + "END"  # 70,007 bytes of UTF-8


def _template():
    return 1


def make(name):
    code = _template.__code__.replace(co_name=name)
    if sys.version_info >= (3, 11):
        code = code.replace(co_qualname=name)
    return type(_template)(code, globals(), name)


def main():
    print("calls", make(NUL_NAME)() + make(LONG_NAME)())


if __name__ == "__main__":
    main()
