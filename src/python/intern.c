/* intern.c - give code objects and C functions small integer ids.
 *
 * The first time a function is seen in a session, its name, file and first
 * line are written once into the session's definition area and it gets an
 * id.  A code object keeps (generation << 32 | id) in its co_extra slot, so
 * later lookups cost one indexed load; a C function is keyed by its
 * PyMethodDef, as cProfile keys it, except a type's __new__, keyed by the
 * type.  A C function is named for the module, type or class that defines
 * it, with a kind saying which (c_owner).  No PyObject pointer ever leaves
 * this process.  Runs with the GIL held; never lets an exception escape.
 */
#include "line_select.h"

#include <string.h>

#include "ulma/shm.h"

/* The PyMethodDef behind every type's __new__ (typeobject.c's
 * tp_new_methoddef), learnt from object.__new__. */
static const PyMethodDef *type_new_def;

int ulma_intern_init(void)
{
	if (!type_new_def) {
		PyObject *new = PyObject_GetAttrString((PyObject *)&PyBaseObject_Type, "__new__");
		if (!new)
			return -1;
		if (PyCFunction_Check(new))
			type_new_def = ((PyCFunctionObject *)new)->m_ml;
		Py_DECREF(new);
	}
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
	ulma_idmap_free(&ulma_tracer.new_ids);
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
	atomic_fetch_or_explicit(&ulma_rt.session.hdr->failures, ULMA_FAIL_NOMEM, memory_order_relaxed);
}

uint32_t ulma_code_id_slow(PyCodeObject *co)
{
	PyObject *et, *ev, *tb;
	Py_ssize_t nlen, flen;
	ulma_memory_depth++; /* what interning allocates (co_extra, a name's UTF-8) is ulma's */
	PyErr_Fetch(&et, &ev, &tb);
	/* a function not seen before often belongs to a package that just loaded
	 * an extension module: rebind its hooks if anything was loaded (one
	 * dl_iterate_phdr step when nothing was; this also covers --no-c-calls,
	 * where ulma sees no _imp.create_dynamic return) */
	ulma_rt_bind_hooks();
#if PY_VERSION_HEX >= 0x030B0000
	PyObject *qualname = co->co_qualname;
#else
	PyObject *qualname = co->co_name;
#endif
	const char *name = utf8_or(qualname, &nlen, "?");
	const char *file = utf8_or(co->co_filename, &flen, "?");
	uint32_t id = ulma_session_define(&ulma_rt.session, ULMA_DEF_PY, name, (size_t)nlen, file,
					  (size_t)flen, (uint32_t)co->co_firstlineno);
	if (id != 0) {
		uintptr_t v = (uintptr_t)ulma_tracer.generation << 32 | id;
		if (ULMA_CODE_SET_EXTRA((PyObject *)co, ulma_tracer.extra_index, (void *)v) < 0) {
			PyErr_Clear();
			note_nomem();
		}
		if (ULMA_UNLIKELY(ulma_thread_names_is_setter(co)))
			ulma_tracer.rename_id = id;
		if (ULMA_UNLIKELY(ulma_lines.on)) /* once per code object and session, as is all of this */
			ulma_lines_consider(co, id);
	}
	PyErr_Restore(et, ev, tb);
	ulma_memory_depth--;
	return id;
}

/* The type whose dictionary holds `ml` as a method or classmethod
 * descriptor, found as attribute lookup finds `name` from type `start`
 * (cProfile looks it up the same way, from the type of a method's self);
 * past a subclass that shadows the name, the next definition in the MRO is
 * tried.  NULL if none is `ml`. */
static PyTypeObject *defining_type(PyTypeObject *start, PyObject *name, const PyMethodDef *ml)
{
	PyObject *mro = start->tp_mro;
	Py_ssize_t n = mro && PyTuple_Check(mro) ? PyTuple_GET_SIZE(mro) : 0;
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *found = _PyType_Lookup((PyTypeObject *)PyTuple_GET_ITEM(mro, i), name);
		if (found && (Py_IS_TYPE(found, &PyMethodDescr_Type) || Py_IS_TYPE(found, &PyClassMethodDescr_Type)) &&
		    ((PyMethodDescrObject *)found)->d_method == ml)
			return ((PyMethodDescrObject *)found)->d_common.d_type;
	}
	return NULL;
}

/* The owner a C callable is named for, and the kind of definition that
 * makes it (enum ulma_def_kind; docs/design.md, "Names of C functions"):
 *   a method descriptor (3.12+ calls of obj.method) -> its type, METHOD
 *   bound to no object              -> its module, if it names one, UNBOUND
 *   self's type defines it          -> that type, METHOD (list.append, type.mro)
 *   bound to a module (m_module)    -> the module, C (builtins.len, time.sleep)
 *   bound to a class (classmethod, staticmethod, __new__) -> the class
 *     that defines it, CLASSMETHOD (dict.fromkeys also for a dict subclass)
 *   bound to anything else          -> the module or type of self, CLASSMETHOD
 * The order follows cProfile's normalizeUserObj, so that each kind has one
 * pstats label (export_pstats.c).  Returns NULL where there is no owner. */
