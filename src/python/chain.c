/* chain.c - the program's own profile function, chained behind ulma's on
 * Python 3.9-3.11 (chain.h says why).
 *
 * A chained profiler is a small object holding the (function, argument)
 * pair CPython installed for the program: profile_trampoline and the
 * Python function for sys.setprofile(f), _lsprof's C callback and the
 * Profiler for cProfile.  It sits in the thread state as the argument of
 * ulma's profile function, so the hot path tells "nothing chained" by one
 * test of that argument, and stop() can find every thread's chained
 * profiler by walking the thread states.
 *
 * Taking over after the program set something is generic: whatever the
 * thread state now holds becomes the chain, and ulma's function goes back
 * in front.  The same step runs after a chained function returns if the
 * thread's profile function changed meanwhile: that is how CPython's
 * trampoline, unsetting a Python profile function that raised, leaves ulma
 * installed.
 *
 * The ids of the thread states ulma installed its hook on are kept, so a
 * thread whose hook was removed or replaced behind ulma's back (a C
 * extension calling PyEval_SetProfile, as yappi does) is noticed: at stop,
 * and whenever the program sets a profile function on that thread.
 */
#include "chain.h"

#if PY_VERSION_HEX < 0x030C0000
#include <stdlib.h>

struct chained_profiler {
	PyObject_HEAD
	Py_tracefunc func; /* never NULL */
	PyObject *obj;     /* its argument, owned; may be NULL */
	/* the builtin whose call installed it, if the program had no profiler
	 * before: untraced, that call's return reaches nobody; cleared at the
	 * next event */
	const PyMethodDef *installer;
};

static void chained_dealloc(PyObject *self)
{
	Py_XDECREF(((struct chained_profiler *)self)->obj);
	PyObject_Free(self);
}

static PyTypeObject chained_type = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ulma._ulma.ChainedProfiler",
	.tp_basicsize = sizeof(struct chained_profiler),
	.tp_dealloc = chained_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
};

static void set_failure(uint32_t bit)
{
	if (ulma_rt.session.hdr)
		atomic_fetch_or_explicit(&ulma_rt.session.hdr->failures, bit, memory_order_relaxed);
}

/* A new chained profiler for (func, obj), or NULL with an exception. */
static PyObject *chained_new(Py_tracefunc func, PyObject *obj)
{
	if (!(chained_type.tp_flags & Py_TPFLAGS_READY) && PyType_Ready(&chained_type) < 0)
		return NULL;
	struct chained_profiler *c = PyObject_New(struct chained_profiler, &chained_type);
	if (!c)
		return NULL;
	c->func = func;
	c->obj = obj;
	c->installer = NULL;
	Py_XINCREF(obj);
	return (PyObject *)c;
}

/* The ids (PyThreadState.id, never reused) of the thread states ulma
 * installed its hook on since start.  A thread that exits leaves its id
 * behind; ids no live thread holds are dropped when the array fills. */
static struct {
	uint64_t *ids;
	size_t len, cap;
} traced;

static bool was_traced(const PyThreadState *ts)
{
	for (size_t i = 0; i < traced.len; i++)
		if (traced.ids[i] == ts->id)
			return true;
	return false;
}

static bool is_live(uint64_t id)
{
	for (PyThreadState *ts = PyInterpreterState_ThreadHead(PyInterpreterState_Get()); ts; ts = PyThreadState_Next(ts))
		if (ts->id == id)
			return true;
	return false;
}

static void remember(const PyThreadState *ts)
{
	if (was_traced(ts))
		return;
	if (traced.len == traced.cap) {
		size_t kept = 0;
		for (size_t i = 0; i < traced.len; i++)
			if (is_live(traced.ids[i]))
				traced.ids[kept++] = traced.ids[i];
		traced.len = kept;
	}
	if (traced.len == traced.cap) {
		size_t cap = traced.cap ? 2 * traced.cap : 16;
		uint64_t *ids = realloc(traced.ids, cap * sizeof(*ids));
		if (!ids) { /* only the detection of a replaced hook on this thread is lost */
			set_failure(ULMA_FAIL_NOMEM);
			return;
		}
		traced.ids = ids;
		traced.cap = cap;
	}
	traced.ids[traced.len++] = ts->id;
}

void ulma_chain_forget_threads(void)
{
	traced.len = 0;
}

/* Put ulma's function in front of whatever ts has now, which becomes its
 * chain (`installer` as in ulma_chain_after).  0, or -1 with an exception;
 * ts is left as it was then. */
static int put_in_front(PyThreadState *ts, const PyMethodDef *installer)
{
	Py_tracefunc func = ts->c_profilefunc;
	if (ulma_profile_is_ours(func))
		return 0;
	PyObject *chained = NULL;
	if (func) {
		chained = chained_new(func, ts->c_profileobj);
		if (!chained)
			return -1;
		((struct chained_profiler *)chained)->installer = installer;
	}
	int rc = _PyEval_SetProfile(ts, ulma_profile_event, chained);
	Py_XDECREF(chained);
	if (rc == 0)
		remember(ts);
	return rc;
}

