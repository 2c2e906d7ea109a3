/* hook_monitoring.c - the hook on Python 3.12+: sys.monitoring with C callables.
 *
 * Events and what they record (cProfile's mapping, so call counts agree):
 *   PY_START, PY_RESUME, PY_THROW      -> enter the code object
 *   PY_RETURN, PY_YIELD, PY_UNWIND     -> leave it
 *   CALL of a C function or descriptor -> enter the C function
 *   C_RETURN, C_RAISE of the same      -> leave it
 * sys.monitoring fires C_RETURN for every callable that is not a Python
 * function (classes, callable instances), so CALL and C_RETURN apply the
 * same test (ulma_c_method) to stay balanced.  Monitoring is global, so
 * every thread, including those started before tracing, is covered.  We
 * take a free tool id (3 or 4 first, leaving PROFILER_ID to the program)
 * and never evict another tool.
 */
#include "tracer.h"

#if PY_VERSION_HEX >= 0x030C0000
#include <structmember.h>

/* The callbacks are instances of a small heap type whose vectorcall slot
 * points straight at them: sys.monitoring then calls our C function with no
 * PyCFunction wrapper in between (2.8% of a traced fib in perf). */
struct callback {
	PyObject_HEAD
	vectorcallfunc vectorcall;
};

static PyObject *on_py_enter(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	(void)self;
	(void)nargsf;
	(void)kwnames;
	ulma_emit(ULMA_REC_ENTER, ulma_code_id((PyCodeObject *)args[0]));
	Py_RETURN_NONE;
}

static PyObject *on_py_exit(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	(void)self;
	(void)nargsf;
	(void)kwnames;
	ulma_emit(ULMA_REC_EXIT, ulma_code_id((PyCodeObject *)args[0]));
	Py_RETURN_NONE;
}

static inline void c_event(PyObject *callable, uint8_t kind)
{
	PyMethodDef *ml = ulma_c_method(callable);
	if (ml) {
		ulma_emit(kind, ulma_cfunc_id(callable, ml));
		if (kind == ULMA_REC_EXIT)
			ulma_c_returned(ml);
	}
}

static PyObject *on_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	(void)self;
	(void)nargsf;
	(void)kwnames;
	c_event(args[2], ULMA_REC_ENTER);
	Py_RETURN_NONE;
}

static PyObject *on_c_exit(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	(void)self;
	(void)nargsf;
	(void)kwnames;
	c_event(args[2], ULMA_REC_EXIT);
	Py_RETURN_NONE;
}

static const vectorcallfunc callbacks[] = {on_py_enter, on_py_exit, on_call, on_c_exit};

static PyMemberDef callback_members[] = {
	{"__vectorcalloffset__", T_PYSSIZET, offsetof(struct callback, vectorcall), READONLY, NULL},
	{NULL, 0, 0, 0, NULL},
};

static PyType_Slot callback_slots[] = {
	{Py_tp_members, callback_members},
	{Py_tp_call, PyVectorcall_Call},
	{0, NULL},
};

static PyType_Spec callback_spec = {
	.name = "ulma._ulma.Callback",
	.basicsize = sizeof(struct callback),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_IMMUTABLETYPE |
		 Py_TPFLAGS_DISALLOW_INSTANTIATION,
	.slots = callback_slots,
};

static PyObject *new_callback(PyTypeObject *type, vectorcallfunc fn)
{
	struct callback *cb = PyObject_New(struct callback, type);
	if (cb)
		cb->vectorcall = fn;
	return (PyObject *)cb;
}

/* event name -> index into callbacks */
static const struct {
	const char *event;
	int callback;
} wiring[] = {
	{"PY_START", 0}, {"PY_RESUME", 0}, {"PY_THROW", 0}, {"PY_RETURN", 1}, {"PY_YIELD", 1},
	{"PY_UNWIND", 1}, {"CALL", 2},     {"C_RETURN", 3}, {"C_RAISE", 3},
};
#define NWIRING (sizeof(wiring) / sizeof(wiring[0]))

