"""ulma: a tracer and profiler for Python programs and the C code they call.

The tracing itself is C: `ulma._ulma` is the in-process hook and the
`ulma` program is the monitor.  This package only starts them.  Run a
program traced with `ulma run script.py` or `python -m ulma run script.py`,
or trace a part of it with `with ulma.profile("out.trace"):`.

Mark the program's own spans and events, which show among its calls
(docs/native.md, "From Python"): `with ulma.zone("load"):` or
`@ulma.zone("step")`, `ulma.instant("checkpoint", step=3)`,
`ulma.counter("queue_depth", n)`, `ulma.thread_name("worker")`.  They
cost almost nothing when the program is not traced.  Time a function line
by line with `@ulma.lines`, `ulma.profile(lines=[...])` or `ulma run
--lines PATTERN` (docs/lines.md).  Importing ulma also
makes the runtime's -finstrument-functions hooks visible to extension
modules imported later, and `get_include()`, `get_lib_dir()` and
`get_link_args()` say how to build such a module against ulma's C API.
"""

import os as _os

# Loading the extension puts libulma_rt.so's symbols (__cyg_profile_func_*,
# the C API) in the process's global scope (src/python/module.c).
from ulma._ulma import counter, instant, thread_name, zone

__version__ = "0.1.0"
__all__ = ["__version__", "attachable", "counter", "get_include", "get_lib_dir", "get_link_args", "instant",
           "lines", "profile", "thread_name", "zone"]


def get_include():
    """The directory to put on the include path for `#include <ulma/ulma.h>`.

    In CMake: execute_process(COMMAND python -c "import ulma; print(ulma.get_include())" ...).
    """
    return _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "include")


def get_lib_dir():
    """The directory of libulma_rt.so, the runtime (-finstrument-functions
    hooks and the C API) to link with -lulma_rt."""
    return _os.path.dirname(_os.path.abspath(__file__))


def get_link_args():
    """Linker arguments for an extension module that uses the C API or is
    built with -finstrument-functions, for setuptools' extra_link_args:
    ["-L<dir>", "-lulma_rt", "-Wl,-rpath,<dir>", "-Wl,--wrap=__cyg_profile_func_enter",
    "-Wl,--wrap=__cyg_profile_func_exit"].  The rpath makes the module load
    the same runtime as ulma's own extension, whether or not ulma is imported
    first.  The --wrap options bind the module's -finstrument-functions calls
    to ulma's hooks: without them they bind to glibc's empty ones, and the
    module's functions are recorded only under `ulma run`, which preloads
    the runtime (docs/native.md, "Cython")."""
    d = get_lib_dir()
    return ["-L" + d, "-lulma_rt", "-Wl,-rpath," + d, "-Wl,--wrap=__cyg_profile_func_enter",
            "-Wl,--wrap=__cyg_profile_func_exit"]

def _code_of(func):
    """The code object of a function, through decorators that keep the
    function they wrap in __wrapped__ (functools.wraps), methods,
    staticmethod and classmethod; and the function it belongs to."""
    seen = set()
    while id(func) not in seen:
        seen.add(id(func))
        if hasattr(func, "__wrapped__"):
            func = func.__wrapped__
        elif hasattr(func, "__func__"):  # a method, staticmethod, classmethod
            func = func.__func__
        else:
            break
    code = getattr(func, "__code__", None)
    if type(code) is not type(_code_of.__code__):
        raise TypeError("ulma: lines takes Python functions and patterns, not %r" % (func,))
    return func, code


def lines(func):
    """Time every line of a function when this process is traced:

        @ulma.lines
        def hot(data):
            ...

    The function (and the functions, lambdas and comprehensions inside it)
    is chosen for line-level profiling in every later tracing session of
    this process, and at once in one that is running: under `ulma run`, in
    a `with ulma.profile():` block, when `ulma record` attaches.  Untraced,
    it costs nothing.  Returns the function itself.  docs/lines.md.
    """
    from ulma import _ulma

    _ulma._lines_mark(_code_of(func)[1])
    return func


def _lines_targets(chosen):
    """profile(lines=...): the patterns (str) for the monitor, which every
    process of the session reads, and (name, code) pairs for functions,
    which only this process can see."""
    if chosen is None:
        return [], ()
    if isinstance(chosen, str) or callable(chosen) or hasattr(chosen, "__func__"):
        chosen = [chosen]
    patterns, codes = [], []
    for item in chosen:
        if isinstance(item, str):
            if not item.strip():
                raise ValueError("ulma.profile: lines takes patterns (a function or module name, a file, "
                                 "or 'all'), not %r" % (item,))
            patterns.append(item)
        else:
            func, code = _code_of(item)
            name = "%s.%s" % (getattr(func, "__module__", None) or "?", getattr(func, "__qualname__", code.co_name))
            codes.append((name, code))
    return patterns, tuple(codes)


_attach = {"path": None}


def attachable():
    """Let `ulma top PID` and `ulma record PID` attach to this process later.

    The process stays untraced until a monitor of the same user attaches;
    until then it costs one thread waking 20 times a second.  Returns the
    path of the control file (docs/live.md).  Calling it again is harmless.
    """
    return _attachable(())


