"""Code with an empty file name, as exec(compile(src, "", "exec")) makes,
and a function whose name is empty: calls export formats must carry
without taking "" for a failure.  f is called 3 times and the nameless
function twice."""
import sys


def _template():
    return 1


def nameless():
    code = _template.__code__.replace(co_name="")
    if sys.version_info >= (3, 11):
        code = code.replace(co_qualname="")
    return type(_template)(code, globals(), "")


exec(compile("def f():\n    return 1\nfor _ in range(3):\n    f()\n", "", "exec"))
g = nameless()
g()
g()