static const char *c_owner(PyObject *callable, PyMethodDef *ml, uint8_t *kind)
{
	if (!PyCFunction_Check(callable)) {
		*kind = ULMA_DEF_C_METHOD;
		return ((PyMethodDescrObject *)callable)->d_common.d_type->tp_name;
	}
	PyCFunctionObject *fn = (PyCFunctionObject *)callable;
	PyObject *self = fn->m_self; /* not PyCFunction_GET_SELF, which hides a static method's class */
	PyObject *module = fn->m_module;
	Py_ssize_t len;
	if (!self) {
		*kind = ULMA_DEF_C_UNBOUND;
		if (module && PyModule_Check(module))
			return PyModule_GetName(module);
		return module && PyUnicode_Check(module) ? utf8_or(module, &len, "") : NULL;
	}
	PyObject *name = PyUnicode_FromString(ml->ml_name);
	PyTypeObject *owner = name ? defining_type(Py_TYPE(self), name, ml) : NULL;
	if (owner) {
		Py_DECREF(name);
		*kind = ULMA_DEF_C_METHOD;
		return owner->tp_name;
	}
	if (module && PyUnicode_Check(module)) {
		Py_XDECREF(name);
		*kind = ULMA_DEF_C;
		return utf8_or(module, &len, "");
	}
	*kind = ULMA_DEF_C_CLASSMETHOD;
	if (PyType_Check(self)) {
		owner = name && (ml->ml_flags & METH_CLASS) ? defining_type((PyTypeObject *)self, name, ml) : NULL;
		Py_XDECREF(name);
		return (owner ? owner : (PyTypeObject *)self)->tp_name;
	}
	Py_XDECREF(name);
	return PyModule_Check(self) ? PyModule_GetName(self) : Py_TYPE(self)->tp_name;
}

/* Define C callable `callable` (method table entry `ml`): "owner.method",
 * or the bare method name where there is no owner.  Whole, however long
 * (a class's name is the program's to choose): the definition area marks
 * a cut itself. */
static uint32_t define_c(PyObject *callable, PyMethodDef *ml)
{
	char small[256];
	uint8_t kind;
	const char *owner = c_owner(callable, ml, &kind);
	PyErr_Clear(); /* a name we could not read leaves the owner out */
	size_t owner_len = owner ? strlen(owner) : 0, method_len = strlen(ml->ml_name);
	if (owner_len == 0)
		return ulma_session_define(&ulma_rt.session, kind, ml->ml_name, method_len, "~", 1, 0);
	size_t len = owner_len + 1 + method_len;
	char *name = len <= sizeof(small) ? small : PyMem_RawMalloc(len);
	if (!name) { /* the method's own name, rather than none */
		note_nomem();
		return ulma_session_define(&ulma_rt.session, kind, ml->ml_name, method_len, "~", 1, 0);
	}
	memcpy(name, owner, owner_len);
	name[owner_len] = '.';
	memcpy(name + owner_len + 1, ml->ml_name, method_len);
	uint32_t id = ulma_session_define(&ulma_rt.session, kind, name, len, "~", 1, 0);
	if (name != small)
		PyMem_RawFree(name);
	return id;
}

uint32_t ulma_cfunc_id_slow(PyObject *callable, PyMethodDef *ml)
{
	/* Every type's __new__ is one PyMethodDef bound to that type: its ids
	 * are keyed by the type, in a map of their own, and never enter the
	 * PyMethodDef map, so the fast path's lookup misses and comes here. */
	PyObject *self = PyCFunction_Check(callable) ? ((PyCFunctionObject *)callable)->m_self : NULL;
	bool by_type = ml == type_new_def && self && PyType_Check(self);
	struct ulma_idmap *ids = by_type ? &ulma_tracer.new_ids : &ulma_tracer.cfuncs;
	uint64_t key = by_type ? (uint64_t)(uintptr_t)self : (uint64_t)(uintptr_t)ml;
	uint32_t id = ULMA_ID_SKIP;
	if (by_type && ulma_idmap_get(ids, key, &id))
		return id;
	PyObject *et, *ev, *tb;
	ulma_memory_depth++;
	PyErr_Fetch(&et, &ev, &tb);
	if (!ulma_is_own_method(ml))
		id = define_c(callable, ml);
	if (ulma_idmap_put(ids, key, id) < 0)
		note_nomem();
	PyErr_Restore(et, ev, tb);
	ulma_memory_depth--;
	return id;
}
