/* setprofile_return.c - on Python 3.12+, a profile function the program
 * sets does not see the return of the sys.setprofile() call that set it
 * (or of threading.setprofile_all_threads's sys._setprofileallthreads()),
 * as untraced.
 *
 * Untraced, the CALL instruction that calls sys.setprofile(f) is not
 * instrumented, so no event follows the call and f's first event is the
 * next one.  While ulma's sys.monitoring tool watches calls, that CALL is
 * instrumented, and CPython reports the C return of sys.setprofile to
 * every tool that has C returns on when the call returns, the legacy
 * profiler (which the call just switched on) included: f was told of a
 * return whose call it never saw, and the pure-Python `profile` module
 * fails an assertion on it.
 *
 * So both are routed through ulma (builtin_patch.h, in place) while ulma's
 * tool is on.  When the call gives a thread its first profile
 * function, and no other sys.monitoring tool has CALL, C_RETURN or C_RAISE
 * events on (with one, the instruction is instrumented untraced too, and
 * the return is reported), the thread's profile function is, for one
 * event, skip_own_return: it puts CPython's back and passes the event on,
 * unless it is the C return of the call that set it.  The program's
 * sys.getprofile() is unchanged (it reads the profile object, f).  A call
 * from C, which no CALL instruction reports, leaves skip_own_return to pass
 * the thread's next event on.
 */
#include "setprofile_return.h"

#if PY_VERSION_HEX >= 0x030C0000
#include "builtin_patch.h"
#include "tracer.h"

static struct ulma_patch setprofile_patch, all_threads_patch; /* sys.setprofile, sys._setprofileallthreads */
static __thread Py_tracefunc put_back; /* the thread's own profile function, while skip_own_return stands in */
static __thread PyObject *set_by;      /* the patched builtin that set it (borrowed: the patch holds it) */

static int skip_own_return(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	PyThreadState *ts = PyThreadState_Get();
	Py_tracefunc own = put_back;
	put_back = NULL;
	if (!own)
		return 0; /* cannot happen: only the thread that set it runs it */
	if (ts->c_profilefunc == skip_own_return)
		ts->c_profilefunc = own;
	if (what == PyTrace_C_RETURN && arg == set_by)
		return 0;
	return own(obj, frame, what, arg);
}

/* Another sys.monitoring tool than ulma's has call events on. */
static bool others_watch_calls(void)
{
	long events[6];
	bool watch = false;
	if (ulma_hook_other_tools_events(events) == 0) {
		PyObject *mon = PySys_GetObject("monitoring"); /* borrowed */
		PyObject *kinds = mon ? PyObject_GetAttrString(mon, "events") : NULL;
		long mask = 0;
		static const char *const names[] = {"CALL", "C_RETURN", "C_RAISE"};
		for (size_t i = 0; kinds && i < 3; i++) {
			PyObject *bit = PyObject_GetAttrString(kinds, names[i]);
			mask |= bit ? PyLong_AsLong(bit) : 0;
			Py_XDECREF(bit);
		}
		Py_XDECREF(kinds);
		for (int tool = 0; tool < 6; tool++)
			watch |= (events[tool] & mask) != 0;
	}
	PyErr_Clear(); /* in doubt, report the return: what CPython does with ulma's tool on */
	return watch;
}

/* The original's call, then skip_own_return in front where the thread got
 * its first profile function (see the top of this file). */
static PyObject *set_then_skip_own_return(const struct ulma_patch *p, PyObject *self, PyObject *func)
{
	PyThreadState *ts = PyThreadState_Get();
	bool had = ts->c_profilefunc != NULL;
	PyObject *r = p->original->ml_meth(self, func);
	if (!r)
		return NULL;
	if (had || !ts->c_profilefunc || ts->c_profilefunc == skip_own_return || !p->target) {
		put_back = NULL;
		return r;
	}
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	bool others = others_watch_calls();
	PyErr_Restore(et, ev, tb);
	if (!others) {
		put_back = ts->c_profilefunc;
		set_by = p->target;
		ts->c_profilefunc = skip_own_return;
	}
	return r;
}

static PyObject *setprofile(PyObject *self, PyObject *func)
{
	return set_then_skip_own_return(&setprofile_patch, self, func);
}

static PyObject *setprofile_all_threads(PyObject *self, PyObject *func)
{
	return set_then_skip_own_return(&all_threads_patch, self, func);
}

void ulma_setprofile_return_install(void)
{
	ulma_patch(&setprofile_patch, PySys_GetObject("setprofile"), "setprofile", METH_O, setprofile);
	ulma_patch(&all_threads_patch, PySys_GetObject("_setprofileallthreads"), "_setprofileallthreads", METH_O,
		   setprofile_all_threads);
}

void ulma_setprofile_return_remove(void)
{
	ulma_unpatch(&setprofile_patch);
	ulma_unpatch(&all_threads_patch);
}

#endif
