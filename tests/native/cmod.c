/* cmod.c - a CPython extension built with -finstrument-functions
 * (tests/py/test_native.py): apply(f, n) calls the C helper twice() n
 * times and the Python callable f(i) once per i; leaf(i) is a C method
 * whose implementation calls leaf_impl().  The expected stack:
 * Python caller -> cmod.apply -> cmod_apply -> f -> cmod.leaf -> cmod_leaf -> leaf_impl. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

__attribute__((noinline)) static long twice(long x)
{
	return 2 * x;
}

__attribute__((noinline)) static long leaf_impl(long x)
{
	return x + 1;
}

static PyObject *cmod_apply(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *f;
	long n, acc = 0;
	if (!PyArg_ParseTuple(args, "Ol", &f, &n))
		return NULL;
	for (long i = 0; i < n; i++) {
		acc += twice(i);
		PyObject *r = PyObject_CallFunction(f, "l", i);
		if (!r)
			return NULL;
		acc += PyLong_AsLong(r);
		Py_DECREF(r);
	}
	return PyLong_FromLong(acc);
}

static PyObject *cmod_leaf(PyObject *self, PyObject *arg)
{
	(void)self;
	return PyLong_FromLong(leaf_impl(PyLong_AsLong(arg)));
}

static PyMethodDef methods[] = {
	{"apply", cmod_apply, METH_VARARGS, "apply(f, n)"},
	{"leaf", cmod_leaf, METH_O, "leaf(i)"},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "cmod", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_cmod(void)
{
	return PyModule_Create(&def);
}
