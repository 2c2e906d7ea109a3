"""Runs the target program inside the traced interpreter.

`ulma run` starts `python -c "...; import ulma._boot as b; b.main()"` with
the session's fd in ULMA_SESSION_FD.  main() makes the interpreter look as
it would have for `python script.py` (argv, orig_argv and the command line
ps shows, sys.path[0], a fresh __main__, the environment without
ULMA_SESSION_FD, no module loaded that tracing does not need: see
docs/design.md, "What the program sees"), starts the hook and runs the code.
ULMA_SESSION_PATH stays in the environment so the Python processes the
program starts join the session (see _autostart.py).
Tracing stops in an atexit handler registered before the program runs, so
it runs after the program's own handlers and after non-daemon threads have
been joined: both are traced.  An uncaught exception prints the traceback
without our frames and exits 1; an uncaught KeyboardInterrupt ends the
process by SIGINT, as CPython does.
"""
import atexit
import os
import sys

from ulma import _ulma

_state = {"die_by_sigint": False}


def _finish():
    # registered first, so it runs last among atexit handlers
    _ulma.stop()
    if _state["die_by_sigint"]:
        import signal

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)


def _fresh_main_module(path):
    import builtins

    import _frozen_importlib_external  # loaded at start-up: importlib.machinery would load 4 more

    mod = type(sys)("__main__")
    mod.__annotations__ = {}
    mod.__file__ = path
    mod.__cached__ = None
    mod.__builtins__ = builtins
    mod.__package__ = None
    mod.__spec__ = None
    if path is not None:
        mod.__loader__ = _frozen_importlib_external.SourceFileLoader("__main__", path)
    sys.modules["__main__"] = mod
    return mod


def _report(exc):
    # drop our own frames: the traceback starts in the program, as untraced
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    exc.__traceback__ = tb  # the default hook prints this, not its argument
    sys.excepthook(type(exc), exc, tb)


def _become_attachable(own):
    """`ulma run --attachable`.  A control directory that is refused (another
    user's, a symlink, open to others) or any other failure to make the
    control file must not stop the program: it runs untraced and not
    attachable, after one line saying so.  Else one line says the pid to
    attach to: this process's, which `$!` is not when python runs through a
    shim that forks (pyenv's, a wrapper script)."""
    import ulma

    try:
        ulma._attachable(own)
    except OSError as exc:
        why = " ".join(str(exc).split())  # one line, whatever the path holds
        if not why.startswith("ulma: "):
            why = "ulma: cannot make the control file: " + why
        line = "%s; the program runs untraced and cannot be attached\n" % why
    else:
        line = "ulma: attach with `ulma top %d`\n" % os.getpid()
    try:
        sys.stderr.write(line)
        sys.stderr.flush()
    except Exception:
        pass  # no stderr (closed): nowhere to say it


def _forget_linecache():
    """Python 3.13+ registers a -c command's source for tracebacks, which
    imports linecache: our bootstrap's doing, not the program's, whose first
    `import linecache` must find none, as untraced.  Only a linecache that
    came in for that is forgotten: the module imported right before the
    bootstrap's own first import, ulma (a .pth or sitecustomize that
    imported it put it earlier)."""
    names = list(sys.modules)
    # the first of ulma's modules (the package is moved after its submodules
    # once its __init__ has run)
    at = next(i for i, name in enumerate(names) if name == "ulma" or name.startswith("ulma."))
    if at > 0 and names[at - 1] == "linecache":
        del sys.modules["linecache"]


def main():
    if sys.version_info >= (3, 13):
        _forget_linecache()
    # `ulma run --attachable`: no session; untraced until `ulma top PID` attaches
    attachable = os.environ.pop("ULMA_ATTACHABLE", None) == "1"
    fd = None if attachable else int(os.environ.pop("ULMA_SESSION_FD"))
    if fd is not None:
        _ulma._announce(fd)  # the monitor tells a program that ends before start() from no Python
    args = sys.argv[1:]
    # ps and sys.orig_argv show `python script.py args` (or -m), not our `-c CODE`
    _ulma._show_untraced_command(len(args))
    orig = getattr(sys, "orig_argv", None)  # 3.10+
    if orig and len(orig) >= len(args) + 3 and orig[-len(args) - 2] == "-c":
        sys.orig_argv = orig[: -len(args) - 2] + orig[-len(args) :]
    module_mode = args[0] == "-m"
    if module_mode:
        target = args[1]
        sys.argv[:] = [args[1]] + args[2:]
        sys.path.insert(0, os.getcwd())
        _fresh_main_module(None)
    else:
        target = args[0]
        sys.argv[:] = args
        # CPython joins the cwd and the path as given, without normalising it
        path = target if os.path.isabs(target) else os.path.join(os.getcwd(), target)
        sys.path.insert(0, os.path.dirname(os.path.realpath(target)))
        main_mod = _fresh_main_module(path)
        try:
            import io

            with io.open_code(path) as f:
                source = f.read()
            code = compile(source, path, "exec", dont_inherit=True)
        except BaseException as exc:
            _report(exc)
            raise SystemExit(1)

    atexit.register(_finish)
    # our frames (this function, the -c code that called it, the report of an
    # uncaught exception) are never recorded
    own = (_finish.__code__, _report.__code__, sys._getframe(0).f_code, sys._getframe(1).f_code)
    if attachable:
        _become_attachable(own)
    else:
        _ulma.start(fd, own)
    try:
        if module_mode:
            import runpy

            runpy._run_module_as_main(target, alter_argv=True)
        else:
            exec(code, main_mod.__dict__)
    except SystemExit:
        raise
    except KeyboardInterrupt as exc:
        _report(exc)
        _state["die_by_sigint"] = True
    except BaseException as exc:
        _report(exc)
        raise SystemExit(1)  # a statement: sys.exit would be a call of ulma's in the profile
