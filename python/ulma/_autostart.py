"""Join a traced program's session from a Python process it started.

`ulma run` leaves ULMA_SESSION_PATH (a /proc path to the session's memfd)
in the traced program's environment. Every Python process started from
there, whether by subprocess or by multiprocessing's spawn and forkserver,
inherits it. The `ulma-autostart.pth` file that pip puts in site-packages
imports this module at interpreter start-up when the variable is set (and
ULMA_SESSION_FD is not: that is `ulma run`'s own program, which _boot
starts, and which loads nothing it does not need). It opens the session
and traces the process until its atexit. Forked children need none of
this: they inherit the hook (see src/python/threads.c).

This never raises and never prints: a process that cannot join, for
example because the session is gone, runs untraced.
"""
import os


def _stop():
    try:
        from ulma import _ulma

        _ulma.stop()
    except Exception:
        pass


def _start():
    path = os.environ.get("ULMA_SESSION_PATH")
    if not path or "ULMA_SESSION_FD" in os.environ:
        return  # not traced, or the main program, which _boot starts itself
    try:
        from ulma import _ulma

        if _ulma.is_active():
            return
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        import atexit

        atexit.register(_stop)
        _ulma.start(fd, (_stop.__code__,))
    except Exception:
        pass


_start()