def _attachable(skip):
    """attachable(), with code objects an attached monitor never records
    (`ulma run --attachable` passes its bootstrap's)."""
    if _attach["path"] is None:
        import atexit
        import os

        from ulma import _ulma

        _attach["path"] = _ulma.attachable(skip)
        atexit.register(_ulma._attach_shutdown)
        os.register_at_fork(after_in_child=_forked)
    return _attach["path"]


def _forked():
    from ulma import _ulma

    _attach["path"] = None
    _ulma._attach_forked()


class profile:
    """Trace a block of this program, and every process it starts meanwhile.

        with ulma.profile("out.trace"):
            work()

    starts a monitor (the `ulma` program, in a session of its own), traces
    every thread of this process into it, and lets the Python processes
    started inside the block join the same trace, as under `ulma run`:
    forks, multiprocessing (fork, spawn, forkserver) and Python
    subprocesses.  At the end of the block tracing stops, the monitor
    finishes the trace and prints the summary on stderr.  `start()` and
    `stop()` do the same without a with-statement.  docs/inline.md.

    output: the trace file (by default ulma.trace, an earlier one there
    kept as ulma.trace.old; a file named here is replaced); summary: "text", "json" or "none"; lossless:
    when a ring is full, wait for room (the default) rather than drop
    events; c_calls: record builtins too; follow:
    let started processes join; correction: subtract the hook's own cost
    from the summary's times; limit: rows of the text summary; memory:
    True to record every allocation and free, Python's and native code's
    (bytes per function, leaks, the peak, objects per type:
    docs/memory.md), or "sample" / "sample:BYTES" to sample one allocation
    every BYTES bytes on average (`ulma run --memory=sample:BYTES`); lines: the code to time
    line by line, a list of functions and of patterns as `ulma run
    --lines` takes them ("pkg.mod", "Class.method", "prog.py", "all";
    docs/lines.md).
    """

    def __init__(self, output=None, summary="text", lossless=True, c_calls=True, follow=True,
                 correction=True, limit=25, memory=False, lines=None):
        if summary not in ("text", "json", "none"):
            raise ValueError("ulma.profile: summary must be 'text', 'json' or 'none', not %r" % (summary,))
        self.output = None if output is None else str(output)
        self.summary = summary
        self.lossless = lossless
        self.c_calls = c_calls
        if isinstance(memory, str) and not (memory == "sample" or memory.startswith("sample:")):
            raise ValueError("ulma.profile: memory must be True, False, 'sample' or 'sample:BYTES', not %r"
                             % (memory,))
        self.memory = memory if isinstance(memory, str) else bool(memory)
        self.follow = follow
        self.correction = correction
        self.limit = int(limit)
        self._line_patterns, self._line_codes = _lines_targets(lines)
        self._monitor = None
        self._saved_path = None

    def start(self):
        """Start the monitor and trace this process into it."""
        import os
        import subprocess

        from ulma import _ulma
        from ulma._locate import ulma_binary

        if self._monitor is not None or _ulma.is_active():
            raise RuntimeError("ulma: this process is already being traced")
        binary = ulma_binary()
        if not binary:
            raise RuntimeError("ulma: cannot find the ulma program of this installation")
        argv = [binary, "__host", str(os.getpid())] + ([] if self.output is None else ["-o", self.output])
        argv += ["--summary", self.summary, "--limit", str(self.limit)]
        argv += [] if self.lossless else ["--may-drop"]
        argv += [] if self.c_calls else ["--no-c-calls"]
        argv += [] if self.correction else ["--no-correction"]
        if self.memory:
            argv.append("--memory=" + self.memory if isinstance(self.memory, str) else "--memory")
        argv += ["--lines=" + pattern for pattern in self._line_patterns]
        monitor = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        path = monitor.stdout.readline().decode(errors="replace").strip()
        if not path.startswith("/proc/"):
            monitor.stdin.close()
            code = monitor.wait()
            monitor.stdout.close()
            raise RuntimeError("ulma: the monitor did not start (exit status %d; its reason is above)" % code)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            monitor.stdin.close()
            monitor.wait()
            monitor.stdout.close()
            raise
        self._monitor = monitor
        self._stop_tracing = _ulma.stop
        if self.follow:
            self._saved_path = os.environ.get("ULMA_SESSION_PATH")
            os.environ["ULMA_SESSION_PATH"] = path
        # the caller's frames (main, the block's function) are recorded as
        # entered now; our own (start, __enter__) are not
        own = (profile.start, profile.__enter__, profile.stop, profile.__exit__, _restore_env)
        _ulma.start(fd, tuple(f.__code__ for f in own), True, self._line_codes)
        return self

    def stop(self):
        """Stop tracing, let the monitor finish the trace and print the
        summary, and wait for it.  Returns the monitor's exit status."""
        if self._monitor is None:
            return None
        self._stop_tracing()  # no import here: it would run, and be recorded, while tracing
        monitor, self._monitor = self._monitor, None
        if self.follow:
            _restore_env(self._saved_path)
        monitor.stdin.close()
        code = monitor.wait()
        monitor.stdout.close()
        return code

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


def _restore_env(saved):
    import os

    if saved is None:
        os.environ.pop("ULMA_SESSION_PATH", None)
    else:
        os.environ["ULMA_SESSION_PATH"] = saved
