/* zones.c - ulma.zone, ulma.instant, ulma.counter and ulma.thread_name:
 * the C API of include/ulma/ulma.h for Python code (docs/native.md,
 * "From Python").
 *
 * A zone is a frame in the same stack as the Python and native calls
 * around it: its begin is an ENTER and its end an EXIT of a ULMA_DEF_ZONE
 * definition, written by the runtime's ulma_zone_begin/ulma_zone_end.
 * Each (name, file, line) gets one struct ulma_zone_site for the life of
 * the process, as the C API's static sites do, so a zone created afresh
 * by each pass through `with ulma.zone("load"):` registers its definition
 * once per session.  The file and line are the code that created the zone,
 * read once at creation.
 *
 * Instants, counters and thread names are ULMA_DEF_MARK definitions whose
 * ids are cached here by name, per session.  An instant's keyword
 * arguments become part of its name, as compact JSON.
 *
 * Untraced, each call tests its arguments' types (a bad one raises
 * TypeError, traced or not) and the runtime's `active` byte, and returns.
 * Traced, nothing here raises for valid arguments: a failure to name or
 * cache something is dropped, as the hooks drop theirs.  All of it runs
 * with the GIL held.  The zone type's own methods, and the module's
 * functions, are never recorded as C calls (ulma_is_own_method).
 */
#include "tracer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>
#define Py_T_PYSSIZET T_PYSSIZET
#define Py_READONLY READONLY
#endif

#include "ulma/shm.h"
#include "ulma/ulma.h"

struct zone {
	PyObject_HEAD
	PyObject *name;              /* str */
	struct ulma_zone_site *site; /* shared by every zone of this name, file and line; never freed */
};

/* A function a zone wraps (the decorator's result). */
struct zoned {
	PyObject_HEAD
	struct ulma_zone_site *site;
	PyObject *zone;
	PyObject *func;
	PyObject *dict;     /* functools.update_wrapper's __name__, __doc__, __wrapped__... */
	PyObject *weaklist;
};

static PyTypeObject *zone_type;
static PyTypeObject *zoned_type;
static PyObject *sites;          /* (name, file, line) -> capsule of a struct ulma_zone_site */
static PyObject *marks;          /* mark name -> id, in session `marks_generation` */
static uint32_t marks_generation;

/* A UTF-8 copy of s (invalid code points replaced), malloc'd; NULL with
 * an exception set. */
static char *utf8_dup(PyObject *s)
{
	PyObject *b = PyUnicode_AsEncodedString(s, "utf-8", "replace");
	if (!b)
		return NULL;
	char *copy = strdup(PyBytes_AS_STRING(b));
	Py_DECREF(b);
	if (!copy)
		PyErr_NoMemory();
	return copy;
}

/* The site of zone `name` created at `file`:`line`, made on first use. */
static struct ulma_zone_site *site_of(PyObject *name, PyObject *file, int line)
{
	PyObject *key = Py_BuildValue("(OOi)", name, file, line);
	if (!key)
		return NULL;
	PyObject *cap = PyDict_GetItemWithError(sites, key);
	if (cap) {
		Py_DECREF(key);
		return PyCapsule_GetPointer(cap, NULL);
	}
	struct ulma_zone_site *site = NULL;
	if (PyErr_Occurred())
		goto err_key;
	site = calloc(1, sizeof(*site));
	if (!site) {
		PyErr_NoMemory();
		goto err_key;
	}
	site->line = line > 0 ? (uint32_t)line : 0;
	char *n = utf8_dup(name);
	char *f = n ? utf8_dup(file) : NULL;
	site->name = n;
	site->file = f;
	if (!f)
		goto err_site;
	cap = PyCapsule_New(site, NULL, NULL);
	if (!cap)
		goto err_site;
	int rc = PyDict_SetItem(sites, key, cap);
	Py_DECREF(cap);
	if (rc < 0)
		goto err_site;
	Py_DECREF(key);
	return site;
err_site:
	free((char *)site->name);
	free((char *)site->file);
	free(site);
err_key:
	Py_DECREF(key);
	return NULL;
}

