/* tracer.h - process-wide state of the in-process hook and its fast path.
 *
 * A traced process holds one tracer: the mapped session, the id caches and
 * the list of per-thread writers.  The hook (hook_monitoring.c on 3.12+,
 * hook_profile.c before) turns each interpreter event into one call of
 * ulma_emit: read the clock, write a 16-byte record into this thread's
 * ring, return.  Everything else (attaching a thread, interning a name) is
 * a slow path taken once per thread or per function.  The hook never
 * raises on its own account (on 3.9-3.11 a profile function the program
 * chained behind it may, as untraced: chain.h); failures become sticky
 * bits in the session header.
 *
 * All functions here run with the GIL held, except the thread-exit and
 * fork handlers, which touch only this process's own memory.
 */
#ifndef ULMA_TRACER_H
#define ULMA_TRACER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>
#include <stdint.h>

#include "../core/clock.h"
#include "../core/idmap.h"
#include "../core/ring.h"
#include "../core/session.h"
#include "../runtime/rt.h"

#define ULMA_ID_SKIP UINT32_MAX /* a function we never record (our own) */

/* The Python side's own state.  The session, the per-thread writers and
 * the `active` switch belong to the runtime every event writer of the
 * process shares (src/runtime/rt.h: ulma_rt). */
struct ulma_tracer {
	bool c_calls; /* record builtins (no --no-c-calls) */
	uint32_t generation;        /* id generation: bumped by start; tags cached ids */
	Py_ssize_t extra_index; /* co_extra slot for code ids, -1 until requested */
	struct ulma_idmap cfuncs; /* PyMethodDef* -> id, for this generation */
	struct ulma_idmap new_ids; /* type -> id of its __new__ (intern.c), for this generation */
	int tool_id; /* sys.monitoring tool, -1 if none */
	uint32_t rename_id; /* code id of threading's Thread.name setter (thread_names.c), 0 until seen */
	PyMethodDef *load_ext; /* _imp.create_dynamic's: after it returns, an extension module is
				* loaded whose hooks may need rebinding (src/runtime/got.c) */
};

extern struct ulma_tracer ulma_tracer;

static inline void ulma_emit(uint8_t kind, uint32_t id)
{
	if (ULMA_UNLIKELY(id == ULMA_ID_SKIP))
		return;
	struct ulma_thread_writer *w = ulma_rt_writer();
	if (ULMA_UNLIKELY(!w))
		return;
	uint32_t cpu;
	uint64_t t = ulma_clock_now(ulma_rt.use_tsc, &cpu);
	ulma_ring_write(&w->ring, t, id, cpu, kind);
	ulma_rt_done(w);
}

/* A C function returned: if it loaded an extension module, point that
 * module's -finstrument-functions hooks at ulma's. */
static inline void ulma_c_returned(PyMethodDef *ml)
{
	if (ULMA_UNLIKELY(ml == ulma_tracer.load_ext))
		ulma_rt_bind_hooks();
}

/* intern.c: ids for code objects (cached in co_extra) and C functions. */
int ulma_intern_init(void);
void ulma_intern_reset(void);
uint32_t ulma_code_id_slow(PyCodeObject *co);
uint32_t ulma_cfunc_id_slow(PyObject *callable, PyMethodDef *ml);
bool ulma_is_own_method(const PyMethodDef *ml);

#if PY_VERSION_HEX >= 0x030C0000
#define ULMA_CODE_GET_EXTRA PyUnstable_Code_GetExtra
#define ULMA_CODE_SET_EXTRA PyUnstable_Code_SetExtra
#define ULMA_REQUEST_EXTRA PyUnstable_Eval_RequestCodeExtraIndex
#else
#define ULMA_CODE_GET_EXTRA _PyCode_GetExtra
#define ULMA_CODE_SET_EXTRA _PyCode_SetExtra
#define ULMA_REQUEST_EXTRA _PyEval_RequestCodeExtraIndex
#endif

#if PY_VERSION_HEX < 0x030C0000
/* What co_extra points to on 3.9-3.11 (CPython's _PyCodeObjectExtra,
 * internal/pycore_code.h, the same since 3.6): read inline by the profile
 * hook, which saves _PyCode_GetExtra's call and type check on every event. */
struct ulma_code_extra {
	Py_ssize_t size;
	void *extras[1];
};

static inline void *ulma_code_extra_get(PyCodeObject *co, Py_ssize_t index)
{
	const struct ulma_code_extra *ce = (const struct ulma_code_extra *)co->co_extra;
	return ce && (size_t)index < (size_t)ce->size ? ce->extras[index] : NULL;
}
#else
static inline void *ulma_code_extra_get(PyCodeObject *co, Py_ssize_t index)
{
	void *extra;
	return ULMA_CODE_GET_EXTRA((PyObject *)co, index, &extra) == 0 ? extra : NULL;
}
#endif

static inline uint32_t ulma_code_id(PyCodeObject *co)
{
	uintptr_t v = (uintptr_t)ulma_code_extra_get(co, ulma_tracer.extra_index);
	if (ULMA_LIKELY((uint32_t)(v >> 32) == ulma_tracer.generation))
		return (uint32_t)v;
	return ulma_code_id_slow(co);
}

