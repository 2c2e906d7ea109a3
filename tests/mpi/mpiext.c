/* mpiext.c - a CPython extension that calls MPI itself, without mpi4py
 * (tests/py/test_mpi.py): start() initialises MPI and returns the rank,
 * exchange(n) sends n messages of 64 bytes with tag 11 from rank 0 to
 * rank 1, stop() finalises.  Its MPI calls must be recorded like a C
 * program's: libulma_mpi.so is preloaded into the interpreter. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <mpi.h>

static PyObject *start(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	int rank = -1;
	MPI_Init(NULL, NULL);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	return PyLong_FromLong(rank);
}

static PyObject *exchange(PyObject *self, PyObject *arg)
{
	(void)self;
	long n = PyLong_AsLong(arg);
	if (n < 0 && PyErr_Occurred())
		return NULL;
	int rank;
	char buf[64] = {0};
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	for (long i = 0; i < n; i++) {
		if (rank == 0)
			MPI_Send(buf, 64, MPI_CHAR, 1, 11, MPI_COMM_WORLD);
		else if (rank == 1)
			MPI_Recv(buf, 64, MPI_CHAR, 0, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	Py_RETURN_NONE;
}

static PyObject *stop(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	MPI_Finalize();
	Py_RETURN_NONE;
}

static PyMethodDef methods[] = {{"start", start, METH_NOARGS, "MPI_Init; the rank"},
				{"exchange", exchange, METH_O, "n messages from rank 0 to rank 1"},
				{"stop", stop, METH_NOARGS, "MPI_Finalize"},
				{NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "mpiext", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_mpiext(void)
{
	return PyModule_Create(&module);
}
