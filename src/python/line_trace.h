/* line_trace.h - on Python 3.9-3.11, lines of chosen code through a trace
 * function that is installed only while chosen code runs.
 *
 * A C trace function gets a "line" event for every line of every frame
 * while it is installed, and on 3.10 and 3.11 merely having one makes the
 * interpreter check for lines at every instruction.  So ulma installs its
 * own (PyEval_SetTrace) on a thread only while the thread's innermost
 * frame runs chosen code, and takes it off when that frame calls
 * unchosen code or returns into it.  ulma's profile function already sees
 * each call and return (hook_profile.c); with lines on, it also keeps, per
 * thread, the depth of the innermost frame and the depths of the chosen
 * frames open, and the trace function is switched only where their top
 * changes.  That is all unchosen calls pay: a few instructions, and only
 * while some code is chosen.  The trace function emits ULMA_REC_LINE for
 * each line event and ignores the rest.
 *
 * A thread that runs a trace function of the program's own (sys.settrace:
 * a debugger, coverage) keeps it: ulma does not trace lines there, and
 * says so (ULMA_FAIL_LINES_TRACER).  Frames already open when the thread's
 * tracking began (before start) are below its depth 0; a return into one
 * looks at its code directly.
 */
#ifndef ULMA_LINE_TRACE_H
#define ULMA_LINE_TRACE_H

#include "line_select.h"

#if PY_VERSION_HEX < 0x030C0000
#include <frameobject.h>

/* One thread's view of its frames, for one epoch of ulma_lines. */
struct ulma_line_thread {
	uint32_t epoch;     /* the ulma_lines.epoch it was set up in; older is stale */
	int32_t depth;      /* the innermost frame's: calls less returns since set up */
	int32_t floor;      /* frames at this depth or below were open before: unknown */
	bool tracing;       /* ulma's trace function is on the thread */
	uint32_t top, cap;  /* chosen_at: used, allocated */
	int32_t *chosen_at; /* the depths of the open chosen frames, innermost last */
};

/* The calling thread's, or NULL before its first event with lines on. */
extern __thread struct ulma_line_thread *ulma_line_tls __attribute__((tls_model("initial-exec")));

/* line_trace.c: the slow paths of the two below. */
void ulma_line_call_slow(PyFrameObject *frame, uint32_t id);
void ulma_line_return_slow(PyFrameObject *frame);

/* hook_profile.c, after it recorded the entry of `frame` (code id `id`). */
static inline void ulma_line_call(PyFrameObject *frame, uint32_t id)
{
	struct ulma_line_thread *lt = ulma_line_tls;
	if (ULMA_LIKELY(lt && lt->epoch == ulma_lines.epoch && !lt->tracing) && !ulma_lines_chosen(id)) {
		lt->depth++;
		return;
	}
	ulma_line_call_slow(frame, id);
}

/* hook_profile.c, after it recorded the exit of `frame`. */
static inline void ulma_line_return(PyFrameObject *frame)
{
	struct ulma_line_thread *lt = ulma_line_tls;
	if (ULMA_LIKELY(lt && lt->epoch == ulma_lines.epoch && !lt->tracing)) {
		/* neither the frame that returns nor the one it returns into is
		 * chosen: the innermost chosen one is further out, and known */
		int32_t depth = lt->depth - 1;
		if (ULMA_LIKELY(depth > lt->floor && (!lt->top || lt->chosen_at[lt->top - 1] < depth))) {
			lt->depth = depth;
			return;
		}
	}
	ulma_line_return_slow(frame);
}

#endif
#endif