/* The PyMethodDef of a C function or method descriptor, else NULL.
 * Mirrors cProfile: only these count as C calls. */
static inline PyMethodDef *ulma_c_method(PyObject *callable)
{
	if (ULMA_LIKELY(Py_IS_TYPE(callable, &PyFunction_Type)))
		return NULL; /* the common case, decided without a subtype walk */
	if (PyCFunction_Check(callable))
		return ((PyCFunctionObject *)callable)->m_ml;
	if (Py_IS_TYPE(callable, &PyMethodDescr_Type))
		return ((PyMethodDescrObject *)callable)->d_method;
	return NULL;
}

static inline uint32_t ulma_cfunc_id(PyObject *callable, PyMethodDef *ml)
{
	uint32_t id;
	if (ULMA_LIKELY(ulma_idmap_get(&ulma_tracer.cfuncs, (uint64_t)(uintptr_t)ml, &id)))
		return id;
	return ulma_cfunc_id_slow(callable, ml);
}

/* cmdline.c: _show_untraced_command(n): /proc/self/cmdline (what ps shows)
 * without `ulma run`'s `-c CODE`, which came right before the last n
 * arguments.  True if done. */
PyObject *ulma_show_untraced_command(PyObject *module, PyObject *after);

/* attach.c: the attachable() method and its atexit and fork handlers. */
PyObject *ulma_attachable(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *ulma_attach_shutdown(PyObject *module, PyObject *unused);
PyObject *ulma_attach_forked(PyObject *module, PyObject *unused);

/* zones.c: ulma.zone (a type), ulma.instant, ulma.counter, ulma.thread_name
 * (docs/native.md, "From Python").  ulma_zones_init adds the types to the
 * module (0, or -1 with an exception); ulma_zones_own_method says whether
 * ml is one of the zone type's methods, never recorded as a C call. */
int ulma_zones_init(PyObject *module);
bool ulma_zones_own_method(const PyMethodDef *ml);
PyObject *ulma_py_instant(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *ulma_py_counter(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *ulma_py_thread_name(PyObject *module, PyObject *name);

/* zones.c: the mark id of name `name` (a str) in this session, as
 * ulma.thread_name defines it; 0 if none.  Never raises. */
uint32_t ulma_mark_id(PyObject *name);

/* thread_names.c: each Python thread's name as a THREAD_NAME mark, by
 * itself (see there).  start/stop: from start() before tracing is active,
 * and from stop().  _of: the mark id of the name of the thread with
 * PyThread ident `ident` and kernel id `tid` (0: none), for a ring
 * prepared for it.  _is_setter: whether co is threading's Thread.name
 * setter (intern.c, once per code object).  _renamed: the setter's frame
 * returns (the hooks, when the code id is rename_id).  GIL held; never
 * raise. */
void ulma_thread_names_start(void);
void ulma_thread_names_stop(void);
uint32_t ulma_thread_names_of(unsigned long ident, uint32_t tid);
bool ulma_thread_names_is_setter(PyCodeObject *co);
void ulma_thread_names_renamed(PyFrameObject *setter);

/* open_frames.c: write an entry, stamped now, for every frame already
 * running in this interpreter's threads (the calling thread's only if
 * `caller_too`), outermost first, into rings prepared for those threads.
 * Called as start()'s last step, once tracing is active and before any
 * thread has recorded an event.  Never fails: a thread without a slot is
 * left out. */
void ulma_open_frames_record(bool caller_too);
/* open_frames.c: called as the module is imported, to learn the main
 * thread's identity where thread states lack a kernel id (3.9, 3.10). */
void ulma_open_frames_note_thread(void);

/* memory.c: with the session's ULMA_SHM_MEMORY, wrap Python's three
 * allocator domains so that every allocation and free is recorded
 * (docs/memory.md); stop puts the previous allocators back, or, if another
 * hook wrapped ours meanwhile, leaves ours passing calls through.  GIL
 * held; never fail. */
void ulma_memory_start(void);
void ulma_memory_stop(void);
/* objects.c: on 3.13+, count objects created and destroyed by type
 * (PyRefTracer_SetTracer), chained to the tracer that was there; called
 * by ulma_memory_start/stop.  GIL held; never fail. */
void ulma_objects_start(void);
void ulma_objects_stop(void);
/* ulma_memory_depth (rt.h, shared with the native allocation hooks) is
 * above 0 while this thread is inside an allocator call already being
 * recorded, or inside ulma's own slow paths (interning a name): such
 * allocations are not recorded. */

/* hooks: install and remove the interpreter hook for all threads.
 * Return 0, or -1 with a Python exception set. */
int ulma_hook_install(PyObject *module);
int ulma_hook_remove(void);

#if PY_VERSION_HEX >= 0x030C0000
/* hook_monitoring.c: the global events of every sys.monitoring tool id
 * (0-5) but ulma's, into events (0 for ulma's and for a free id).  0, or -1
 * with a Python exception set. */
int ulma_hook_other_tools_events(long events[6]);
#endif

#endif
