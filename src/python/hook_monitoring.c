/* hook_monitoring.c - the hook on Python 3.12+: sys.monitoring with C callables.
 *
 * Events and what they record (cProfile's mapping, so call counts agree):
 *   PY_START, PY_RESUME, PY_THROW      -> enter the code object
 *   PY_RETURN, PY_YIELD, PY_UNWIND     -> leave it
 *   CALL of a C function or descriptor -> enter the C function
 *   C_RETURN, C_RAISE of the same      -> leave it
 *   LINE, set only on the code chosen with --lines (line_select.h)
 *                                      -> the line's hit
 * A resume (PY_RESUME, PY_THROW past the code's start) of chosen code also
 * says which line the frame goes on in, since no LINE fires for it.
 * sys.monitoring fires C_RETURN for every callable that is not a Python
 * function (classes, callable instances), so CALL and C_RETURN apply the
 * same test (ulma_c_method) to stay balanced.  Monitoring is global, so
 * every thread, including those started before tracing, is covered.  We
 * take a free tool id (3 or 4 first, leaving PROFILER_ID to the program)
 * and never evict another tool.
 */
#include "line_select.h"

#if PY_VERSION_HEX >= 0x030C0000
#include <string.h>
#include <structmember.h>

#include "setprofile_return.h"

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

/* A generator resumes, or an exception is thrown into it: past its start,
 * chosen code goes on inside a line already hit (LINE fires at the next
 * line only). */
static PyObject *on_py_resume(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	(void)self;
	(void)nargsf;
	(void)kwnames;
	PyCodeObject *co = (PyCodeObject *)args[0];
	uint32_t id = ulma_code_id(co);
	ulma_emit(ULMA_REC_ENTER, id);
	if (ULMA_UNLIKELY(ulma_lines.on) && ulma_lines_chosen(id)) {
		long offset = PyLong_AsLong(args[1]);
		if (offset > 0)
			ulma_emit(ULMA_REC_LINE_RESUME, (uint32_t)PyCode_Addr2Line(co, (int)offset));
		else if (offset < 0)
			PyErr_Clear();
	}
	Py_RETURN_NONE;
}

static PyObject *on_line(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	(void)self;
	(void)nargsf;
	(void)kwnames;
	long line = PyLong_AsLong(args[1]);
	if (ULMA_LIKELY(line >= 0))
		ulma_emit(ULMA_REC_LINE, (uint32_t)line);
	else
		PyErr_Clear();
	Py_RETURN_NONE;
}

static PyObject *on_py_exit(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	(void)self;
	(void)nargsf;
	(void)kwnames;
	uint32_t id = ulma_code_id((PyCodeObject *)args[0]);
	ulma_emit(ULMA_REC_EXIT, id);
	if (ULMA_UNLIKELY(id == ulma_tracer.rename_id) && id) /* a thread renamed (thread_names.c) */
		ulma_thread_names_renamed(PyEval_GetFrame());
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

enum callback_index { CB_ENTER, CB_RESUME, CB_EXIT, CB_CALL, CB_C_EXIT, CB_LINE };
static const vectorcallfunc callbacks[] = {
	[CB_ENTER] = on_py_enter, [CB_RESUME] = on_py_resume, [CB_EXIT] = on_py_exit,
	[CB_CALL] = on_call,      [CB_C_EXIT] = on_c_exit,     [CB_LINE] = on_line,
};

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

/* event name -> its callback; C calls are left out under --no-c-calls, and
 * LINE is no global event: it is set on each chosen code object alone */
static const struct {
	const char *event;
	enum callback_index callback;
} wiring[] = {
	{"PY_START", CB_ENTER}, {"PY_RESUME", CB_RESUME}, {"PY_THROW", CB_RESUME}, {"PY_RETURN", CB_EXIT},
	{"PY_YIELD", CB_EXIT},  {"PY_UNWIND", CB_EXIT},   {"CALL", CB_CALL},        {"C_RETURN", CB_C_EXIT},
	{"C_RAISE", CB_C_EXIT}, {"LINE", CB_LINE},
};
#define NWIRING (sizeof(wiring) / sizeof(wiring[0]))

/* What watching a chosen code object's lines calls: sys.monitoring's
 * set_local_events, with ulma's tool id and the LINE bit as int objects,
 * set up by ulma_hook_install. */
static struct {
	PyObject *set_local_events;
	PyObject *tool;
	PyObject *line_bit;
	PyObject *no_events;
} local;

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
		bool c_call = wiring[i].callback == CB_CALL || wiring[i].callback == CB_C_EXIT;
		if (install && !c_calls && c_call)
			continue;
		PyObject *ev = PyObject_GetAttrString(events, wiring[i].event);
		if (!ev)
			goto out;
		long bit = PyLong_AsLong(ev);
		PyObject *fn = install ? new_callback(type, callbacks[wiring[i].callback]) : Py_None;
		PyObject *r = fn ? PyObject_CallMethod(mon, "register_callback", "iOO", tool, ev, fn) : NULL;
		if (install)
			Py_XDECREF(fn);
		if (!r) {
			Py_DECREF(ev);
			goto out;
		}
		Py_DECREF(r);
		if (wiring[i].callback == CB_LINE)
			Py_XSETREF(local.line_bit, ev);
		else {
			mask |= bit;
			Py_DECREF(ev);
		}
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
	Py_XSETREF(local.tool, PyLong_FromLong(tool));
	Py_XSETREF(local.set_local_events, PyObject_GetAttrString(mon, "set_local_events"));
	if (!local.no_events)
		local.no_events = PyLong_FromLong(0);
	Py_DECREF(mon);
	if (!local.tool || !local.set_local_events || !local.no_events || !local.line_bit) {
		ulma_hook_remove();
		return -1;
	}
	ulma_setprofile_return_install();
	return 0;
}

int ulma_hook_other_tools_events(long events[6])
{
	memset(events, 0, 6 * sizeof(events[0]));
	PyObject *mon = monitoring_module();
	if (!mon)
		return -1;
	for (int tool = 0; tool < 6; tool++) {
		if (tool == ulma_tracer.tool_id)
			continue;
		PyObject *r = PyObject_CallMethod(mon, "get_events", "i", tool);
		events[tool] = r ? PyLong_AsLong(r) : -1;
		Py_XDECREF(r);
		if (events[tool] == -1 && PyErr_Occurred()) {
			memset(events, 0, 6 * sizeof(events[0]));
			Py_DECREF(mon);
			return -1;
		}
	}
	Py_DECREF(mon);
	return 0;
}

/* set_local_events(tool, co, events).  0, or -1 with an exception. */
static int set_local_events(PyCodeObject *co, PyObject *events)
{
	PyObject *args[] = {local.tool, (PyObject *)co, events};
	/* vectorcall: no argument tuple, whose allocation could start a collection here */
	PyObject *r = PyObject_Vectorcall(local.set_local_events, args, 3, NULL);
	Py_XDECREF(r);
	return r ? 0 : -1;
}

int ulma_hook_lines_watch(PyCodeObject *co)
{
	return set_local_events(co, local.line_bit);
}

void ulma_hook_lines_end(PyObject *chosen)
{
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	for (Py_ssize_t i = 0; i < PyList_GET_SIZE(chosen); i++)
		if (set_local_events((PyCodeObject *)PyList_GET_ITEM(chosen, i), local.no_events) < 0)
			PyErr_Clear();
	PyErr_Restore(et, ev, tb);
}

int ulma_hook_remove(void)
{
	if (ulma_tracer.tool_id < 0)
		return 0;
	ulma_setprofile_return_remove();
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
