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

/* hook_profile.c: ulma's two profile functions; the argument is NULL or a
 * chained profiler.  The first records every event.  The second is
 * installed on a thread that joins tracing inside a call (a new thread in
 * threading's bootstrap, or any untraced thread that sets a profile
 * function): its first event is the return from the call that installed
 * it, whose entry nobody recorded, so it records from the next event on. */
int ulma_profile_event(PyObject *chained, PyFrameObject *frame, int what, PyObject *arg);
int ulma_profile_first_event(PyObject *chained, PyFrameObject *frame, int what, PyObject *arg);

static inline bool ulma_profile_is_ours(Py_tracefunc func)
{
	return func == ulma_profile_event || func == ulma_profile_first_event;
}

/* chain.c: pass one event on to the chained profiler, after ulma recorded
 * it under `id` (ULMA_ID_SKIP if it recorded nothing).  Returns what the
 * chained function returned: -1 with its exception set, which the
 * interpreter propagates as it would untraced. */
int ulma_chain_forward(PyObject *chained, PyFrameObject *frame, int what, PyObject *arg, uint32_t id);

/* chain.c: around a call of the program's that may set thread ts's profile
 * function.  ulma_chain_note, before it: whether ulma traces ts (and, if
 * something replaced ulma's hook there, the failure bit).
 * ulma_chain_take_over, after it: whatever ts now has is chained behind
 * ulma's function (the recording one if `traced`, else the first-event
 * one).  Neither raises; a pending exception is left as it was. */
bool ulma_chain_note(PyThreadState *ts);
void ulma_chain_take_over(PyThreadState *ts, bool traced);

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
 * profile function (sys.setprofile, sys.getprofile, threading.setprofile,
 * threading.getprofile, _lsprof.Profiler.enable and disable) through
 * ulma while it traces, and hand new threads ulma's hook: `thread_start`
 * stands in threading's profile hook for the program's, so each new thread
 * calls sys.setprofile(thread_start) first.  0, or -1 with an exception. */
int ulma_intercept_install(PyObject *thread_start);
void ulma_intercept_remove(void);
/* profile_intercept.c: a new thread's sys.setprofile(thread_start):
 * install the profile function the program gave threading.setprofile, if
 * any, as CPython would, then ulma's first-event hook in front of it.
 * Returns None, or NULL with the exception CPython's setprofile raised. */
PyObject *ulma_intercept_start_thread(PyThreadState *ts);

#endif
#endif
