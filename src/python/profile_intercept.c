/* profile_intercept.c - while ulma traces (Python 3.9-3.11), the program's
 * calls that set or read a profile function go through ulma.
 *
 * The builtins among them are patched in place: the function object
 * sys.setprofile, or the method descriptor _lsprof.Profiler.enable, keeps
 * its identity, name, doc and calling convention, but its PyMethodDef
 * points at ulma's, whose function calls the original and then has chain.c
 * put ulma's hook back in front of what the original set.  In place, so a
 * reference the program took before tracing started (`from sys import
 * setprofile`, cProfile's Profile class) goes through ulma too.  The
 * calling convention is checked first: a builtin that is not the one we
 * know is left alone, and what it sets is caught as a replaced hook.
 *
 * threading.setprofile and threading.getprofile are Python functions, so
 * the module's attributes are replaced instead.  threading's hook, which
 * each new thread passes to sys.setprofile, holds ulma's thread_start
 * while tracing; the program's own is kept here, installed on each new
 * thread behind ulma's, and put back at stop.
 *
 * Everything is undone at stop.  A replacement reached after that, through
 * a reference taken meanwhile, calls the original.
 */
#include "chain.h"

#if PY_VERSION_HEX < 0x030C0000
#include <string.h>

/* One builtin function or method descriptor, routed to ulma's function. */
struct patch {
	PyObject *target;        /* the object patched, while it is */
	PyMethodDef *original;   /* its own definition: kept for late callers */
	PyMethodDef replacement; /* the original's, with ulma's function */
};

static struct patch sys_setprofile_patch, sys_getprofile_patch, enable_patch, disable_patch;

static PyObject *thread_start;        /* ulma's stand-in for threading's hook */
static PyObject *threading_module;    /* while intercepted */
static PyObject *program_thread_hook; /* what the program gave threading.setprofile, or NULL */
static PyObject *original_threading_setprofile, *original_threading_getprofile;

static PyMethodDef **definition_of(PyObject *obj)
{
	if (PyCFunction_Check(obj))
		return &((PyCFunctionObject *)obj)->m_ml;
	if (Py_IS_TYPE(obj, &PyMethodDescr_Type))
		return &((PyMethodDescrObject *)obj)->d_method;
	return NULL;
}

static void patch(struct patch *p, PyObject *target, const char *name, int flags, PyCFunction meth)
{
	PyMethodDef **def = target ? definition_of(target) : NULL;
	if (!def || *def == &p->replacement)
		return;
	if (strcmp((*def)->ml_name, name) != 0 || (*def)->ml_flags != flags)
		return;
	p->original = *def;
	p->replacement = (PyMethodDef){p->original->ml_name, meth, p->original->ml_flags, p->original->ml_doc};
	*def = &p->replacement;
	Py_INCREF(target);
	Py_XSETREF(p->target, target);
}

static void unpatch(struct patch *p)
{
	if (!p->target)
		return;
	PyMethodDef **def = definition_of(p->target);
	if (*def == &p->replacement)
		*def = p->original;
	Py_CLEAR(p->target);
}

/* CPython's own sys.setprofile(func) on the calling thread. */
static PyObject *cpython_setprofile(PyObject *func)
{
	struct patch *p = &sys_setprofile_patch;
	if (p->target)
		return p->original->ml_meth(PyCFunction_GET_SELF(p->target), func);
	PyObject *setprofile = PySys_GetObject("setprofile"); /* borrowed */
	if (!setprofile) {
		PyErr_SetString(PyExc_RuntimeError, "lost sys.setprofile");
		return NULL;
	}
	return PyObject_CallOneArg(setprofile, func);
}

PyObject *ulma_intercept_start_thread(PyThreadState *ts)
{
	struct ulma_chain_state before = ulma_chain_before(ts);
	if (program_thread_hook) {
		PyObject *r = cpython_setprofile(program_thread_hook);
		if (!r)
			return NULL;
		Py_DECREF(r);
	}
	ulma_chain_after(ts, before, &sys_setprofile_patch.replacement);
	Py_RETURN_NONE;
}

static PyObject *intercept_sys_setprofile(PyObject *self, PyObject *func)
{
	PyCFunction original = sys_setprofile_patch.original->ml_meth;
	if (!ulma_tracer.active)
		return original(self, func);
	PyThreadState *ts = PyThreadState_Get();
	if (func == thread_start) /* a new thread, in threading's bootstrap */
		return ulma_intercept_start_thread(ts);
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
	if (!ulma_tracer.active)
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
	if (!ulma_tracer.active)
		return original(self, unused);
	PyThreadState *ts = PyThreadState_Get();
	struct ulma_chain_state before = ulma_chain_before(ts);
	PyObject *r = original(self, unused); /* unsets the thread's profile function, whichever it is */
	ulma_chain_after(ts, before, &disable_patch.replacement);
	return r;
}

static PyObject *intercept_threading_setprofile(PyObject *self, PyObject *func)
{
	(void)self;
	if (!threading_module) /* not tracing: a reference taken while it was */
		return PyObject_CallOneArg(original_threading_setprofile, func);
	if (func == Py_None || func == thread_start)
		func = NULL;
	Py_XINCREF(func);
	Py_XSETREF(program_thread_hook, func);
	Py_RETURN_NONE;
}

static PyObject *intercept_threading_getprofile(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	if (!threading_module)
		return PyObject_CallNoArgs(original_threading_getprofile);
	PyObject *hook = program_thread_hook ? program_thread_hook : Py_None;
	Py_INCREF(hook);
	return hook;
}

