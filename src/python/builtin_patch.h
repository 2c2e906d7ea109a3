/* builtin_patch.h - a builtin function or method descriptor routed to a
 * function of ulma's, in place.
 *
 * The object keeps its identity, name, doc and calling convention, but its
 * PyMethodDef points at a copy of its own with ulma's function, which
 * calls the original (kept in the patch).  In place, so a reference the
 * program took before (`from sys import setprofile`) goes through ulma too.
 * A builtin whose name or calling convention is not the one expected is
 * left alone.  Used by profile_intercept.c (3.9-3.11) and
 * setprofile_return.c (3.12+).  With the GIL held; nothing here fails.
 */
#ifndef ULMA_BUILTIN_PATCH_H
#define ULMA_BUILTIN_PATCH_H

#include <Python.h>
#include <string.h>

/* One builtin function or method descriptor, routed to ulma's function. */
struct ulma_patch {
	PyObject *target;        /* the object patched, while it is */
	PyMethodDef *original;   /* its own definition: kept for late callers */
	PyMethodDef replacement; /* the original's, with ulma's function */
};

static inline PyMethodDef **ulma_patch_definition_of(PyObject *obj)
{
	if (PyCFunction_Check(obj))
		return &((PyCFunctionObject *)obj)->m_ml;
	if (Py_IS_TYPE(obj, &PyMethodDescr_Type))
		return &((PyMethodDescrObject *)obj)->d_method;
	return NULL;
}

/* Route target (named name, with these ml_flags) to meth; nothing if it is
 * patched already or not what is expected. */
static inline void ulma_patch(struct ulma_patch *p, PyObject *target, const char *name, int flags, PyCFunction meth)
{
	PyMethodDef **def = target ? ulma_patch_definition_of(target) : NULL;
	if (!def || *def == &p->replacement)
		return;
	if (strcmp((*def)->ml_name, name) != 0 || (*def)->ml_flags != flags)
		return;
	p->original = *def;
	p->replacement = (PyMethodDef){p->original->ml_name, meth, p->original->ml_flags, p->original->ml_doc};
	*def = &p->replacement;
	Py_INCREF(target);
	Py_XSETREF(p->target, target);
}

/* Give the target its own definition back. */
static inline void ulma_unpatch(struct ulma_patch *p)
{
	if (!p->target)
		return;
	PyMethodDef **def = ulma_patch_definition_of(p->target);
	if (*def == &p->replacement)
		*def = p->original;
	Py_CLEAR(p->target);
}

#endif