static PyObject *zone_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = {"name", NULL};
	PyObject *name;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:zone", kwlist, &name))
		return NULL;
	if (!PyUnicode_Check(name))
		return PyErr_Format(PyExc_TypeError, "ulma.zone: name must be a str, not %.100s",
				    Py_TYPE(name)->tp_name);
	/* the creating code: the frame that called us (no Python frame is
	 * pushed for a C call) */
	PyObject *file = NULL;
	int line = 0;
	PyFrameObject *frame = PyEval_GetFrame();
	if (frame) {
		PyCodeObject *code = PyFrame_GetCode(frame);
		file = code->co_filename;
		Py_INCREF(file);
		Py_DECREF(code);
		line = PyFrame_GetLineNumber(frame);
	} else {
		file = PyUnicode_FromString("~");
		if (!file)
			return NULL;
	}
	struct ulma_zone_site *site = site_of(name, file, line);
	Py_DECREF(file);
	if (!site)
		return NULL;
	struct zone *z = (struct zone *)type->tp_alloc(type, 0);
	if (!z)
		return NULL;
	Py_INCREF(name);
	z->name = name;
	z->site = site;
	return (PyObject *)z;
}

static void zone_dealloc(struct zone *z)
{
	PyTypeObject *type = Py_TYPE(z);
	Py_XDECREF(z->name);
	type->tp_free((PyObject *)z);
	Py_DECREF(type);
}

static PyObject *zone_repr(struct zone *z)
{
	return PyUnicode_FromFormat("ulma.zone(%R)", z->name);
}

static PyObject *zone_enter(struct zone *z, PyObject *unused)
{
	(void)unused;
	if (ULMA_UNLIKELY(ulma_rt.active))
		ulma_zone_begin(z->site);
	Py_INCREF(z);
	return (PyObject *)z;
}

static PyObject *zone_exit(struct zone *z, PyObject *const *args, Py_ssize_t nargs)
{
	(void)args;
	(void)nargs;
	if (ULMA_UNLIKELY(ulma_rt.active))
		ulma_zone_end(z->site);
	Py_RETURN_FALSE; /* an exception goes on */
}

/* functools.update_wrapper(w, func), without importing functools while
 * the program may be traced: the same attributes, __wrapped__ last. */
static int update_wrapper(PyObject *w, PyObject *func)
{
	static const char *const assigned[] = {"__module__", "__name__", "__qualname__", "__doc__",
					       "__annotations__", "__type_params__"};
	for (size_t i = 0; i < sizeof(assigned) / sizeof(assigned[0]); i++) {
		PyObject *v = PyObject_GetAttrString(func, assigned[i]);
		if (!v) {
			if (!PyErr_ExceptionMatches(PyExc_AttributeError))
				return -1;
			PyErr_Clear();
			continue;
		}
		int rc = PyObject_SetAttrString(w, assigned[i], v);
		Py_DECREF(v);
		if (rc < 0)
			return -1;
	}
	PyObject *dict = PyObject_GetAttrString(func, "__dict__");
	if (dict) {
		PyObject *mine = PyObject_GenericGetDict(w, NULL);
		int rc = mine ? PyDict_Update(mine, dict) : -1;
		Py_XDECREF(mine);
		Py_DECREF(dict);
		if (rc < 0)
			return -1;
	} else if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
		PyErr_Clear();
	} else {
		return -1;
	}
	return PyObject_SetAttrString(w, "__wrapped__", func);
}

/* The decorator: a callable that runs func inside the zone. */
static PyObject *zone_call(struct zone *z, PyObject *args, PyObject *kwargs)
{
	PyObject *func;
	if (kwargs && PyDict_GET_SIZE(kwargs)) {
		PyErr_SetString(PyExc_TypeError, "ulma.zone(...) as a decorator takes the function only");
		return NULL;
	}
	if (!PyArg_ParseTuple(args, "O:zone", &func))
		return NULL;
	if (!PyCallable_Check(func))
		return PyErr_Format(PyExc_TypeError, "ulma.zone(...) decorates a callable, not %.100s",
				    Py_TYPE(func)->tp_name);
	struct zoned *w = PyObject_GC_New(struct zoned, zoned_type);
	if (!w)
		return NULL;
	w->site = z->site;
	Py_INCREF(z);
	w->zone = (PyObject *)z;
	Py_INCREF(func);
	w->func = func;
	w->dict = NULL;
	w->weaklist = NULL;
	PyObject_GC_Track(w);
	if (update_wrapper((PyObject *)w, func) < 0) {
		Py_DECREF(w);
		return NULL;
	}
	return (PyObject *)w;
}

