/* profile_intercept.c - while ulma traces (Python 3.9-3.11), the program's
 * calls that set or read a profile function go through ulma, and every
 * thread the program starts runs under ulma's hook from its first frame.
 *
 * The builtins concerned are patched in place (builtin_patch.h): the function object
 * sys.setprofile, or the method descriptor _lsprof.Profiler.enable, keeps
 * its identity, name, doc and calling convention, but its PyMethodDef
 * points at ulma's, whose function calls the original and then has chain.c
 * put ulma's hook back in front of what the original set.  In place, so a
 * reference the program took before tracing started (`from sys import
 * setprofile`, cProfile's Profile class) goes through ulma too.  The
 * calling convention is checked first: a builtin that is not the one we
 * know is left alone, and what it sets is caught as a replaced hook.
 *
 * New threads: _thread.start_new_thread (which threading.Thread.start
 * calls, as does any other way of starting a Python thread) is patched the
 * same way.  The thread it starts runs ulma's entry function first, which
 * installs the hook on the new thread and then calls what the program
 * asked for, with the error handling CPython's own thread entry has.  So
 * the threading module is never imported on the program's behalf, and a
 * thread started with _thread directly is traced too.  threading's own
 * profile hook (threading.setprofile) is left to threading: the new thread
 * passes it to sys.setprofile, which chains it behind ulma's.
 *
 * _thread is loaded at start-up; _lsprof is imported (without the
 * program's profiler or debugger seeing it) because cProfile's enable must
 * be patched before the program can call it.
 *
 * Everything is undone at stop.  A replacement reached after that, through
 * a reference taken meanwhile, calls the original.
 */
#include "chain.h"

#if PY_VERSION_HEX < 0x030C0000
#include "builtin_patch.h"

static struct ulma_patch sys_setprofile_patch, sys_getprofile_patch, enable_patch, disable_patch;
static struct ulma_patch start_new_thread_patch, start_new_patch; /* _thread.start_new_thread and its old alias */

static PyObject *intercept_sys_setprofile(PyObject *self, PyObject *func)
{
	PyCFunction original = sys_setprofile_patch.original->ml_meth;
	if (!ulma_rt.active)
		return original(self, func);
	PyThreadState *ts = PyThreadState_Get();
	struct ulma_chain_state before = ulma_chain_before(ts);
	PyObject *r = original(self, func);
	ulma_chain_after(ts, before, &sys_setprofile_patch.replacement);
	return r;
}

static PyObject *intercept_sys_getprofile(PyObject *self, PyObject *unused)
{
	PyObject *program_profiler = ulma_chain_program_profiler(PyThreadState_Get());
	if (program_profiler)
		return program_profiler;
	return sys_getprofile_patch.original->ml_meth(self, unused);
}

static PyObject *intercept_profiler_enable(PyObject *self, PyObject *args, PyObject *kwargs)
{
	PyCFunctionWithKeywords original = (PyCFunctionWithKeywords)(void (*)(void))enable_patch.original->ml_meth;
	if (!ulma_rt.active)
		return original(self, args, kwargs);
	PyThreadState *ts = PyThreadState_Get();
	struct ulma_chain_state before = ulma_chain_before(ts);
	PyObject *r = original(self, args, kwargs);
	ulma_chain_after(ts, before, &enable_patch.replacement);
	return r;
}

static PyObject *intercept_profiler_disable(PyObject *self, PyObject *unused)
{
	PyCFunction original = disable_patch.original->ml_meth;
	if (!ulma_rt.active)
		return original(self, unused);
	PyThreadState *ts = PyThreadState_Get();
	struct ulma_chain_state before = ulma_chain_before(ts);
	PyObject *r = original(self, unused); /* unsets the thread's profile function, whichever it is */
	ulma_chain_after(ts, before, &disable_patch.replacement);
	return r;
}

/* A new thread's first code, before what the program asked it to run:
 * ulma's hook goes on the thread, then the call is CPython's thread
 * entry's: SystemExit ends the thread silently, any other exception is
 * reported as unraisable "in thread started by" the program's function.
 * self: (function, args, kwargs or None). */
static PyObject *thread_entry(PyObject *self, PyObject *unused)
{
	(void)unused;
	PyObject *func = PyTuple_GET_ITEM(self, 0), *args = PyTuple_GET_ITEM(self, 1);
	PyObject *kwargs = PyTuple_GET_ITEM(self, 2) == Py_None ? NULL : PyTuple_GET_ITEM(self, 2);
	PyThreadState *ts = PyThreadState_Get();
	if (ulma_rt.active && ulma_chain_install(ts) < 0)
		PyErr_Clear(); /* an audit hook refused: the thread runs untraced, as it may */
	PyObject *r = PyObject_Call(func, args, kwargs);
	if (r || PyErr_ExceptionMatches(PyExc_SystemExit))
		return r;
	_PyErr_WriteUnraisableMsg("in thread started by", func);
	Py_RETURN_NONE;
}

static PyMethodDef thread_entry_def = {"_thread_entry", thread_entry, METH_NOARGS, NULL};

