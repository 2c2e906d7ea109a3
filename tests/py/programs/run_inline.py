"""Run a script inside `with ulma.profile(TRACE, summary="json"):`, as a
program that profiles part of itself would (tests/py/test_nothing_lost.py).
Usage: run_inline.py TRACE SCRIPT"""
import runpy
import sys

import ulma

trace, script = sys.argv[1], sys.argv[2]
sys.argv = [script]
with ulma.profile(trace, summary="none"):
    runpy.run_path(script, run_name="__main__")