static PyMethodDef threading_setprofile_def = {
	"setprofile", intercept_threading_setprofile, METH_O,
	"setprofile(func)\n--\n\nSet a profile function for every thread the threading module starts\n"
	"from now on; each passes it to sys.setprofile() before its run() method."};
static PyMethodDef threading_getprofile_def = {
	"getprofile", intercept_threading_getprofile, METH_NOARGS,
	"getprofile()\n--\n\nThe profiler function set by threading.setprofile()."};

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

/* Replace mod.name by `ours`, remembering the original in *original. */
static int replace_attr(PyObject *mod, const char *name, PyObject **original, PyMethodDef *ours_def)
{
	PyObject *current = PyObject_GetAttrString(mod, name);
	if (!current) { /* threading.getprofile is new in 3.10 */
		PyErr_Clear();
		return 0;
	}
	if (PyCFunction_Check(current) && ((PyCFunctionObject *)current)->m_ml == ours_def) {
		Py_DECREF(current);
		return 0;
	}
	Py_XSETREF(*original, current);
	PyObject *module_name = PyModule_GetNameObject(mod);
	PyObject *ours = module_name ? PyCFunction_NewEx(ours_def, NULL, module_name) : NULL;
	int rc = ours ? PyObject_SetAttrString(mod, name, ours) : -1;
	Py_XDECREF(ours);
	Py_XDECREF(module_name);
	return rc;
}

/* Put the original mod.name back, unless the program replaced ours. */
static void restore_attr(PyObject *mod, const char *name, PyObject *original, PyMethodDef *ours_def)
{
	PyObject *current = PyObject_GetAttrString(mod, name);
	if (!current) {
		PyErr_Clear();
		return;
	}
	if (original && PyCFunction_Check(current) && ((PyCFunctionObject *)current)->m_ml == ours_def &&
	    PyObject_SetAttrString(mod, name, original) < 0)
		PyErr_Clear();
	Py_DECREF(current);
}

static int install_threading(void)
{
	PyObject *threading = import_quietly("threading");
	if (!threading)
		return -1;
	PyObject *hook = PyObject_GetAttrString(threading, "_profile_hook");
	if (!hook) {
		Py_DECREF(threading);
		return -1;
	}
	if (hook == Py_None || hook == thread_start)
		Py_CLEAR(hook);
	Py_XSETREF(program_thread_hook, hook);
	Py_XSETREF(threading_module, threading); /* from here on, ulma_intercept_remove undoes it */
	if (PyObject_SetAttrString(threading, "_profile_hook", thread_start) < 0 ||
	    replace_attr(threading, "setprofile", &original_threading_setprofile, &threading_setprofile_def) < 0 ||
	    replace_attr(threading, "getprofile", &original_threading_getprofile, &threading_getprofile_def) < 0)
		return -1;
	return 0;
}

static void patch_lsprof(void)
{
	PyObject *lsprof = import_quietly("_lsprof");
	PyObject *type = lsprof ? PyObject_GetAttrString(lsprof, "Profiler") : NULL;
	if (type && PyType_Check(type)) {
		PyObject *dict = ((PyTypeObject *)type)->tp_dict; /* borrowed lookups */
		patch(&enable_patch, PyDict_GetItemString(dict, "enable"), "enable", METH_VARARGS | METH_KEYWORDS,
		      (PyCFunction)(void (*)(void))intercept_profiler_enable);
		patch(&disable_patch, PyDict_GetItemString(dict, "disable"), "disable", METH_NOARGS,
		      intercept_profiler_disable);
	}
	PyErr_Clear(); /* a Python without _lsprof has no cProfile to intercept */
	Py_XDECREF(type);
	Py_XDECREF(lsprof);
}

int ulma_intercept_install(PyObject *thread_start_fn)
{
	if (!thread_start) {
		Py_INCREF(thread_start_fn);
		thread_start = thread_start_fn;
	}
	patch(&sys_setprofile_patch, PySys_GetObject("setprofile"), "setprofile", METH_O, intercept_sys_setprofile);
	patch(&sys_getprofile_patch, PySys_GetObject("getprofile"), "getprofile", METH_NOARGS,
	      intercept_sys_getprofile);
	patch_lsprof();
	if (install_threading() < 0) {
		PyObject *et, *ev, *tb;
		PyErr_Fetch(&et, &ev, &tb);
		ulma_intercept_remove();
		PyErr_Restore(et, ev, tb);
		return -1;
	}
	return 0;
}

void ulma_intercept_remove(void)
{
	unpatch(&sys_setprofile_patch);
	unpatch(&sys_getprofile_patch);
	unpatch(&enable_patch);
	unpatch(&disable_patch);
	if (threading_module) {
		PyObject *hook = PyObject_GetAttrString(threading_module, "_profile_hook");
		if (hook == thread_start &&
		    PyObject_SetAttrString(threading_module, "_profile_hook",
					   program_thread_hook ? program_thread_hook : Py_None) < 0)
			PyErr_Clear();
		if (!hook)
			PyErr_Clear();
		Py_XDECREF(hook);
		restore_attr(threading_module, "setprofile", original_threading_setprofile, &threading_setprofile_def);
		restore_attr(threading_module, "getprofile", original_threading_getprofile, &threading_getprofile_def);
		Py_CLEAR(threading_module);
	}
	Py_CLEAR(program_thread_hook);
}

#endif
