/* objects.c - `--memory` on Python 3.13+: every Python object created and
 * destroyed, by type, into the thread's own ring (docs/memory.md,
 * "Objects").
 *
 * PyRefTracer_SetTracer (3.13) calls a function at each object's creation
 * and destruction, with the object, under the GIL.  Ours calls the tracer
 * that was installed before it, then writes one record, OBJ_NEW or
 * OBJ_FREE, whose id is the ULMA_DEF_TYPE definition of the object's type
 * (its tp_name), with one clock read: no lock, no allocation on ulma's
 * side, no Python call (the tracer may run inside an allocation).  Types
 * are defined once per session, cached by type pointer in a static table;
 * a type object's own destruction drops its entry, so a new type at the
 * same address is defined anew.  Nothing is recorded inside ulma's own
 * slow paths or allocator calls (ulma_memory_depth).
 *
 * Before 3.13 there is no such hook: the allocator hooks see blocks, not
 * types, so objects are not counted (the summary says so).  Builds
 * without the GIL (3.13t) call the tracer on any thread at once: objects
 * are not counted there either.
 */
#include "tracer.h"

#include "ulma/shm.h"

#if PY_VERSION_HEX >= 0x030D0000 && !defined(Py_GIL_DISABLED)

#include <string.h>

#define TYPES 4096 /* a power of two */
#define PROBES 8

struct type_entry {
	PyTypeObject *type;
	uint32_t id;
	uint32_t generation; /* ulma_rt.id_generation the id belongs to */
};

static struct type_entry types[TYPES]; /* under the GIL */
static PyRefTracer previous;
static void *previous_data;
static bool installed;
static volatile bool recording;

static inline uint32_t home(const PyTypeObject *t)
{
	return (uint32_t)(((uintptr_t)t >> 4) * UINT64_C(0x9e3779b97f4a7c15) >> 52) & (TYPES - 1);
}

/* The session's id of type t, defined at its first object; 0 if the
 * definition area is full. */
static uint32_t type_id(PyTypeObject *t)
{
	uint32_t h = home(t), gen = ulma_rt.id_generation;
	struct type_entry *spare = &types[h];
	for (uint32_t k = 0; k < PROBES; k++) {
		struct type_entry *e = &types[(h + k) & (TYPES - 1)];
		if (e->type == t && e->generation == gen)
			return e->id;
		if (!e->type || e->generation != gen)
			spare = e;
	}
	const char *name = t->tp_name ? t->tp_name : "?";
	uint32_t id = ulma_session_define(&ulma_rt.session, ULMA_DEF_TYPE, name, strlen(name), "~", 1, 0);
	if (id)
		*spare = (struct type_entry){t, id, gen};
	return id;
}

/* Type t is being destroyed: its address may hold another type next. */
static void forget_type(const PyTypeObject *t)
{
	uint32_t h = home(t);
	for (uint32_t k = 0; k < PROBES; k++) {
		struct type_entry *e = &types[(h + k) & (TYPES - 1)];
		if (e->type == t)
			e->type = NULL;
	}
}

static int ref_tracer(PyObject *obj, PyRefTracerEvent event, void *data)
{
	(void)data;
	if (previous)
		previous(obj, event, previous_data);
	if (!recording || ulma_memory_depth || !ulma_rt.active)
		return 0;
	PyTypeObject *t = Py_TYPE(obj);
	if (!t)
		return 0;
	if (event == PyRefTracer_DESTROY && PyType_Check(obj))
		forget_type((PyTypeObject *)obj);
	uint32_t id = type_id(t);
	if (!id)
		return 0;
	struct ulma_thread_writer *w = ulma_rt_writer();
	if (!w)
		return 0;
	uint64_t now = ULMA_LIKELY(ulma_rt.use_tsc) ? ulma_clock_rdtsc() : ulma_clock_monotonic_ns();
	ulma_ring_write(&w->ring, now, id, 0, event == PyRefTracer_CREATE ? ULMA_REC_OBJ_NEW : ULMA_REC_OBJ_FREE);
	ulma_rt_done(w);
	return 0;
}

void ulma_objects_start(void)
{
	if (!installed) {
		previous = PyRefTracer_GetTracer(&previous_data);
		if (PyRefTracer_SetTracer(ref_tracer, NULL) < 0) {
			PyErr_Clear();
			return;
		}
		installed = true;
	}
	recording = true;
}

void ulma_objects_stop(void)
{
	recording = false;
	if (!installed)
		return;
	void *data;
	if (PyRefTracer_GetTracer(&data) != ref_tracer)
		return; /* replaced since: ours may still be called by its chain, and passes */
	if (PyRefTracer_SetTracer(previous, previous_data) < 0)
		PyErr_Clear();
	installed = false;
}

#else

void ulma_objects_start(void)
{
}

void ulma_objects_stop(void)
{
}

#endif
