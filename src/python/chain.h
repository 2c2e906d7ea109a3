/* chain.h - on Python 3.9-3.11, the program's own profile function runs
 * behind ulma's instead of replacing it.
 *
 * A profile function is per thread, and a program that sets one (through
 * sys.setprofile, threading.setprofile or cProfile) would silently switch
 * ulma off on that thread.  Instead, a traced thread keeps ulma's C profile
 * function, and what the program set becomes its argument: a "chained
 * profiler", the (function, argument) pair CPython would have installed.
 * ulma's function records each event, then calls the chained one with the
 * same (frame, event, arg).  profile_intercept.c catches the program's
 * calls that set a profile function; chain.c puts ulma back in front of
 * what they set, answers sys.getprofile() with what the program set, and
 * at stop gives every thread its chained profiler back as its own.  A
 * thread whose hook something else replaced (a C extension calling
 * PyEval_SetProfile itself) is noticed and reported as a failure bit.
 * docs/hooks.md, "Coexisting with the program's own profiler".
 *
 * Everything here runs with the GIL held.
 */
#ifndef ULMA_CHAIN_H
#define ULMA_CHAIN_H

#include "tracer.h"

#if PY_VERSION_HEX < 0x030C0000
#include <frameobject.h>

/* hook_profile.c: ulma's profile function; its argument is NULL or a
 * chained profiler. */
int ulma_profile_event(PyObject *chained, PyFrameObject *frame, int what, PyObject *arg);

static inline bool ulma_profile_is_ours(Py_tracefunc func)
{
	return func == ulma_profile_event;
}

/* chain.c: pass one event on to the chained profiler, after ulma recorded
 * it under `id` (ULMA_ID_SKIP if it recorded nothing).  Returns what the
 * chained function returned: -1 with its exception set, which the
 * interpreter propagates as it would untraced. */
int ulma_chain_forward(PyObject *chained, PyFrameObject *frame, int what, PyObject *arg, uint32_t id);

/* chain.c: around a call of the program's that may set thread ts's profile
 * function.  ulma_chain_before, before it: what ts had (and, if something
 * replaced ulma's hook there, the failure bit).  ulma_chain_after, after
 * it: whatever ts now has is chained behind ulma's function.  `installer`
 * is the definition of the builtin called: on a thread where the program
 * had no profiler before, CPython would not have reported that call's
 * return to the new one, so it is not passed on.  Neither raises; a
 * pending exception is left as it was. */
struct ulma_chain_state {
	bool traced;       /* ulma's hook was on the thread, or had been taken off behind its back */
	bool had_profiler; /* the program had a profile function on the thread */
};
struct ulma_chain_state ulma_chain_before(PyThreadState *ts);
void ulma_chain_after(PyThreadState *ts, struct ulma_chain_state before, const PyMethodDef *installer);

/* chain.c: tracing starts on ts, with whatever it has chained behind ulma's
 * function.  0, or -1 with an exception (an audit hook refused). */
int ulma_chain_install(PyThreadState *ts);
/* chain.c: tracing stops on ts: its chained profiler is its own again (or
 * none).  Sets the failure bit if ulma's hook was replaced there.  0, or -1
 * with an exception. */
int ulma_chain_release(PyThreadState *ts);
/* chain.c: forget which threads ulma installed its hook on (start, stop). */
void ulma_chain_forget_threads(void);

/* chain.c: what sys.getprofile() would return untraced on ts (a new
 * reference), or NULL, without an exception, if ulma's hook is not there. */
PyObject *ulma_chain_program_profiler(PyThreadState *ts);

/* chain.c: the calling thread's chained profiler sits out start-up
 * calibration (calibrate.c), which it would otherwise see: set aside
 * returns it (or NULL), put back reinstates it behind ulma's function, or
 * as the thread's own if ulma's is not installed. */
PyObject *ulma_chain_set_aside(void);
void ulma_chain_put_back(PyObject *chained);

/* profile_intercept.c: route the program's calls that set or read a
 * profile function (sys.setprofile, sys.getprofile, _lsprof.Profiler.enable
 * and disable) through ulma while it traces, and start every new thread
 * under ulma's hook (_thread.start_new_thread).  Never fails: a builtin
 * that is not as expected is left alone. */
void ulma_intercept_install(void);
void ulma_intercept_remove(void);

#endif
#endif
