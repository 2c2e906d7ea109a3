/* hook_profile.c - the hook on Python 3.9-3.11: a C profile function.
 *
 * PyEval_SetProfile delivers exactly cProfile's events: "call" for every
 * entry (generator resumes included), "return" for every exit (normal,
 * yield or exception), and c_call / c_return / c_exception around builtins.
 * It is per thread, so start() installs it on every existing thread state,
 * and a thread started later installs it first thing: while ulma traces,
 * _thread.start_new_thread starts each thread in ulma's entry function
 * (profile_intercept.c).  docs/hooks.md explains why this beats a PEP 523
 * frame-evaluation hook here.
 *
 * A profile function the program sets itself does not replace ulma's: it
 * is chained behind it and called after ulma records each event (chain.h).
 * When nothing is chained, that costs one test of the argument.
 *
 * While code is chosen for line-level profiling, each call and return also
 * tells line_trace.h, which puts a trace function on the thread while
 * chosen code runs.
 */
#include "chain.h"
#include "line_trace.h"

#if PY_VERSION_HEX < 0x030C0000

/* The frame's code object, borrowed: a field before 3.11, where the
 * frame struct is public, saving PyFrame_GetCode's call and reference. */
static inline PyCodeObject *frame_code(PyFrameObject *frame)
{
#if PY_VERSION_HEX < 0x030B0000
	return frame->f_code;
#else
	PyCodeObject *co = PyFrame_GetCode(frame);
	Py_DECREF(co); /* the frame, alive through this event, holds it */
	return co;
#endif
}

int ulma_profile_event(PyObject *chained, PyFrameObject *frame, int what, PyObject *arg)
{
	uint32_t id = ULMA_ID_SKIP; /* what ulma recorded the event under; SKIP: nothing */
	switch (what) {
	case PyTrace_CALL:
	case PyTrace_RETURN: {
		id = ulma_code_id(frame_code(frame));
		ulma_emit(what == PyTrace_CALL ? ULMA_REC_ENTER : ULMA_REC_EXIT, id);
		if (ULMA_UNLIKELY(ulma_lines.on)) {
			if (what == PyTrace_CALL)
				ulma_line_call(frame, id);
			else
				ulma_line_return(frame);
		}
		if (ULMA_UNLIKELY(id == ulma_tracer.rename_id) && id && what == PyTrace_RETURN)
			ulma_thread_names_renamed(frame); /* a thread renamed (thread_names.c) */
		break;
	}
	case PyTrace_C_CALL:
	case PyTrace_C_RETURN:
	case PyTrace_C_EXCEPTION:
		if (ulma_tracer.c_calls && PyCFunction_Check(arg)) {
			id = ulma_cfunc_id(arg, ((PyCFunctionObject *)arg)->m_ml);
			ulma_emit(what == PyTrace_C_CALL ? ULMA_REC_ENTER : ULMA_REC_EXIT, id);
			if (what != PyTrace_C_CALL)
				ulma_c_returned(((PyCFunctionObject *)arg)->m_ml);
		}
		break;
	default:
		break;
	}
	if (ULMA_UNLIKELY(chained != NULL))
		return ulma_chain_forward(chained, frame, what, arg, id);
	return 0;
}

int ulma_hook_install(PyObject *module)
{
	(void)module;
	ulma_intercept_install();
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