/* _thread.start_new_thread(function, args[, kwargs]) while tracing: the
 * thread starts in thread_entry.  Arguments CPython would refuse go to it
 * unchanged, so its errors are its own. */
static PyObject *start_thread(const struct ulma_patch *p, PyObject *self, PyObject *fargs)
{
	PyCFunction original = p->original->ml_meth;
	Py_ssize_t n = PyTuple_GET_SIZE(fargs);
	if (!ulma_rt.active || n < 2 || n > 3)
		return original(self, fargs);
	PyObject *func = PyTuple_GET_ITEM(fargs, 0), *args = PyTuple_GET_ITEM(fargs, 1);
	PyObject *kwargs = n == 3 ? PyTuple_GET_ITEM(fargs, 2) : Py_None;
	if (!PyCallable_Check(func) || !PyTuple_Check(args) || (kwargs != Py_None && !PyDict_Check(kwargs)))
		return original(self, fargs);
	PyObject *boot = PyTuple_Pack(3, func, args, kwargs);
	PyObject *entry = boot ? PyCFunction_New(&thread_entry_def, boot) : NULL;
	PyObject *no_args = entry ? PyTuple_New(0) : NULL;
	PyObject *entry_args = no_args ? PyTuple_Pack(2, entry, no_args) : NULL;
	PyObject *r = entry_args ? original(self, entry_args) : NULL;
	Py_XDECREF(entry_args);
	Py_XDECREF(no_args);
	Py_XDECREF(entry);
	Py_XDECREF(boot);
	return r;
}

static PyObject *intercept_start_new_thread(PyObject *self, PyObject *fargs)
{
	return start_thread(&start_new_thread_patch, self, fargs);
}

static PyObject *intercept_start_new(PyObject *self, PyObject *fargs)
{
	return start_thread(&start_new_patch, self, fargs);
}

/* Set this thread's trace and profile events aside while ulma imports a
 * module, so that a profiler or debugger the program runs does not see it. */
static PyObject *import_quietly(const char *name)
{
	PyThreadState *ts = PyThreadState_Get();
#if PY_VERSION_HEX >= 0x030B0000
	PyThreadState_EnterTracing(ts);
	PyObject *m = PyImport_ImportModule(name);
	PyThreadState_LeaveTracing(ts);
#else
#if PY_VERSION_HEX >= 0x030A0000
	int *use_tracing = &ts->cframe->use_tracing;
#else
	int *use_tracing = &ts->use_tracing;
#endif
	int saved = *use_tracing;
	ts->tracing++;
	*use_tracing = 0;
	PyObject *m = PyImport_ImportModule(name);
	ts->tracing--;
	*use_tracing = saved;
#endif
	return m;
}

static void patch_lsprof(void)
{
	PyObject *lsprof = import_quietly("_lsprof");
	PyObject *type = lsprof ? PyObject_GetAttrString(lsprof, "Profiler") : NULL;
	if (type && PyType_Check(type)) {
		PyObject *dict = ((PyTypeObject *)type)->tp_dict; /* borrowed lookups */
		ulma_patch(&enable_patch, PyDict_GetItemString(dict, "enable"), "enable", METH_VARARGS | METH_KEYWORDS,
		      (PyCFunction)(void (*)(void))intercept_profiler_enable);
		ulma_patch(&disable_patch, PyDict_GetItemString(dict, "disable"), "disable", METH_NOARGS,
		      intercept_profiler_disable);
	}
	PyErr_Clear(); /* a Python without _lsprof has no cProfile to intercept */
	Py_XDECREF(type);
	Py_XDECREF(lsprof);
}

/* Patch _thread's start functions, on the module loaded at start-up. */
static void patch_thread_start(void)
{
	PyObject *name = PyUnicode_FromString("_thread");
	PyObject *thread = name ? PyImport_GetModule(name) : NULL;
	Py_XDECREF(name);
	if (thread) {
		PyObject *dict = PyModule_GetDict(thread); /* borrowed lookups */
		ulma_patch(&start_new_thread_patch, PyDict_GetItemString(dict, "start_new_thread"), "start_new_thread",
		      METH_VARARGS, intercept_start_new_thread);
		ulma_patch(&start_new_patch, PyDict_GetItemString(dict, "start_new"), "start_new", METH_VARARGS,
		      intercept_start_new);
		Py_DECREF(thread);
	}
	PyErr_Clear(); /* no _thread: no threads to hand the hook to */
}

void ulma_intercept_install(void)
{
	ulma_patch(&sys_setprofile_patch, PySys_GetObject("setprofile"), "setprofile", METH_O, intercept_sys_setprofile);
	ulma_patch(&sys_getprofile_patch, PySys_GetObject("getprofile"), "getprofile", METH_NOARGS,
	      intercept_sys_getprofile);
	patch_lsprof();
	patch_thread_start();
}

void ulma_intercept_remove(void)
{
	ulma_unpatch(&sys_setprofile_patch);
	ulma_unpatch(&sys_getprofile_patch);
	ulma_unpatch(&enable_patch);
	ulma_unpatch(&disable_patch);
	ulma_unpatch(&start_new_thread_patch);
	ulma_unpatch(&start_new_patch);
}

#endif
