/* floor.c - empty interpreter hooks, to measure what each mechanism costs
 * before ulma does any work (bench/hook_floor.py drives it). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *empty_fast(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self; (void)args; (void)nargs;
	Py_RETURN_NONE;
}

/* CALL that only looks at the callable type, as ulma's does */
static PyObject *call_check(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self; (void)nargs;
	PyObject *c = args[2];
	if (!Py_IS_TYPE(c, &PyFunction_Type) && PyCFunction_Check(c))
		Py_INCREF(c), Py_DECREF(c);
	Py_RETURN_NONE;
}

static int empty_profile(PyObject *o, PyFrameObject *f, int what, PyObject *arg)
{
	(void)o; (void)f; (void)what; (void)arg;
	return 0;
}

static PyObject *set_profile(PyObject *self, PyObject *on)
{
	(void)self;
	PyEval_SetProfile(PyObject_IsTrue(on) ? empty_profile : NULL, NULL);
	Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
	{"empty", (PyCFunction)(void (*)(void))empty_fast, METH_FASTCALL, NULL},
	{"call_check", (PyCFunction)(void (*)(void))call_check, METH_FASTCALL, NULL},
	{"set_profile", set_profile, METH_O, NULL},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "ulma_floor", NULL, -1, methods};

PyMODINIT_FUNC PyInit_ulma_floor(void)
{
	return PyModule_Create(&def);
}
