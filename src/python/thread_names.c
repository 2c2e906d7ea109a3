/* thread_names.c - every Python thread's name, recorded by itself.
 *
 * Reports, timelines and exports name a thread by its last THREAD_NAME
 * mark (the mark means "this thread's name from here").  ulma writes that
 * mark for each Python thread with the name threading gives it, without
 * the program calling ulma.thread_name, at three moments, all slow paths:
 *
 *  - when a thread attaches to the session at its first event (the
 *    runtime's ulma_rt_on_attach), before that event: a thread threading
 *    knows is named by its Thread object; a thread threading is starting
 *    has not registered yet, but its outermost frame is Thread._bootstrap,
 *    whose `self` is the Thread; the main thread of a program that never
 *    imported threading is "MainThread", the name threading would give it;
 *  - when tracing starts in a running program (ulma.profile(), attach),
 *    into each ring start() prepares for a thread already running
 *    (open_frames.c), before its open frames;
 *  - when a thread renames itself (`threading.current_thread().name = x`,
 *    or `self.name = x` in a Thread's run): the hooks' exit path compares
 *    the code id with that of threading's Thread.name setter, one compare
 *    per Python return, and on a match the name is read back.  A rename of
 *    another thread that is already running is not seen (its ring has one
 *    writer, that thread); a rename before start() is.
 *
 * Why not patch threading.Thread: that changes what the program sees, and
 * would import threading into a program that never did.  Nothing here
 * imports it: threading is looked up in sys.modules only.  Names are read
 * from the Thread's `_name` attribute, behind the `name` property, so that
 * no Python code runs inside the hook.  Names are defined as
 * ulma.thread_name's are (zones.c: ulma_mark_id).  GIL held throughout.
 */
#include "tracer.h"

#include <sys/syscall.h>
#include <unistd.h>

#if PY_VERSION_HEX < 0x030B0000
#include <frameobject.h>
#endif

/* sys.modules["threading"], new reference; NULL if not imported. */
static PyObject *threading_module(void)
{
	PyObject *name = PyUnicode_FromString("threading");
	PyObject *mod = name ? PyImport_GetModule(name) : NULL;
	Py_XDECREF(name);
	PyErr_Clear();
	return mod;
}

/* The `_name` of a threading.Thread `thread`, new reference; NULL if it
 * is not a str. */
static PyObject *name_of_thread(PyObject *thread)
{
	PyObject *attr = PyUnicode_FromString("_name");
	PyObject *name = attr ? PyObject_GenericGetAttr(thread, attr) : NULL;
	Py_XDECREF(attr);
	PyErr_Clear();
	if (name && !PyUnicode_Check(name))
		Py_CLEAR(name);
	return name;
}

/* threading._active[ident], new reference; NULL if none. */
static PyObject *known_thread(PyObject *threading, unsigned long ident)
{
	PyObject *active = PyObject_GetAttrString(threading, "_active");
	PyObject *key = active && PyDict_Check(active) ? PyLong_FromUnsignedLong(ident) : NULL;
	PyObject *thread = key ? PyDict_GetItemWithError(active, key) : NULL;
	Py_XINCREF(thread);
	Py_XDECREF(key);
	Py_XDECREF(active);
	PyErr_Clear();
	return thread;
}

/* Local `self` of frame f, new reference; NULL if none. */
static PyObject *frame_self(PyFrameObject *f)
{
	PyObject *self = NULL;
#if PY_VERSION_HEX >= 0x030C0000
	self = PyFrame_GetVarString(f, "self");
#elif PY_VERSION_HEX >= 0x030B0000
	PyObject *locals = PyFrame_GetLocals(f);
	self = locals ? PyMapping_GetItemString(locals, "self") : NULL;
	Py_XDECREF(locals);
#else
	if (PyFrame_FastToLocalsWithError(f) == 0 && f->f_locals)
		self = PyMapping_GetItemString(f->f_locals, "self");
#endif
	PyErr_Clear();
	return self;
}

/* The Thread whose _bootstrap is this thread's outermost frame (a thread
 * threading is starting), new reference; NULL if none. */
static PyObject *starting_thread(PyObject *threading)
{
	PyObject *cls = PyObject_GetAttrString(threading, "Thread");
	PyObject *boot = cls ? PyObject_GetAttrString(cls, "_bootstrap") : NULL;
	PyObject *boot_code = boot ? PyObject_GetAttrString(boot, "__code__") : NULL;
	Py_XDECREF(boot);
	PyObject *thread = NULL;
	PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
	Py_XINCREF(f);
	while (f) {
		PyFrameObject *back = PyFrame_GetBack(f);
		if (!back)
			break;
		Py_DECREF(f);
		f = back;
	}
	if (f && boot_code) {
		PyCodeObject *co = PyFrame_GetCode(f);
		if ((PyObject *)co == boot_code) {
			thread = frame_self(f);
			if (thread && PyObject_IsInstance(thread, cls) != 1)
				Py_CLEAR(thread);
		}
		Py_DECREF(co);
	}
	Py_XDECREF(f);
	Py_XDECREF(boot_code);
	Py_XDECREF(cls);
	PyErr_Clear();
	return thread;
}

