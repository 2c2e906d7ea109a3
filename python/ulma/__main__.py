"""`python -m ulma ...`: the same as the `ulma` program, run with this Python."""
import os
import sys

from ulma._locate import ulma_binary


def main():
    binary = ulma_binary()
    if binary is None:
        sys.stderr.write("ulma: cannot find the ulma program; reinstall the package\n")
        return 2
    os.environ.setdefault("ULMA_PYTHON", sys.executable)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(binary, [binary] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
