/* module.c - the ulma._ulma extension: start and stop tracing into a session.
 *
 * start(fd) maps the monitor's session and installs the hook on every
 * thread; stop() removes it and closes every thread's writer so the
 * monitor can drain the last records.  The recorded interval runs from
 * start()'s last step (the frames already running are entered then) to
 * stop()'s first (every thread's open frames end then), so the work of
 * starting and stopping is in no function's time (docs/inline.md).
 * Multi-phase init; the tracer state is process-wide because interpreter
 * hooks are, so the module refuses to load into a second interpreter.
 */
#include "tracer.h"
#include "calibrate.h"
#include "line_select.h"
#include "gil.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

struct ulma_tracer ulma_tracer = {.extra_index = -1, .tool_id = -1};

static PyObject *start(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
static PyObject *stop(PyObject *module, PyObject *unused);
static PyObject *is_active(PyObject *module, PyObject *unused);
static PyObject *announce(PyObject *module, PyObject *fd_obj);

static PyMethodDef module_methods[] = {
	{"start", (PyCFunction)(void (*)(void))start, METH_FASTCALL,
	 "start(fd, skip=(), caller_frames=False, lines=())\n--\n\nTrace every thread of this process into the ulma "
	 "session behind fd,\nwhich is closed.  Code objects in skip are never recorded.  The frames other threads are\n"
	 "already in are recorded as entered now; the calling thread's too if caller_frames.  lines holds\n"
	 "(name, code object) pairs whose code is traced line by line, besides the session's --lines\n"
	 "patterns (docs/lines.md)."},
	{"stop", stop, METH_NOARGS, "stop()\n--\n\nStop tracing and hand every thread's last records over."},
	{"is_active", is_active, METH_NOARGS, "is_active()\n--\n\nTrue while this process is traced."},
	{"_lines_mark", ulma_lines_mark, METH_O, NULL}, /* @ulma.lines: line_select.h */
	{"_announce", announce, METH_O, NULL}, /* `ulma run`'s bootstrap is running: see announce() */
	{"_show_untraced_command", ulma_show_untraced_command, METH_O, NULL}, /* cmdline.c */
	/* attach.c: untraced until a monitor attaches (docs/live.md) */
	{"attachable", (PyCFunction)(void (*)(void))ulma_attachable, METH_FASTCALL,
	 "attachable(skip=())\n--\n\nLet `ulma top PID` and `ulma record PID` attach to this process later;\n"
	 "code objects in skip are never recorded.  Returns the path of its control file."},
	{"_attach_shutdown", ulma_attach_shutdown, METH_NOARGS, NULL},
	{"_attach_forked", ulma_attach_forked, METH_NOARGS, NULL},
	/* zones.c: the C API of include/ulma/ulma.h (docs/native.md, "From Python") */
	{"instant", (PyCFunction)(void (*)(void))ulma_py_instant, METH_FASTCALL | METH_KEYWORDS,
	 "instant(name, **args)\n--\n\nMark a point in time on this thread.  With keyword arguments the mark's\n"
	 "name is name, a space and the arguments as JSON (values JSON cannot hold\n"
	 "as their str()): instant(\"checkpoint\", step=3) is 'checkpoint {\"step\": 3}'.\n"
	 "Does nothing when the process is not traced."},
	{"counter", (PyCFunction)(void (*)(void))ulma_py_counter, METH_FASTCALL,
	 "counter(name, value)\n--\n\nRecord the value (an int or a float) of the counter called name now.\n"
	 "Does nothing when the process is not traced."},
	{"thread_name", ulma_py_thread_name, METH_O,
	 "thread_name(name)\n--\n\nName the calling thread in reports and timelines from now on.\n"
	 "Does nothing when the process is not traced."},
	{NULL, NULL, 0, NULL},
};

bool ulma_is_own_method(const PyMethodDef *ml)
{
	return (ml >= module_methods && ml < module_methods + sizeof(module_methods) / sizeof(module_methods[0])) ||
	       ulma_zones_own_method(ml);
}

/* Put the runtime's symbols in the process's global scope.  The runtime
 * came in as this extension's dependency, and so with RTLD_LOCAL as the
 * extension did: an extension module built with -finstrument-functions and
 * imported later would not find __cyg_profile_func_enter in it (without
 * `ulma run`, which preloads the runtime).  Reopening it with RTLD_NOLOAD
 * | RTLD_GLOBAL changes only its scope.  Failing is no error: such a
 * module then needs the runtime among its own dependencies (-lulma_rt). */
static void runtime_global(void)
{
	Dl_info info;
	if (!dladdr((void *)&ulma_rt_map, &info) || !info.dli_fname)
		return;
	void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
	(void)h; /* kept open for the life of the process */
}

/* Mark code objects (our own bootstrap) as never recorded. */
static int mark_skipped(PyObject *skip)
{
	PyObject *seq = PySequence_Fast(skip, "ulma: skip must be a sequence of code objects");
	if (!seq)
		return -1;
	for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
		PyObject *co = PySequence_Fast_GET_ITEM(seq, i);
		uintptr_t v = (uintptr_t)ulma_tracer.generation << 32 | ULMA_ID_SKIP;
		if (!PyCode_Check(co) || ULMA_CODE_SET_EXTRA(co, ulma_tracer.extra_index, (void *)v) < 0) {
			if (!PyErr_Occurred())
				PyErr_SetString(PyExc_TypeError, "ulma: skip must hold code objects");
			Py_DECREF(seq);
			return -1;
		}
	}
	Py_DECREF(seq);
	return 0;
}

