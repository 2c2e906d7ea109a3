"""Many distinct leaking stacks, for the bound of the HTML report's flame
graphs (test_export_html_memory.py): STACKS functions keep_0, keep_1, ...,
each compiled by exec under a name of its own and called once from main,
keep one bytes object of 1000 + k bytes.  Argument: STACKS."""
import sys

STACKS = int(sys.argv[1])
KEEP = []


def main():
    space = {"KEEP": KEEP}
    for k in range(STACKS):
        exec("def keep_%d():\n    KEEP.append(bytes(%d))\n" % (k, 1000 + k), space)
        space["keep_%d" % k]()


main()