static PyObject *zone_get_name(struct zone *z, void *closure)
{
	(void)closure;
	Py_INCREF(z->name);
	return z->name;
}

/* ulma_is_own_method: __enter__ and __exit__ are never a C call of the profile */
static PyMethodDef zone_methods[] = {
	{"__enter__", (PyCFunction)zone_enter, METH_NOARGS, NULL},
	{"__exit__", (PyCFunction)(void (*)(void))zone_exit, METH_FASTCALL, NULL},
	{NULL, NULL, 0, NULL},
};

static PyGetSetDef zone_getset[] = {
	{"name", (getter)zone_get_name, NULL, "the zone's name", NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(zone_doc,
	     "zone(name)\n--\n\n"
	     "A zone: a named span of time in the same stack as the calls around it.\n\n"
	     "    with ulma.zone(\"load\"):\n"
	     "        load()\n\n"
	     "    @ulma.zone(\"step\")\n"
	     "    def step(): ...\n\n"
	     "As a context manager, the zone is entered and left with the block; as a\n"
	     "decorator, around each call of the function (the wrapper is updated as\n"
	     "functools.wraps does: name, docstring, __wrapped__; methods work too).  The zone is a frame of its own:\n"
	     "what runs inside nests under it, and it nests under the code around it.\n"
	     "Its file and line are where the zone was created.  A zone may be\n"
	     "entered again while open (recursion) and from several threads.\n\n"
	     "Decorating a generator function, coroutine function or async generator\n"
	     "function wraps only the call that creates the generator or coroutine,\n"
	     "not its iteration or awaiting (which ulma records anyway, as resumes of\n"
	     "the function); the object is returned unchanged.  To time a generator's\n"
	     "work, put `with ulma.zone(...)` inside it around code with no yield or\n"
	     "await: a zone left open across one is closed when the frame suspends.\n\n"
	     "Costs one test of a byte per entry and exit when the process is not\n"
	     "traced.  Raises TypeError if name is not a str.");

static PyType_Slot zone_slots[] = {
	{Py_tp_new, zone_new},
	{Py_tp_dealloc, zone_dealloc},
	{Py_tp_repr, zone_repr},
	{Py_tp_call, zone_call},
	{Py_tp_methods, zone_methods},
	{Py_tp_getset, zone_getset},
	{Py_tp_doc, (void *)zone_doc},
	{0, NULL},
};

static PyType_Spec zone_spec = {
	.name = "ulma.zone",
	.basicsize = sizeof(struct zone),
	.flags = Py_TPFLAGS_DEFAULT,
	.slots = zone_slots,
};

static PyObject *zoned_call(struct zoned *w, PyObject *args, PyObject *kwargs)
{
	/* on at the begin decides the end, as ULMA_ZONE_BEGIN's ulma_on_ does */
	bool on = ulma_rt.active;
	if (ULMA_UNLIKELY(on))
		ulma_zone_begin(w->site);
	PyObject *r = PyObject_Call(w->func, args, kwargs);
	if (ULMA_UNLIKELY(on))
		ulma_zone_end(w->site);
	return r;
}

/* Bound like a function when it is a class attribute. */
static PyObject *zoned_get(PyObject *self, PyObject *obj, PyObject *type)
{
	(void)type;
	if (obj == NULL || obj == Py_None) {
		Py_INCREF(self);
		return self;
	}
	return PyMethod_New(self, obj);
}

static int zoned_traverse(struct zoned *w, visitproc visit, void *arg)
{
	Py_VISIT(Py_TYPE(w));
	Py_VISIT(w->zone);
	Py_VISIT(w->func);
	Py_VISIT(w->dict);
	return 0;
}

static int zoned_clear(struct zoned *w)
{
	Py_CLEAR(w->zone);
	Py_CLEAR(w->func);
	Py_CLEAR(w->dict);
	return 0;
}

static void zoned_dealloc(struct zoned *w)
{
	PyTypeObject *type = Py_TYPE(w);
	PyObject_GC_UnTrack(w);
	if (w->weaklist)
		PyObject_ClearWeakRefs((PyObject *)w);
	zoned_clear(w);
	type->tp_free((PyObject *)w);
	Py_DECREF(type);
}

static PyObject *zoned_repr(struct zoned *w)
{
	PyObject *name = ((struct zone *)w->zone)->name;
	return PyUnicode_FromFormat("<ulma.zone(%R) around %R>", name, w->func);
}

static PyMemberDef zoned_members[] = {
	{"__dictoffset__", Py_T_PYSSIZET, offsetof(struct zoned, dict), Py_READONLY, NULL},
	{"__weaklistoffset__", Py_T_PYSSIZET, offsetof(struct zoned, weaklist), Py_READONLY, NULL},
	{NULL, 0, 0, 0, NULL},
};

static PyGetSetDef zoned_getset[] = {
	{"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot zoned_slots[] = {
	{Py_tp_dealloc, zoned_dealloc},
	{Py_tp_traverse, zoned_traverse},
	{Py_tp_clear, zoned_clear},
	{Py_tp_repr, zoned_repr},
	{Py_tp_call, zoned_call},
	{Py_tp_descr_get, zoned_get},
	{Py_tp_members, zoned_members},
	{Py_tp_getset, zoned_getset},
	{Py_tp_doc, (void *)"A function that runs inside a zone (see ulma.zone)."},
	{0, NULL},
};

static PyType_Spec zoned_spec = {
	.name = "ulma.zoned_function",
	.basicsize = sizeof(struct zoned),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.slots = zoned_slots,
};

uint32_t ulma_mark_id(PyObject *name)
{
	if (marks_generation != ulma_rt.id_generation) {
		PyDict_Clear(marks);
		marks_generation = ulma_rt.id_generation;
	}
	PyObject *known = PyDict_GetItemWithError(marks, name);
	if (known)
		return (uint32_t)PyLong_AsUnsignedLong(known);
	PyErr_Clear();
	Py_ssize_t len;
	const char *u = PyUnicode_AsUTF8AndSize(name, &len);
	PyObject *b = NULL;
	if (!u) { /* lone surrogates */
		PyErr_Clear();
		b = PyUnicode_AsEncodedString(name, "utf-8", "replace");
		if (!b) {
			PyErr_Clear();
			return 0;
		}
		u = PyBytes_AS_STRING(b);
		len = PyBytes_GET_SIZE(b);
	}
	uint32_t id = ulma_rt_mark_define(u, (size_t)len);
	Py_XDECREF(b);
	PyObject *v = id ? PyLong_FromUnsignedLong(id) : NULL;
	if (v && PyDict_SetItem(marks, name, v) < 0)
		PyErr_Clear();
	Py_XDECREF(v);
	PyErr_Clear();
	return id;
}

static bool name_ok(const char *what, PyObject *name)
{
	if (ULMA_LIKELY(PyUnicode_Check(name)))
		return true;
	PyErr_Format(PyExc_TypeError, "ulma.%s: name must be a str, not %.100s", what, Py_TYPE(name)->tp_name);
	return false;
}

/* A growing UTF-8 buffer for an instant's name; `failed` once out of memory. */
struct text {
	char *buf;
	size_t len, cap;
	bool failed;
};

static void text_put(struct text *t, const char *p, size_t n)
{
	if (t->failed)
		return;
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 128;
		while (cap < t->len + n + 1)
			cap *= 2;
		char *b = PyMem_Realloc(t->buf, cap);
		if (!b) {
			t->failed = true;
			return;
		}
		t->buf = b;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, p, n);
	t->len += n;
	t->buf[t->len] = '\0';
}

static void text_puts(struct text *t, const char *p)
{
	text_put(t, p, strlen(p));
}

/* A str as a JSON string (non-ASCII kept as UTF-8, invalid code points
 * replaced); never raises. */
static void json_str(struct text *t, PyObject *s)
{
	Py_ssize_t n;
	PyObject *b = NULL;
	const char *u = PyUnicode_AsUTF8AndSize(s, &n);
	if (!u) {
		PyErr_Clear();
		b = PyUnicode_AsEncodedString(s, "utf-8", "replace");
		if (!b) {
			PyErr_Clear();
			u = "?", n = 1;
		} else {
			u = PyBytes_AS_STRING(b), n = PyBytes_GET_SIZE(b);
		}
	}
	text_put(t, "\"", 1);
	Py_ssize_t from = 0;
	for (Py_ssize_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)u[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		char esc[8];
		text_put(t, u + from, (size_t)(i - from));
		if (c == '"' || c == '\\')
			snprintf(esc, sizeof(esc), "\\%c", c);
		else if (c == '\n')
			snprintf(esc, sizeof(esc), "\\n");
		else if (c == '\t')
			snprintf(esc, sizeof(esc), "\\t");
		else
			snprintf(esc, sizeof(esc), "\\u%04x", c);
		text_puts(t, esc);
		from = i + 1;
	}
	text_put(t, u + from, (size_t)(n - from));
	text_put(t, "\"", 1);
	Py_XDECREF(b);
}

/* A value as JSON, as json.dumps(value, ensure_ascii=False, default=str)
 * writes it, nested containers up to a depth; anything else (or deeper)
 * as the JSON string of its str().  Never raises. */
static void json_value(struct text *t, PyObject *v, int depth)
{
	if (v == Py_None) {
		text_puts(t, "null");
	} else if (v == Py_True || v == Py_False) {
		text_puts(t, v == Py_True ? "true" : "false");
	} else if ((PyLong_CheckExact(v) || PyFloat_CheckExact(v)) && !(PyFloat_Check(v) && !isfinite(PyFloat_AS_DOUBLE(v)))) {
		PyObject *r = PyObject_Repr(v);
		const char *u = r ? PyUnicode_AsUTF8(r) : NULL;
		text_puts(t, u ? u : "\"?\""); /* an int too long for str() */
		Py_XDECREF(r);
	} else if (PyFloat_CheckExact(v)) {
		double d = PyFloat_AS_DOUBLE(v);
		text_puts(t, isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity");
	} else if (PyUnicode_Check(v)) {
		json_str(t, v);
	} else if (depth < 8 && (PyList_CheckExact(v) || PyTuple_CheckExact(v))) {
		PyObject *seq = PySequence_Fast(v, "");
		text_put(t, "[", 1);
		for (Py_ssize_t i = 0; seq && i < PySequence_Fast_GET_SIZE(seq); i++) {
			if (i)
				text_put(t, ", ", 2);
			json_value(t, PySequence_Fast_GET_ITEM(seq, i), depth + 1);
		}
		text_put(t, "]", 1);
		Py_XDECREF(seq);
	} else if (depth < 8 && PyDict_CheckExact(v)) {
		PyObject *key, *item;
		Py_ssize_t pos = 0;
		bool first = true;
		text_put(t, "{", 1);
		while (PyDict_Next(v, &pos, &key, &item)) {
			if (!first)
				text_put(t, ", ", 2);
			first = false;
			if (PyUnicode_Check(key)) {
				json_str(t, key);
			} else {
				PyObject *k = PyObject_Str(key);
				if (k) {
					json_str(t, k);
					Py_DECREF(k);
				} else {
					text_puts(t, "\"?\"");
				}
			}
			text_put(t, ": ", 2);
			json_value(t, item, depth + 1);
		}
		text_put(t, "}", 1);
	} else {
		PyObject *s = PyObject_Str(v);
		if (s) {
			json_str(t, s);
			Py_DECREF(s);
		} else {
			text_puts(t, "\"?\"");
		}
	}
	PyErr_Clear();
}

/* name, a space and the keyword arguments as a JSON object, into t. */
static void name_with_args(struct text *t, PyObject *name, PyObject *const *values, PyObject *kwnames)
{
	Py_ssize_t n;
	const char *u = PyUnicode_AsUTF8AndSize(name, &n);
	if (!u) {
		PyErr_Clear();
		u = "?", n = 1;
	}
	text_put(t, u, (size_t)n);
	text_put(t, " {", 2);
	for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
		if (i)
			text_put(t, ", ", 2);
		json_str(t, PyTuple_GET_ITEM(kwnames, i));
		text_put(t, ": ", 2);
		json_value(t, values[i], 1);
	}
	text_put(t, "}", 1);
}

PyObject *ulma_py_instant(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	(void)module;
	if (nargs != 1) {
		PyErr_SetString(PyExc_TypeError, "ulma.instant(name, **args) takes one positional argument");
		return NULL;
	}
	if (!name_ok("instant", args[0]))
		return NULL;
	if (ULMA_LIKELY(!ulma_rt.active))
		Py_RETURN_NONE;
	if (kwnames && PyTuple_GET_SIZE(kwnames)) {
		/* each set of values is a name of its own: not cached */
		struct text t = {0};
		name_with_args(&t, args[0], args + 1, kwnames);
		if (!t.failed && t.buf)
			ulma_rt_mark(ULMA_REC_INSTANT, ulma_rt_mark_define(t.buf, t.len), 0);
		PyMem_Free(t.buf);
		Py_RETURN_NONE;
	}
	ulma_rt_mark(ULMA_REC_INSTANT, ulma_mark_id(args[0]), 0);
	Py_RETURN_NONE;
}

PyObject *ulma_py_counter(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
	(void)module;
	if (nargs != 2) {
		PyErr_SetString(PyExc_TypeError, "ulma.counter(name, value) takes two arguments");
		return NULL;
	}
	if (!name_ok("counter", args[0]))
		return NULL;
	PyObject *v = args[1];
	if (!PyLong_Check(v) && !PyFloat_Check(v)) { /* bool is an int */
		PyErr_Format(PyExc_TypeError, "ulma.counter: value must be an int or a float, not %.100s",
			     Py_TYPE(v)->tp_name);
		return NULL;
	}
	if (ULMA_LIKELY(!ulma_rt.active))
		Py_RETURN_NONE;
	double value = PyFloat_Check(v) ? PyFloat_AS_DOUBLE(v) : PyLong_AsDouble(v);
	if (value == -1.0 && PyErr_Occurred()) { /* an int beyond a double: as big as a double goes */
		PyErr_Clear();
		PyObject *zero = PyLong_FromLong(0);
		int negative = zero ? PyObject_RichCompareBool(v, zero, Py_LT) : 0;
		Py_XDECREF(zero);
		PyErr_Clear();
		value = negative > 0 ? -HUGE_VAL : HUGE_VAL;
	}
	ulma_rt_mark(ULMA_REC_COUNTER, ulma_mark_id(args[0]), value);
	Py_RETURN_NONE;
}

PyObject *ulma_py_thread_name(PyObject *module, PyObject *name)
{
	(void)module;
	if (!name_ok("thread_name", name))
		return NULL;
	if (ULMA_LIKELY(!ulma_rt.active))
		Py_RETURN_NONE;
	ulma_rt_mark(ULMA_REC_THREAD_NAME, ulma_mark_id(name), 0);
	Py_RETURN_NONE;
}

bool ulma_zones_own_method(const PyMethodDef *ml)
{
	return ml >= zone_methods && ml < zone_methods + sizeof(zone_methods) / sizeof(zone_methods[0]);
}

int ulma_zones_init(PyObject *module)
{
	sites = PyDict_New();
	marks = PyDict_New();
	if (!sites || !marks)
		return -1;
	zone_type = (PyTypeObject *)PyType_FromSpec(&zone_spec);
	if (!zone_type)
		return -1;
	zoned_type = (PyTypeObject *)PyType_FromSpec(&zoned_spec);
	if (!zoned_type)
		return -1;
	Py_INCREF(zone_type);
	if (PyModule_AddObject(module, "zone", (PyObject *)zone_type) < 0) {
		Py_DECREF(zone_type);
		return -1;
	}
	Py_INCREF(zoned_type);
	if (PyModule_AddObject(module, "zoned_function", (PyObject *)zoned_type) < 0) {
		Py_DECREF(zoned_type);
		return -1;
	}
	return 0;
}
