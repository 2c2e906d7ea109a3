/* hook_profile.c - the hook on Python 3.9-3.11: a C profile function.
 *
 * PyEval_SetProfile delivers exactly cProfile's events: "call" for every
 * entry (generator resumes included), "return" for every exit (normal,
 * yield or exception), and c_call / c_return / c_exception around builtins.
 * It is per thread, so start() installs it on every existing thread state
 * and threading's profile hook hands it to threads started later: each new
 * thread calls sys.setprofile(ulma._ulma._thread_start), which ulma
 * intercepts to install the C function directly.  docs/hooks.md explains
 * why this beats a PEP 523 frame-evaluation hook here.
 *
 * A profile function the program sets itself does not replace ulma's: it
 * is chained behind it and called after ulma records each event (chain.h).
 * When nothing is chained, that costs one test of the argument.
 */
#include "chain.h"

#if PY_VERSION_HEX < 0x030C0000

int ulma_profile_event(PyObject *chained, PyFrameObject *frame, int what, PyObject *arg)
{
	uint32_t id = ULMA_ID_SKIP; /* what ulma recorded the event under; SKIP: nothing */
	switch (what) {
	case PyTrace_CALL:
	case PyTrace_RETURN: {
		PyCodeObject *co = PyFrame_GetCode(frame);
		id = ulma_code_id(co);
		Py_DECREF(co);
		ulma_emit(what == PyTrace_CALL ? ULMA_REC_ENTER : ULMA_REC_EXIT, id);
		break;
	}
	case PyTrace_C_CALL:
	case PyTrace_C_RETURN:
	case PyTrace_C_EXCEPTION:
		if (ulma_tracer.c_calls && PyCFunction_Check(arg)) {
			id = ulma_cfunc_id(arg, ((PyCFunctionObject *)arg)->m_ml);
			ulma_emit(what == PyTrace_C_CALL ? ULMA_REC_ENTER : ULMA_REC_EXIT, id);
		}
		break;
	default:
		break;
	}
	if (ULMA_UNLIKELY(chained != NULL))
		return ulma_chain_forward(chained, frame, what, arg, id);
	return 0;
}

static int event_code(const char *event)
{
	static const char *const names[] = {"call", "exception", "line", "return", "c_call", "c_exception", "c_return"};
	static const int codes[] = {PyTrace_CALL,   PyTrace_EXCEPTION,   PyTrace_LINE,    PyTrace_RETURN,
				    PyTrace_C_CALL, PyTrace_C_EXCEPTION, PyTrace_C_RETURN};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(event, names[i]) == 0)
			return codes[i];
	return -1;
}

/* threading's profile hook while ulma traces.  A new thread's
 * sys.setprofile(_thread_start) is intercepted (profile_intercept.c), so
 * this runs only where sys.setprofile could not be: then as a Python
 * profile function, at the thread's first event, which it passes on to the
 * C function it installs.  (An exception the program's own threading hook
 * raises at that first event then unsets ulma's hook with it.) */
static PyObject *thread_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self;
	if (nargs != 3 || !ulma_tracer.active || !PyFrame_Check(args[0]) || !PyUnicode_Check(args[1]))
		Py_RETURN_NONE;
	const char *event = PyUnicode_AsUTF8(args[1]);
	int what = event ? event_code(event) : -1;
	if (what < 0) {
		PyErr_Clear();
		Py_RETURN_NONE;
	}
	PyThreadState *ts = PyThreadState_Get();
	if (_PyEval_SetProfile(ts, NULL, NULL) < 0) /* this stand-in is done */
		return NULL;
	PyObject *r = ulma_intercept_start_thread(ts);
	if (!r)
		return NULL;
	Py_DECREF(r);
	if (ts->c_profilefunc == ulma_profile_event &&
	    ulma_profile_event(ts->c_profileobj, (PyFrameObject *)args[0], what, args[2]) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyMethodDef thread_start_def = {"_thread_start", (PyCFunction)(void (*)(void))thread_start,
				       METH_FASTCALL, NULL};

int ulma_hook_install(PyObject *module)
{
	static PyObject *thread_start_fn;
	if (!thread_start_fn && !(thread_start_fn = PyCFunction_New(&thread_start_def, module)))
		return -1;
	if (ulma_intercept_install(thread_start_fn) < 0)
		return -1;
	ulma_chain_forget_threads();
	PyInterpreterState *interp = PyInterpreterState_Get();
	for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts; ts = PyThreadState_Next(ts)) {
		if (ulma_chain_install(ts) < 0) {
			PyObject *et, *ev, *tb;
			PyErr_Fetch(&et, &ev, &tb);
			ulma_hook_remove();
			PyErr_Clear();
			PyErr_Restore(et, ev, tb);
			return -1;
		}
	}
	return 0;
}

int ulma_hook_remove(void)
{
	PyObject *et = NULL, *ev = NULL, *tb = NULL;
	PyThreadState *me = PyThreadState_Get();
	PyInterpreterState *interp = PyInterpreterState_Get();
	/* this thread first: what it had chained gets its profile function
	 * back before anything else happens here */
	if (ulma_chain_release(me) < 0)
		PyErr_Fetch(&et, &ev, &tb);
	for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts; ts = PyThreadState_Next(ts)) {
		if (ts != me && ulma_chain_release(ts) < 0) {
			if (et)
				PyErr_Clear();
			else
				PyErr_Fetch(&et, &ev, &tb);
		}
	}
	ulma_intercept_remove();
	ulma_chain_forget_threads();
	if (et) {
		PyErr_Restore(et, ev, tb);
		return -1;
	}
	return 0;
}

#endif
