/* memmod.c - a CPython extension that allocates with libc directly
 * (tests/py/test_memory_native.py), built with or without
 * -finstrument-functions.  Known answers:
 *   keep(n, size): grab() mallocs n blocks of `size` bytes and keeps them;
 *   churn(n, size): n blocks of `size` bytes malloc'd and freed at once,
 *     the GIL released;
 *   variety(): one block by each allocator function, of the sizes
 *     VARIETY_SIZES lists (calloc 3 x 1000, a realloc of a 100-byte block to
 *     5000, posix_memalign 4096, aligned_alloc 8192, memalign 2048, valloc
 *     4096, reallocarray 10 x 300, mmap 65536 bytes), all kept;
 *   release(): frees every kept block (munmap for the mapping);
 *   pymem(n, size): n blocks of PyMem_RawMalloc, kept: Python's, not
 *     native (ulma must not count them twice);
 *   threads(t, n, size): t threads, each in worker() mallocs and frees n
 *     blocks of `size` bytes, keeps one more and exits (joined, GIL
 *     released meanwhile).
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE
#include <Python.h>
#include <malloc.h>
#include <stdlib.h>
#include <pthread.h>
#include <sys/mman.h>

#define KEPT_MAX 100000
static void *kept[KEPT_MAX];
static size_t nkept;
static void *mapping;
static size_t mapping_len;

__attribute__((noinline)) static void grab(long n, long size)
{
	for (long i = 0; i < n && nkept < KEPT_MAX; i++)
		kept[nkept++] = malloc((size_t)size);
}

static PyObject *memmod_keep(PyObject *self, PyObject *args)
{
	(void)self;
	long n, size;
	if (!PyArg_ParseTuple(args, "ll", &n, &size))
		return NULL;
	grab(n, size);
	Py_RETURN_NONE;
}

static PyObject *memmod_churn(PyObject *self, PyObject *args)
{
	(void)self;
	long n, size;
	if (!PyArg_ParseTuple(args, "ll", &n, &size))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	for (long i = 0; i < n; i++) {
		char *volatile p = malloc((size_t)size);
		free(p);
	}
	Py_END_ALLOW_THREADS
	Py_RETURN_NONE;
}

static void keep_one(void *p)
{
	if (p && nkept < KEPT_MAX)
		kept[nkept++] = p;
}

static PyObject *memmod_variety(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	keep_one(calloc(3, 1000));
	keep_one(realloc(malloc(100), 5000));
	void *p = NULL;
	if (posix_memalign(&p, 64, 4096) == 0)
		keep_one(p);
	keep_one(aligned_alloc(64, 8192));
	keep_one(memalign(64, 2048));
	keep_one(valloc(4096));
	keep_one(reallocarray(NULL, 10, 300));
	mapping_len = 65536;
	mapping = mmap(NULL, mapping_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mapping == MAP_FAILED)
		mapping = NULL;
	Py_RETURN_NONE;
}

static PyObject *memmod_release(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	while (nkept)
		free(kept[--nkept]);
	if (mapping)
		munmap(mapping, mapping_len);
	mapping = NULL;
	Py_RETURN_NONE;
}

static PyObject *memmod_pymem(PyObject *self, PyObject *args)
{
	(void)self;
	long n, size;
	if (!PyArg_ParseTuple(args, "ll", &n, &size))
		return NULL;
	for (long i = 0; i < n; i++)
		keep_one(PyMem_RawMalloc((size_t)size));
	Py_RETURN_NONE;
}

#define THREADS_MAX 64
static void *volatile per_thread[THREADS_MAX]; /* kept: read by nothing, so volatile */

struct work {
	long n, size, index;
};

__attribute__((noinline)) static void *worker(void *arg)
{
	const struct work *w = arg;
	for (long i = 0; i < w->n; i++) {
		char *volatile p = malloc((size_t)w->size);
		free(p);
	}
	per_thread[w->index] = malloc((size_t)w->size);
	return NULL;
}

static PyObject *memmod_threads(PyObject *self, PyObject *args)
{
	(void)self;
	long t, n, size;
	if (!PyArg_ParseTuple(args, "lll", &t, &n, &size))
		return NULL;
	if (t > THREADS_MAX)
		t = THREADS_MAX;
	pthread_t tid[THREADS_MAX];
	struct work work[THREADS_MAX];
	long started = 0;
	Py_BEGIN_ALLOW_THREADS
	for (long i = 0; i < t; i++) {
		work[i] = (struct work){n, size, i};
		if (pthread_create(&tid[i], NULL, worker, &work[i]) == 0)
			started++;
		else
			break;
	}
	for (long i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	Py_END_ALLOW_THREADS
	return PyLong_FromLong(started);
}

static PyMethodDef methods[] = {
	{"keep", memmod_keep, METH_VARARGS, NULL},
	{"churn", memmod_churn, METH_VARARGS, NULL},
	{"variety", memmod_variety, METH_NOARGS, NULL},
	{"release", memmod_release, METH_NOARGS, NULL},
	{"pymem", memmod_pymem, METH_VARARGS, NULL},
	{"threads", memmod_threads, METH_VARARGS, NULL},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "memmod", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_memmod(void)
{
	return PyModule_Create(&module);
}
