/* hook_profile.c - the hook on Python 3.9-3.11: a C profile function.
 *
 * PyEval_SetProfile delivers exactly cProfile's events: "call" for every
 * entry (generator resumes included), "return" for every exit (normal,
 * yield or exception), and c_call / c_return / c_exception around builtins.
 * It is per thread, so start() installs it on every existing thread state
 * and threading.setprofile() hands it to threads started later: their first
 * event reaches ulma._ulma._thread_start, which records that event and
 * swaps in the C function.  docs/hooks.md explains why this beats a PEP 523
 * frame-evaluation hook here.
 */
#include "tracer.h"

#if PY_VERSION_HEX < 0x030C0000
#include <frameobject.h>

static int profile_func(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	(void)obj;
	switch (what) {
	case PyTrace_CALL:
	case PyTrace_RETURN: {
		PyCodeObject *co = PyFrame_GetCode(frame);
		ulma_emit(what == PyTrace_CALL ? ULMA_REC_ENTER : ULMA_REC_EXIT, ulma_code_id(co));
		Py_DECREF(co);
		break;
	}
	case PyTrace_C_CALL:
	case PyTrace_C_RETURN:
	case PyTrace_C_EXCEPTION:
		if (ulma_tracer.c_calls && PyCFunction_Check(arg)) {
			uint32_t id = ulma_cfunc_id(arg, ((PyCFunctionObject *)arg)->m_ml);
			ulma_emit(what == PyTrace_C_CALL ? ULMA_REC_ENTER : ULMA_REC_EXIT, id);
		}
		break;
	default:
		break;
	}
	return 0;
}

/* threading.setprofile target: the first event of a new thread. */
static PyObject *thread_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self;
	if (nargs == 3 && ulma_tracer.active && PyFrame_Check(args[0])) {
		const char *ev = PyUnicode_Check(args[1]) ? PyUnicode_AsUTF8(args[1]) : NULL;
		if (!ev)
			PyErr_Clear();
		if (ev && strcmp(ev, "call") == 0)
			profile_func(NULL, (PyFrameObject *)args[0], PyTrace_CALL, Py_None);
		PyEval_SetProfile(profile_func, NULL);
	}
	Py_RETURN_NONE;
}

static PyMethodDef thread_start_def = {"_thread_start", (PyCFunction)(void (*)(void))thread_start,
				       METH_FASTCALL, NULL};

static int set_all_threads(Py_tracefunc func)
{
	PyInterpreterState *interp = PyInterpreterState_Get();
	for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts; ts = PyThreadState_Next(ts))
		if (_PyEval_SetProfile(ts, func, NULL) < 0)
			return -1;
	return 0;
}

static int threading_setprofile(PyObject *fn)
{
	PyObject *threading = PyImport_ImportModule("threading");
	if (!threading)
		return -1;
	PyObject *r = PyObject_CallMethod(threading, "setprofile", "O", fn);
	Py_DECREF(threading);
	Py_XDECREF(r);
	return r ? 0 : -1;
}

int ulma_hook_install(PyObject *module)
{
	PyObject *fn = PyCFunction_New(&thread_start_def, module);
	if (!fn)
		return -1;
	int rc = threading_setprofile(fn);
	Py_DECREF(fn);
	if (rc == 0 && set_all_threads(profile_func) < 0) {
		PyObject *et, *ev, *tb;
		PyErr_Fetch(&et, &ev, &tb);
		ulma_hook_remove();
		PyErr_Clear();
		PyErr_Restore(et, ev, tb);
		return -1;
	}
	return rc;
}

int ulma_hook_remove(void)
{
	/* this thread's profile function first: threading.setprofile is Python
	 * code, which it would record */
	int rc = set_all_threads(NULL);
	if (threading_setprofile(Py_None) < 0)
		rc = -1;
	return rc;
}

#endif