static PyObject *start(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
	struct ulma_tracer *t = &ulma_tracer;
	if (nargs < 1 || nargs > 4) {
		PyErr_SetString(PyExc_TypeError,
				"start(fd, skip=(), caller_frames=False, lines=()) takes one to four arguments");
		return NULL;
	}
	long fd = PyLong_AsLong(args[0]);
	if (fd == -1 && PyErr_Occurred())
		return NULL;
	int caller_frames = nargs >= 3 ? PyObject_IsTrue(args[2]) : 0;
	if (caller_frames < 0)
		return NULL;
	if (ulma_rt.active) {
		PyErr_SetString(PyExc_RuntimeError, "ulma: this process is already being traced");
		return NULL;
	}
	if (ulma_intern_init() < 0)
		return NULL;
	if (ulma_rt_threads_init() < 0) {
		PyErr_SetString(PyExc_RuntimeError, "ulma: cannot register thread handlers");
		return NULL;
	}
	int err = ulma_rt_map((int)fd);
	close((int)fd); /* the mapping keeps the session; the program never sees our fd */
	if (err) {
		PyErr_Format(PyExc_OSError, "ulma: cannot map session fd %ld: %s", fd,
			     err == -EPROTO ? "not an ulma session of this version" : strerror(-err));
		return NULL;
	}
	ulma_gil_range(&ulma_rt.session.gil_addr, &ulma_rt.session.gil_len);
	t->c_calls = (ulma_rt.session.hdr->flags & ULMA_SHM_NO_C_CALLS) == 0;
	ulma_intern_reset();
	t->generation++;
	t->rename_id = 0; /* found again when the setter is interned in this generation */
	t->load_ext = NULL;
	PyObject *imp = PyImport_ImportModule("_imp");
	PyObject *create = imp ? PyObject_GetAttrString(imp, "create_dynamic") : NULL;
	if (create && PyCFunction_Check(create))
		t->load_ext = ((PyCFunctionObject *)create)->m_ml; /* static: lives as long as the interpreter */
	Py_XDECREF(create);
	Py_XDECREF(imp);
	PyErr_Clear();
	if (nargs >= 2 && mark_skipped(args[1]) < 0)
		return NULL;
	/* before the hook: every code object given an id from now on is judged */
	if (ulma_lines_prepare(nargs == 4 ? args[3] : NULL) < 0)
		return NULL;
	struct ulma_shm_header *hdr = ulma_rt.session.hdr;
	uint32_t none = 0;
	atomic_compare_exchange_strong(&hdr->program_pid, &none, (uint32_t)getpid());
	atomic_fetch_add(&hdr->started, 1);
	atomic_store(&hdr->tracing, 1);
	/* Until ulma_rt.active, the hook records nothing: a thread's first event
	 * finds no writer and attaching one is refused.  So installing the hook
	 * and measuring its cost (whose own records go to a scratch ring) stay
	 * out of the trace, and out of the time of the frames already running. */
	if (ulma_hook_install(module) < 0) {
		ulma_lines_stop();
		return NULL;
	}
	if (atomic_load(&hdr->overhead_ps) == 0) { /* the session's first process measures the hook */
		uint64_t ps;
		if (ulma_calibrate(module, &ps) < 0) {
			ulma_lines_stop();
			return NULL;
		}
		ulma_calibrate_publish(hdr, ps);
	}
	if (ulma_lines_start() < 0) {
		PyObject *et, *ev, *tb;
		PyErr_Fetch(&et, &ev, &tb);
		if (ulma_hook_remove() < 0)
			PyErr_Clear();
		PyErr_Restore(et, ev, tb);
		return NULL;
	}
	ulma_rt_report_modules();
	ulma_thread_names_start();
	ulma_rt_set_active(true);
	/* last: the frames already running are entered now, so the recorded
	 * interval opens as start() returns to its caller */
	ulma_open_frames_record(caller_frames);
	ulma_memory_start(); /* after the open frames: each allocation has its frame */
	Py_RETURN_NONE;
}