int ulma_chain_install(PyThreadState *ts)
{
	return put_in_front(ts, NULL);
}

struct ulma_chain_state ulma_chain_before(PyThreadState *ts)
{
	struct ulma_chain_state state = {true, ts->c_profileobj != NULL};
	if (ulma_profile_is_ours(ts->c_profilefunc))
		return state;
	state.had_profiler = ts->c_profilefunc != NULL;
	state.traced = was_traced(ts);
	if (state.traced) /* ulma's hook was taken off this thread behind its back */
		set_failure(ULMA_FAIL_HOOK_REPLACED);
	return state;
}

static void take_over(PyThreadState *ts, bool was_ulmas, const PyMethodDef *installer)
{
	if (ulma_profile_is_ours(ts->c_profilefunc))
		return; /* nothing was set, or ulma's hook again */
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	if (put_in_front(ts, installer) < 0) {
		/* out of memory, or an audit hook refused ulma's hook: the
		 * program's profiler keeps the thread to itself */
		PyErr_Clear();
		if (was_ulmas)
			set_failure(ULMA_FAIL_HOOK_REPLACED);
	}
	PyErr_Restore(et, ev, tb);
}

void ulma_chain_after(PyThreadState *ts, struct ulma_chain_state before, const PyMethodDef *installer)
{
	take_over(ts, before.traced, before.had_profiler ? NULL : installer);
}

int ulma_chain_release(PyThreadState *ts)
{
	if (!ulma_profile_is_ours(ts->c_profilefunc)) {
		if (was_traced(ts))
			set_failure(ULMA_FAIL_HOOK_REPLACED);
		return 0;
	}
	struct chained_profiler *c = (struct chained_profiler *)ts->c_profileobj;
	Py_XINCREF(c); /* setting the profile function drops the thread's reference */
	int rc = _PyEval_SetProfile(ts, c ? c->func : NULL, c ? c->obj : NULL);
	Py_XDECREF(c);
	return rc;
}

/* Whether the interpreter abandons the call when the profile function
 * fails on its entry event, without a return event to close it: a C call
 * always (it is not made), a Python frame on 3.9 and 3.10.  On 3.11 the
 * frame unwinds and reports its return like any exception, except a
 * generator resumed by throw(), whose entry then stays open until its
 * caller's exit closes it. */
static bool abandons_call(int what)
{
	return what == PyTrace_C_CALL || (PY_VERSION_HEX < 0x030B0000 && what == PyTrace_CALL);
}

int ulma_chain_forward(PyObject *chained, PyFrameObject *frame, int what, PyObject *arg, uint32_t id)
{
	struct chained_profiler *c = (struct chained_profiler *)chained;
	if (ULMA_UNLIKELY(c->installer != NULL)) {
		const PyMethodDef *installer = c->installer;
		c->installer = NULL;
		if ((what == PyTrace_C_RETURN || what == PyTrace_C_EXCEPTION) && PyCFunction_Check(arg) &&
		    ((PyCFunctionObject *)arg)->m_ml == installer)
			return 0;
	}
	PyThreadState *ts = PyThreadState_Get();
	Py_INCREF(c); /* the function may set another, dropping this chain */
	int rc = c->func(c->obj, frame, what, arg);
	/* CPython's trampoline unsets a Python profile function that raised;
	 * ulma stays, the exception propagates */
	if (ULMA_UNLIKELY(ts->c_profilefunc != ulma_profile_event))
		take_over(ts, true, NULL);
	if (rc != 0 && abandons_call(what))
		ulma_emit(ULMA_REC_EXIT, id); /* no return event will close what ulma entered */
	Py_DECREF(c);
	return rc;
}

PyObject *ulma_chain_program_profiler(PyThreadState *ts)
{
	if (!ulma_profile_is_ours(ts->c_profilefunc))
		return NULL;
	struct chained_profiler *c = (struct chained_profiler *)ts->c_profileobj;
	PyObject *obj = c && c->obj ? c->obj : Py_None;
	Py_INCREF(obj);
	return obj;
}

PyObject *ulma_chain_set_aside(void)
{
	PyThreadState *ts = PyThreadState_Get();
	if (!ulma_profile_is_ours(ts->c_profilefunc))
		return NULL;
	/* the function stays ulma's, so the thread's tracing state is unchanged */
	PyObject *chained = ts->c_profileobj;
	ts->c_profileobj = NULL;
	return chained;
}

void ulma_chain_put_back(PyObject *chained)
{
	if (!chained)
		return;
	PyThreadState *ts = PyThreadState_Get();
	if (ulma_profile_is_ours(ts->c_profilefunc) && !ts->c_profileobj) {
		ts->c_profileobj = chained; /* hands our reference over */
		return;
	}
	struct chained_profiler *c = (struct chained_profiler *)chained;
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	if (_PyEval_SetProfile(ts, c->func, c->obj) < 0)
		PyErr_Clear();
	PyErr_Restore(et, ev, tb);
	Py_DECREF(chained);
}

#endif
