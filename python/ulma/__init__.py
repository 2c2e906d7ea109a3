"""ulma: a tracer and profiler for Python programs and the C code they call.

The tracing itself is C: `ulma._ulma` is the in-process hook and the
`ulma` program is the monitor.  This package only starts them.  Run a
program traced with `ulma run script.py` or `python -m ulma run script.py`.
"""

__version__ = "0.1.0"
__all__ = ["__version__", "attachable"]

_attach = {"path": None}


def attachable():
    """Let `ulma top PID` and `ulma record PID` attach to this process later.

    The process stays untraced until a monitor of the same user attaches;
    until then it costs one thread waking 20 times a second.  Returns the
    path of the control file (docs/live.md).  Calling it again is harmless.
    """
    if _attach["path"] is None:
        import atexit
        import os

        from ulma import _ulma

        _attach["path"] = _ulma.attachable()
        atexit.register(_ulma._attach_shutdown)
        os.register_at_fork(after_in_child=_forked)
    return _attach["path"]


def _forked():
    from ulma import _ulma

    _attach["path"] = None
    _ulma._attach_forked()