static PyObject *stop(PyObject *module, PyObject *unused)
{
	(void)module;
	(void)unused;
	if (!ulma_rt.active)
		Py_RETURN_NONE;
	ulma_memory_stop();
	/* first: the frames still open end now, and removing the hook (the
	 * interpreter's re-instrumentation on 3.12+) is not charged to them.
	 * Nothing is recorded in between: this thread holds the GIL and runs no
	 * bytecode until the hook is gone. */
	uint32_t cpu;
	uint64_t stopped_at = ulma_clock_now(ulma_rt.use_tsc, &cpu);
	ulma_lines_stop(); /* while the hook's sys.monitoring tool is still ulma's */
	int rc = ulma_hook_remove();
	ulma_rt_report_modules();
	ulma_rt_stop(stopped_at, cpu);
	ulma_thread_names_stop();
	if (rc < 0)
		return NULL;
	/* tracing has stopped: the measure is again in no frame's time */
	ulma_calibrate_again(module, ulma_rt.session.hdr);
	Py_RETURN_NONE;
}

/* `ulma run`'s bootstrap, before it compiles the program: this process is
 * the program (the session's program_pid).  A session that ends with
 * neither this nor a start() was never reached by ulma's bootstrap (the
 * interpreter was no Python, say), and the monitor says so; one with this
 * alone ran a program that ended before tracing started (a syntax error).
 * The fd stays open for start().  Never raises: the monitor explains. */
static PyObject *announce(PyObject *module, PyObject *fd_obj)
{
	(void)module;
	struct ulma_session s;
	long fd = PyLong_AsLong(fd_obj);
	if (fd < 0 || fd > INT_MAX || ulma_session_map_fd((int)fd, &s) != 0) {
		PyErr_Clear();
		Py_RETURN_NONE;
	}
	uint32_t none = 0;
	atomic_compare_exchange_strong(&s.hdr->program_pid, &none, (uint32_t)getpid());
	ulma_session_unmap(&s);
	Py_RETURN_NONE;
}

static PyObject *is_active(PyObject *module, PyObject *unused)
{
	(void)module;
	(void)unused;
	return PyBool_FromLong(ulma_rt.active);
}

static int module_exec(PyObject *module)
{
	static int loaded;
	if (loaded++) {
		PyErr_SetString(PyExc_ImportError, "ulma._ulma can be loaded once per process");
		return -1;
	}
	ulma_open_frames_note_thread();
	runtime_global();
	if (ulma_zones_init(module) < 0)
		return -1;
	return PyModule_AddStringConstant(module, "HOOK",
					  PY_VERSION_HEX >= 0x030C0000 ? "sys.monitoring" : "PyEval_SetProfile");
}

static PyModuleDef_Slot module_slots[] = {
	{Py_mod_exec, (void *)module_exec},
#if PY_VERSION_HEX >= 0x030C0000
	{Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
	{0, NULL},
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "ulma._ulma",
	.m_doc = "The in-process half of ulma: a C hook writing into shared-memory rings.",
	.m_size = 0,
	.m_methods = module_methods,
	.m_slots = module_slots,
};

PyMODINIT_FUNC PyInit__ulma(void)
{
	return PyModuleDef_Init(&module_def);
}