static PyObject *monitoring_module(void)
{
	PyObject *sys = PyImport_ImportModule("sys");
	if (!sys)
		return NULL;
	PyObject *mon = PyObject_GetAttrString(sys, "monitoring");
	Py_DECREF(sys);
	return mon;
}

static int register_all(PyObject *mon, int tool, PyTypeObject *type, bool install)
{
	PyObject *events = PyObject_GetAttrString(mon, "events");
	long mask = 0;
	int rc = -1;
	if (!events)
		return -1;
	bool c_calls = !(ulma_rt.session.hdr->flags & ULMA_SHM_NO_C_CALLS);
	for (size_t i = 0; i < NWIRING; i++) {
		if (install && !c_calls && wiring[i].callback >= 2)
			continue; /* CALL, C_RETURN, C_RAISE */
		PyObject *ev = PyObject_GetAttrString(events, wiring[i].event);
		if (!ev)
			goto out;
		long bit = PyLong_AsLong(ev);
		PyObject *fn = install ? new_callback(type, callbacks[wiring[i].callback]) : Py_None;
		PyObject *r = fn ? PyObject_CallMethod(mon, "register_callback", "iOO", tool, ev, fn) : NULL;
		if (install)
			Py_XDECREF(fn);
		Py_DECREF(ev);
		if (!r)
			goto out;
		Py_DECREF(r);
		mask |= bit;
	}
	PyObject *r = PyObject_CallMethod(mon, "set_events", "il", tool, install ? mask : 0L);
	if (r) {
		Py_DECREF(r);
		rc = 0;
	}
out:
	Py_DECREF(events);
	return rc;
}

int ulma_hook_install(PyObject *module)
{
	static PyTypeObject *type;
	if (!type) {
		type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &callback_spec, NULL);
		if (!type)
			return -1;
	}
	PyObject *mon = monitoring_module();
	if (!mon)
		return -1;
	/* 3 and 4 belong to no one; 2 (PROFILER_ID) and 5 (OPTIMIZER_ID) only
	 * if those are free, so a traced program can still run cProfile itself. */
	static const int candidates[] = {4, 3, 2, 5};
	int tool = -1;
	for (size_t i = 0; i < 4 && tool < 0; i++) {
		PyObject *r = PyObject_CallMethod(mon, "use_tool_id", "is", candidates[i], "ulma");
		if (r) {
			Py_DECREF(r);
			tool = candidates[i];
		} else if (PyErr_ExceptionMatches(PyExc_ValueError)) {
			PyErr_Clear();
		} else {
			Py_DECREF(mon);
			return -1;
		}
	}
	if (tool < 0) {
		Py_DECREF(mon);
		PyErr_SetString(PyExc_RuntimeError, "ulma: every sys.monitoring tool id is in use");
		return -1;
	}
	if (register_all(mon, tool, type, true) < 0) {
		PyObject *et, *ev, *tb;
		PyErr_Fetch(&et, &ev, &tb);
		register_all(mon, tool, type, false);
		PyObject_CallMethod(mon, "free_tool_id", "i", tool);
		PyErr_Clear();
		PyErr_Restore(et, ev, tb);
		Py_DECREF(mon);
		return -1;
	}
	ulma_tracer.tool_id = tool;
	Py_DECREF(mon);
	return 0;
}

int ulma_hook_remove(void)
{
	if (ulma_tracer.tool_id < 0)
		return 0;
	PyObject *mon = monitoring_module();
	if (!mon)
		return -1;
	int rc = register_all(mon, ulma_tracer.tool_id, NULL, false);
	PyObject *r = PyObject_CallMethod(mon, "free_tool_id", "i", ulma_tracer.tool_id);
	Py_XDECREF(r);
	if (!r)
		rc = -1;
	ulma_tracer.tool_id = -1;
	Py_DECREF(mon);
	return rc;
}

#endif
