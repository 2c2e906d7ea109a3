/* line_trace.c - lines of chosen code on Python 3.9-3.11 (line_trace.h).
 *
 * The trace function is switched from inside ulma's profile function,
 * where CPython recomputes the thread's tracing flag as the profile
 * function returns (call_trace).  On 3.10 and 3.11 the thread's
 * c_tracefunc alone then decides, so a switch is one store: no
 * _PyEval_SetTrace, whose audit event and bookkeeping cost twice what the
 * rest of the switch does, and which an audit hook of the program would
 * see at every switch.  3.9 also keeps a count of the interpreter's
 * tracing threads (tracing_possible, without which it looks for no
 * line), which only _PyEval_SetTrace keeps: there a switch goes through
 * it, audit event included.  When tracing stops, _PyEval_SetTrace takes
 * ulma's function off every thread.
 */
#include "line_trace.h"

#if PY_VERSION_HEX < 0x030C0000
#include <pthread.h>
#include <stdlib.h>

__thread struct ulma_line_thread *ulma_line_tls __attribute__((tls_model("initial-exec")));

static pthread_key_t thread_key; /* frees a thread's state when it exits */
static bool have_thread_key;

static void set_failure(uint32_t bit)
{
	atomic_fetch_or_explicit(&ulma_rt.session.hdr->failures, bit, memory_order_relaxed);
}

static void free_thread(void *p)
{
	struct ulma_line_thread *lt = p;
	free(lt->chosen_at);
	free(lt);
}

/* The trace function: a line event of the innermost frame, which is
 * chosen (ulma's function is on the thread only then). */
static int line_trace(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	(void)obj;
	(void)arg;
	if (what == PyTrace_LINE) {
#if PY_VERSION_HEX >= 0x030B0000
		int line = PyFrame_GetLineNumber(frame); /* the f_lineno call_trace has just set */
#else
		int line = frame->f_lineno; /* set for this event (maybe_call_line_trace, call_trace) */
#endif
		ulma_emit(ULMA_REC_LINE, (uint32_t)line);
	}
	return 0;
}

/* The calling thread's state, set up for this epoch; NULL if out of memory. */
static struct ulma_line_thread *thread_state(void)
{
	struct ulma_line_thread *lt = ulma_line_tls;
	if (ULMA_UNLIKELY(!lt)) {
		if (!have_thread_key) /* the GIL makes this once */
			have_thread_key = pthread_key_create(&thread_key, free_thread) == 0;
		lt = calloc(1, sizeof(*lt));
		if (!lt || !have_thread_key || pthread_setspecific(thread_key, lt) != 0) {
			free(lt);
			set_failure(ULMA_FAIL_NOMEM);
			return NULL;
		}
		ulma_line_tls = lt;
		lt->epoch = ulma_lines.epoch - 1;
	}
	if (lt->epoch != ulma_lines.epoch) {
		lt->epoch = ulma_lines.epoch;
		lt->depth = lt->floor = 0;
		lt->top = 0;
		lt->tracing = PyThreadState_Get()->c_tracefunc == line_trace;
	}
	return lt;
}

/* Install ulma's trace function on the calling thread (want) or take it
 * off, unless the thread has one of the program's. */
static void set_tracing(struct ulma_line_thread *lt, bool want)
{
	if (want == lt->tracing)
		return;
	PyThreadState *ts = PyThreadState_Get();
	Py_tracefunc have = ts->c_tracefunc;
	if (have != line_trace && have != NULL) {
		if (want)
			set_failure(ULMA_FAIL_LINES_TRACER);
		lt->tracing = false;
		return;
	}
	if ((have == line_trace) != want) {
#if PY_VERSION_HEX >= 0x030A0000
		/* the field alone says whether the thread traces: ulma's profile
		 * function keeps the thread's tracing flag set, and CPython
		 * recomputes it as that function returns */
		ts->c_tracefunc = want ? line_trace : NULL;
#else
		PyObject *et, *ev, *tb;
		PyErr_Fetch(&et, &ev, &tb);
		if (_PyEval_SetTrace(ts, want ? line_trace : NULL, NULL) < 0) { /* an audit hook refused */
			PyErr_Clear();
			set_failure(ULMA_FAIL_LINES_TRACER);
		}
		PyErr_Restore(et, ev, tb);
#endif
	}
	lt->tracing = ts->c_tracefunc == line_trace;
}

/* Whether a frame entered by a "call" event resumes (a generator's next
 * step, or a throw into it) rather than starts. */
static bool resumes(PyFrameObject *frame)
{
#if PY_VERSION_HEX >= 0x030B0000
	/* a call stops at the code's first RESUME, a resume at a later one */
	PyCodeObject *co = PyFrame_GetCode(frame);
	bool later = PyFrame_GetLasti(frame) > co->_co_firsttraceable * (int)sizeof(_Py_CODEUNIT);
	Py_DECREF(co);
	return later;
#else
	return frame->f_lasti >= 0;
#endif
}

void ulma_line_call_slow(PyFrameObject *frame, uint32_t id)
{
	struct ulma_line_thread *lt = thread_state();
	if (!lt)
		return;
	lt->depth++;
	bool chosen = ulma_lines_chosen(id);
	if (chosen) {
		if (lt->top == lt->cap) {
			uint32_t cap = lt->cap ? 2 * lt->cap : 16;
			int32_t *grown = realloc(lt->chosen_at, cap * sizeof(*grown));
			if (!grown) {
				set_failure(ULMA_FAIL_NOMEM);
				return;
			}
			lt->chosen_at = grown;
			lt->cap = cap;
		}
		lt->chosen_at[lt->top++] = lt->depth;
		if (resumes(frame))
			ulma_emit(ULMA_REC_LINE_RESUME, (uint32_t)PyFrame_GetLineNumber(frame));
	}
	set_tracing(lt, chosen);
}

/* Whether the frame `frame` returns into runs chosen code: for a frame
 * open before the thread's tracking began. */
static bool caller_chosen(PyFrameObject *frame)
{
#if PY_VERSION_HEX >= 0x030B0000
	PyFrameObject *back = PyFrame_GetBack(frame);
#else
	PyFrameObject *back = frame->f_back;
	Py_XINCREF(back);
#endif
	if (!back)
		return false;
	PyCodeObject *co = PyFrame_GetCode(back);
	bool chosen = ulma_lines_chosen(ulma_code_id(co));
	Py_DECREF(co);
	Py_DECREF(back);
	return chosen;
}

void ulma_line_return_slow(PyFrameObject *frame)
{
	struct ulma_line_thread *lt = thread_state();
	if (!lt)
		return;
	if (lt->top && lt->chosen_at[lt->top - 1] == lt->depth)
		lt->top--;
	lt->depth--;
	bool chosen;
	if (lt->depth <= lt->floor) {
		lt->floor = lt->depth;
		chosen = caller_chosen(frame);
	} else {
		chosen = lt->top && lt->chosen_at[lt->top - 1] == lt->depth;
	}
	set_tracing(lt, chosen);
}

int ulma_hook_lines_watch(PyCodeObject *co)
{
	(void)co; /* its frames are found by their ids */
	return 0;
}

void ulma_hook_lines_end(PyObject *chosen)
{
	(void)chosen;
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	for (PyThreadState *ts = PyInterpreterState_ThreadHead(PyInterpreterState_Get()); ts;
	     ts = PyThreadState_Next(ts))
		if (ts->c_tracefunc == line_trace && _PyEval_SetTrace(ts, NULL, NULL) < 0)
			PyErr_Clear();
	PyErr_Restore(et, ev, tb);
}

#endif