/* The Python name of the thread with PyThread ident `ident` (the calling
 * thread if `calling`), new reference; NULL if it has none.  `main`: it is
 * the process's main thread. */
static PyObject *python_name(unsigned long ident, bool calling, bool main)
{
	PyObject *threading = threading_module();
	if (!threading)
		return main ? PyUnicode_FromString("MainThread") : NULL;
	PyObject *thread = known_thread(threading, ident);
	if (!thread && calling)
		thread = starting_thread(threading);
	PyObject *name = thread ? name_of_thread(thread) : NULL;
	Py_XDECREF(thread);
	Py_DECREF(threading);
	PyErr_Clear();
	return name;
}

/* The mark id of the name of thread `ident`; 0 if none.  Never raises. */
static uint32_t name_id(unsigned long ident, bool calling, bool main)
{
	PyObject *et, *ev, *tb;
	ulma_memory_depth++; /* what naming allocates is ulma's */
	PyErr_Fetch(&et, &ev, &tb);
	PyObject *name = python_name(ident, calling, main);
	uint32_t id = name ? ulma_mark_id(name) : 0;
	Py_XDECREF(name);
	PyErr_Restore(et, ev, tb);
	ulma_memory_depth--;
	return id;
}

/* ulma_rt_on_attach: the calling thread's first event is about to be
 * written.  Only a thread holding the GIL runs Python here (a native
 * thread attaches too); an allocation being recorded is left alone. */
static void on_attach(void)
{
	if (!PyGILState_Check() || ulma_memory_depth)
		return;
	bool main = (pid_t)syscall(SYS_gettid) == getpid();
	ulma_rt_mark(ULMA_REC_THREAD_NAME, name_id(PyThread_get_thread_ident(), true, main), 0);
}

uint32_t ulma_thread_names_of(unsigned long ident, uint32_t tid)
{
	return name_id(ident, false, (pid_t)tid == getpid());
}

void ulma_thread_names_start(void)
{
	ulma_rt_on_attach = on_attach;
}

void ulma_thread_names_stop(void)
{
	ulma_rt_on_attach = NULL;
}

bool ulma_thread_names_is_setter(PyCodeObject *co)
{
#if PY_VERSION_HEX >= 0x030B0000
	PyObject *qualname = co->co_qualname;
#else
	PyObject *qualname = co->co_name;
#endif
	if (PyUnicode_CompareWithASCIIString(qualname, PY_VERSION_HEX >= 0x030B0000 ? "Thread.name" : "name") != 0)
		return false;
	PyObject *threading = threading_module();
	PyObject *cls = threading ? PyObject_GetAttrString(threading, "Thread") : NULL;
	PyObject *prop = cls ? PyObject_GetAttrString(cls, "name") : NULL;
	PyObject *setter = prop ? PyObject_GetAttrString(prop, "fset") : NULL;
	PyObject *code = setter ? PyObject_GetAttrString(setter, "__code__") : NULL;
	bool is = code == (PyObject *)co;
	Py_XDECREF(code);
	Py_XDECREF(setter);
	Py_XDECREF(prop);
	Py_XDECREF(cls);
	Py_XDECREF(threading);
	PyErr_Clear();
	return is;
}

void ulma_thread_names_renamed(PyFrameObject *setter)
{
	PyObject *et, *ev, *tb;
	ulma_memory_depth++;
	PyErr_Fetch(&et, &ev, &tb);
	PyObject *thread = frame_self(setter);
	PyObject *ident = thread ? PyObject_GetAttrString(thread, "_ident") : NULL;
	PyErr_Clear();
	if (ident && PyLong_Check(ident) && PyLong_AsUnsignedLong(ident) == PyThread_get_thread_ident()) {
		PyObject *name = name_of_thread(thread);
		if (name)
			ulma_rt_mark(ULMA_REC_THREAD_NAME, ulma_mark_id(name), 0);
		Py_XDECREF(name);
	}
	Py_XDECREF(ident);
	Py_XDECREF(thread);
	PyErr_Clear();
	PyErr_Restore(et, ev, tb);
	ulma_memory_depth--;
}
