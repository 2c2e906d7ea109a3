/* intern.c - give code objects and C functions small integer ids.
 *
 * The first time a function is seen in a session, its name, file and first
 * line are written once into the session's definition area and it gets an
 * id.  A code object keeps (generation << 32 | id) in its co_extra slot, so
 * later lookups cost one indexed load; a C function is keyed by its
 * PyMethodDef, as cProfile keys it.  No PyObject pointer ever leaves this
 * process.  Runs with the GIL held; never lets an exception escape.
 */
#include "tracer.h"

#include <string.h>

#include "ulma/shm.h"

int ulma_intern_init(void)
{
	if (ulma_tracer.extra_index >= 0)
		return 0;
	/* ids are plain integers: nothing to free when a code object dies */
	ulma_tracer.extra_index = ULMA_REQUEST_EXTRA(NULL);
	if (ulma_tracer.extra_index < 0) {
		PyErr_SetString(PyExc_RuntimeError, "ulma: no free co_extra slot in this interpreter");
		return -1;
	}
	return 0;
}

void ulma_intern_reset(void)
{
	ulma_idmap_free(&ulma_tracer.cfuncs);
}

/* UTF-8 view of a str, or a placeholder; never raises. */
static const char *utf8_or(PyObject *s, Py_ssize_t *len, const char *fallback)
{
	const char *u = NULL;
	if (s && PyUnicode_Check(s))
		u = PyUnicode_AsUTF8AndSize(s, len);
	if (!u) {
		PyErr_Clear();
		*len = (Py_ssize_t)strlen(fallback);
		return fallback;
	}
	return u;
}

static void note_nomem(void)
{
	atomic_fetch_or_explicit(&ulma_tracer.session.hdr->failures, ULMA_FAIL_NOMEM, memory_order_relaxed);
}

uint32_t ulma_code_id_slow(PyCodeObject *co)
{
	PyObject *et, *ev, *tb;
	Py_ssize_t nlen, flen;
	PyErr_Fetch(&et, &ev, &tb);
#if PY_VERSION_HEX >= 0x030B0000
	PyObject *qualname = co->co_qualname;
#else
	PyObject *qualname = co->co_name;
#endif
	const char *name = utf8_or(qualname, &nlen, "?");
	const char *file = utf8_or(co->co_filename, &flen, "?");
	uint32_t id = ulma_session_define(&ulma_tracer.session, ULMA_DEF_PY, name, (size_t)nlen, file,
					  (size_t)flen, (uint32_t)co->co_firstlineno);
	if (id != 0) {
		uintptr_t v = (uintptr_t)ulma_tracer.generation << 32 | id;
		if (ULMA_CODE_SET_EXTRA((PyObject *)co, ulma_tracer.extra_index, (void *)v) < 0) {
			PyErr_Clear();
			note_nomem();
		}
	}
	PyErr_Restore(et, ev, tb);
	return id;
}


/* "module.func" for module functions, "Type.method" for methods. */
static int c_name(PyObject *callable, PyMethodDef *ml, char *buf, size_t cap)
{
	const char *owner = NULL;
	Py_ssize_t olen = 0;
	if (PyCFunction_Check(callable)) {
		PyObject *self = PyCFunction_GET_SELF(callable);
		PyObject *mod = ((PyCFunctionObject *)callable)->m_module;
		if (mod && PyUnicode_Check(mod))
			owner = utf8_or(mod, &olen, "");
		else if (self && PyModule_Check(self))
			owner = PyModule_GetName(self);
		else if (self)
			owner = Py_TYPE(self)->tp_name;
		if (!owner)
			PyErr_Clear();
	} else {
		owner = ((PyMethodDescrObject *)callable)->d_common.d_type->tp_name;
	}
	if (owner && *owner)
		return snprintf(buf, cap, "%s.%s", owner, ml->ml_name);
	return snprintf(buf, cap, "%s", ml->ml_name);
}

uint32_t ulma_cfunc_id_slow(PyObject *callable, PyMethodDef *ml)
{
	PyObject *et, *ev, *tb;
	char name[512];
	uint32_t id = ULMA_ID_SKIP;
	PyErr_Fetch(&et, &ev, &tb);
	if (!ulma_is_own_method(ml)) {
		int n = c_name(callable, ml, name, sizeof(name));
		size_t len = n < 0 ? 0 : (size_t)n >= sizeof(name) ? sizeof(name) - 1 : (size_t)n;
		id = ulma_session_define(&ulma_tracer.session, ULMA_DEF_C, name, len, "~", 1, 0);
	}
	if (ulma_idmap_put(&ulma_tracer.cfuncs, (uint64_t)(uintptr_t)ml, id) < 0)
		note_nomem();
	PyErr_Restore(et, ev, tb);
	return id;
}
