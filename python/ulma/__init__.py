"""ulma: a tracer and profiler for Python programs and the C code they call.

The tracing itself is C: `ulma._ulma` is the in-process hook and the
`ulma` program is the monitor.  This package only starts them.  Run a
program traced with `ulma run script.py` or `python -m ulma run script.py`.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
