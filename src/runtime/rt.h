/* rt.h - the in-process runtime every traced process shares: the mapped
 * session, one ring writer per thread, and the switch that says whether
 * this process is tracing.
 *
 * It lives in one shared library, libulma_rt.so, so that everything that
 * writes events in a process writes them through the same per-thread
 * writer: the CPython extension (src/python/, which links the library),
 * the -finstrument-functions hooks (native.c), and the C API of
 * include/ulma/ulma.h (api.c).  A thread's ring has one producer, the
 * thread itself, whoever in it records the event.
 *
 * Who starts tracing: in a Python process, the extension's start() (which
 * maps the session through ulma_rt_map and sets `active`); in a process
 * without Python that `ulma run` or a traced program started, the
 * library's constructor (rt.c).  Either way ulma_rt_stop ends it.
 *
 * Stopping while other threads may be writing (native threads hold no
 * GIL): each writer carries a `busy` byte its owner sets around a write;
 * the stopping thread marks every writer closed, makes each thread pass a
 * full barrier (membarrier), and waits for `busy` to drop before it writes
 * a STOP record into that thread's ring (docs/native.md, "Stopping").
 * `busy` also keeps a signal handler that records an event from writing
 * into a ring its own thread is in the middle of writing.
 *
 * The slow paths take a mutex (writers_lock) and may allocate; they never
 * call back into Python.  Errors become the session's sticky failure bits.
 */
#ifndef ULMA_RT_H
#define ULMA_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>

#include "../core/clock.h"
#include "../core/ring.h"
#include "../core/session.h"

#define ULMA_RT_API __attribute__((visibility("default")))

struct ulma_thread_writer {
	struct ulma_ring_writer ring;
	uint32_t generation; /* writer generation this writer belongs to */
	uint32_t tid;        /* the thread it writes for */
	volatile uint8_t busy;   /* the owner is writing a record (see above) */
	volatile uint8_t closed; /* tracing stopped or the thread exited: write nothing more */
	bool has_slot;
	bool finished; /* its slot is handed back (close_writer) */
	bool adopted; /* false while prepared by start() for a thread that has not written yet */
	struct ulma_thread_writer *next; /* in ulma_rt.writers */
};

struct ulma_rt {
	volatile bool active;       /* events are recorded; read by every hook */
	bool use_tsc;
	uint32_t writer_generation; /* bumped by each map and by fork: a writer of an
				     * older one belongs to another session or process */
	uint32_t id_generation;     /* bumped by each map: ids cached by zone sites
				     * (api.c) are valid in this one only */
	struct ulma_session session;
	struct ulma_thread_writer *writers;
};

ULMA_RT_API extern struct ulma_rt ulma_rt;

/* Inside the library the same object is reached under a hidden alias, one
 * PC-relative load instead of a load through the GOT (src/runtime/ only). */
#ifdef ULMA_RT_INTERNAL
extern struct ulma_rt ulma_rt_self __attribute__((visibility("hidden")));
#define ULMA_RT ulma_rt_self
#else
#define ULMA_RT ulma_rt
#endif

/* What the -finstrument-functions hooks check first (native.c): one byte,
 * hidden, kept by ulma_rt_set_active, ulma_rt_stop and the arming (rt.c).
 * Only ULMA_HOOKS_ON takes the hooks' fast path; the other states that
 * record go through its slow path, so the fast path tests neither the
 * clock nor the arming. */
enum ulma_hooks_state {
	ULMA_HOOKS_OFF = 0,
	ULMA_HOOKS_ON = 1,    /* tracing, with the TSC */
	ULMA_HOOKS_SLOW = 2,  /* tracing, with no TSC: every event takes the slow path */
	ULMA_HOOKS_ARMED = 3, /* a session waits in the environment: the first native event or
			       * C API call starts tracing (ulma_rt_start_armed, rt.c) */
};
#ifdef ULMA_RT_INTERNAL
extern volatile uint8_t ulma_rt_hooks_state __attribute__((visibility("hidden")));
#endif
ULMA_RT_API extern __thread struct ulma_thread_writer *ulma_tls_writer __attribute__((tls_model("initial-exec")));

/* Map the session behind fd (not taken over) as this process's, dropping
 * the previous one, and bump the writer generation.  Does not start
 * tracing.  Only while this process is not tracing (never started, or
 * stopped by ulma_rt_stop).  Returns 0, -EPROTO for a foreign session, or -errno. */
ULMA_RT_API int ulma_rt_map(int fd);

/* An armed process (no Python) starts tracing now, at its first native
 * event or C API call.  Returns true if tracing is on. */
ULMA_RT_API bool ulma_rt_start_armed(void);

/* Turn recording on or off (the hooks' `active`, and `ulma_enabled` of
 * include/ulma/ulma.h). */
ULMA_RT_API void ulma_rt_set_active(bool on);

/* Stop tracing in this process: no more events (the hooks and the C API
 * go back to their one load and branch), and each thread's frames
 * still open end at `stopped_at` (taken on CPU `cpu`).  Safe against
 * threads writing meanwhile.  Tracing may start again with a new map. */
ULMA_RT_API void ulma_rt_stop(uint64_t stopped_at, uint32_t cpu);

/* Register the thread-exit and fork handlers (once).  Returns 0 or -1. */
ULMA_RT_API int ulma_rt_threads_init(void);

/* Attach the calling thread to the session (slow path).  Returns NULL when
 * tracing is off; a thread without a free slot gets a writer that counts
 * its events as lost. */
ULMA_RT_API struct ulma_thread_writer *ulma_rt_thread_attach(void);

/* Called, when set, by a thread that has just attached to the session with
 * a writer of its own (not one start() prepared for it), before the event
 * that attached it is written: it may record marks.  The CPython extension
 * sets it to record the thread's Python name (src/python/thread_names.c).
 * Set while no thread traces. */
ULMA_RT_API extern void (*ulma_rt_on_attach)(void);

/* A writer with a slot claimed for thread `tid` of this process, for the
 * caller to fill before that thread adopts it at its first event.  NULL
 * when no slot or memory is left (the failure bits say which). */
ULMA_RT_API struct ulma_thread_writer *ulma_rt_thread_prepare(uint32_t tid);

/* Rebind every newly loaded object's imports of the -finstrument-functions
 * hooks to this library's (got.c).  Cheap when nothing was loaded since
 * the last call. */
ULMA_RT_API void ulma_rt_bind_hooks(void);

/* --memory's native allocations (alloc.c): start recording the
 * allocator calls (malloc .. munmap) of every loaded object but libc, the
 * loader, this library and the object holding address `exclude` (NULL:
 * none), now and in each object ulma_rt_bind_hooks rebinds later; stop
 * leaves the slots rebound, passing calls through.  Records go to the
 * calling thread's writer; a thread's nested allocations are not
 * recorded while ulma_memory_depth is not 0 (the Python allocator hooks
 * raise it around theirs, and ulma's own slow paths around what they
 * allocate). */
ULMA_RT_API void ulma_rt_alloc_start(const void *exclude);
ULMA_RT_API void ulma_rt_alloc_stop(void);
ULMA_RT_API extern __thread uint8_t ulma_memory_depth __attribute__((tls_model("initial-exec")));

/* --memory=sample:BYTES (sample.c): the memory hooks of the extension and
 * of alloc.c ask, for each block, whether to record it.  Exact mode
 * (ulma_rt_sample_bytes 0) records every one at its size. */
ULMA_RT_API extern uint64_t ulma_rt_sample_bytes;
ULMA_RT_API extern __thread int64_t ulma_sample_left __attribute__((tls_model("initial-exec")));
ULMA_RT_API extern _Atomic uint64_t ulma_rt_sampled_live;
/* A block crossed the thread's next sampling point: draw the next, and
 * keep addr as sampled.  True with *weight, the bytes it stands for; false
 * if it could not be kept (the set is full there). */
ULMA_RT_API bool ulma_rt_sample_slow(uintptr_t addr, size_t size, uint64_t *weight);
/* Keep addr in the sampled set (false: no room); take it out (true if it
 * was there). */
ULMA_RT_API bool ulma_rt_sampled_keep(uintptr_t addr);
ULMA_RT_API bool ulma_rt_sampled_take(uintptr_t addr);
/* Sample every `bytes` (0: record everything), forgetting earlier samples
 * (when recording starts; no hook may be recording meanwhile). */
ULMA_RT_API void ulma_rt_sample_reset(uint64_t bytes);

/* Block p of `size` bytes was allocated: record it?  *weight: its bytes,
 * or what the sample stands for. */
static inline bool ulma_rt_sample_alloc(const void *p, size_t size, uint64_t *weight)
{
	*weight = size;
	if (ULMA_LIKELY(!ulma_rt_sample_bytes))
		return true;
	ulma_sample_left -= (int64_t)size;
	if (ULMA_LIKELY(ulma_sample_left > 0))
		return false;
	return ulma_rt_sample_slow((uintptr_t)p, size, weight);
}

/* Block p is about to be freed: record its free?  Call before it is given
 * back (the set forgets it here). */
static inline bool ulma_rt_sample_free(const void *p)
{
	if (ULMA_LIKELY(!ulma_rt_sample_bytes))
		return true;
	return atomic_load_explicit(&ulma_rt_sampled_live, memory_order_relaxed) &&
	       ulma_rt_sampled_take((uintptr_t)p);
}

#ifdef ULMA_RT_INTERNAL
/* An allocator function got.c rebinds: its name, ulma's wrapper and where
 * the real one's address is kept (NULL there: not rebound).  The list
 * ends with a NULL name. */
struct ulma_rt_alloc_fn {
	const char *name;
	void *wrapper;
	void **real;
};
extern const struct ulma_rt_alloc_fn ulma_rt_alloc_fns[] __attribute__((visibility("hidden")));
/* Rebind the allocator slots of every loaded object from now on (got.c). */
void ulma_rt_bind_allocators(const void *exclude) __attribute__((visibility("hidden")));
#endif

/* Tell the session which ELF objects this process has loaded (path, load
 * bias), so the monitor can name native addresses even after the process
 * is gone.  Called when tracing starts and stops, and after dlopen. */
ULMA_RT_API void ulma_rt_report_modules(void);

/* The writer of the calling thread for one native record, with `busy` set;
 * NULL if nothing may be written now (tracing off, no slot, or a signal
 * handler interrupting a write on this thread).  Pair with ulma_rt_done. */
ULMA_RT_API struct ulma_thread_writer *ulma_rt_writer_slow(void);

/* Define a mark name (an instant's, a counter's or a thread's: name_len
 * bytes of UTF-8) in this process's session.  Returns its id, valid while
 * ulma_rt.id_generation is unchanged, or 0 when tracing is off or the
 * definition area is full.  Thread-safe. */
ULMA_RT_API uint32_t ulma_rt_mark_define(const char *name, size_t name_len);

/* Record mark `id` on the calling thread now: kind is ULMA_REC_INSTANT,
 * ULMA_REC_COUNTER (with `value`) or ULMA_REC_THREAD_NAME.  Nothing is
 * written for id 0 or when tracing is off.  Thread-safe. */
ULMA_RT_API void ulma_rt_mark(uint8_t kind, uint32_t id, double value);

/* Record an MPI event on the calling thread now: operation `op` (enum
 * ulma_mpi_op, src/core/mpi_event.h) with its n arguments (at most
 * ULMA_MPI_ARGS_MAX, each below 2^48), as n MPI_ARG records and one
 * MPI_EVENT.  Starts tracing in an armed process, as the C API does.
 * Nothing is written when tracing is off.  Thread-safe (libulma_mpi.so). */
ULMA_RT_API void ulma_rt_mpi_event(uint32_t op, const uint64_t *args, unsigned n);

/* The common case of ulma_rt_writer: the thread's writer, open and idle,
 * with `busy` set; NULL where ulma_rt_writer_slow must decide.
 *
 * `closed` alone says whether the writer may write: one of an older
 * generation is always closed or out of reach.  The generation changes
 * when a session is mapped, which is only while no thread traces, after
 * ulma_rt_stop closed every writer; and in a forked child, whose one
 * thread forgets its writer (threads.c).  The slow path compares the
 * generation, to attach the thread anew. */
static inline struct ulma_thread_writer *ulma_rt_writer_fast(void)
{
	struct ulma_thread_writer *w = ulma_tls_writer;
	if (ULMA_UNLIKELY(!w) || ULMA_UNLIKELY(w->busy))
		return NULL;
	w->busy = 1;
	__asm__ __volatile__("" ::: "memory"); /* busy is stored before closed is read */
	if (ULMA_UNLIKELY(w->closed)) {
		w->busy = 0;
		return NULL;
	}
	return w;
}

static inline struct ulma_thread_writer *ulma_rt_writer(void)
{
	struct ulma_thread_writer *w = ulma_rt_writer_fast();
	return ULMA_LIKELY(w != NULL) ? w : ulma_rt_writer_slow();
}

static inline void ulma_rt_done(struct ulma_thread_writer *w)
{
	__asm__ __volatile__("" ::: "memory"); /* the record is written before busy drops */
	w->busy = 0;
}

/* The session's clock without the CPU, for memory records (they carry none). */
static inline uint64_t ulma_rt_mem_now(void)
{
	return ULMA_LIKELY(ULMA_RT.use_tsc) ? ulma_clock_rdtsc() : ulma_clock_monotonic_ns();
}

static inline void ulma_rt_mem_put(struct ulma_thread_writer *w, uint64_t t, uint64_t value, uint8_t kind)
{
	ulma_ring_write(&w->ring, t, (uint32_t)value, (uint32_t)(value >> 32) & 0xffffu, kind);
}

/* What one allocator call did, into the calling thread's ring: block
 * `old` freed at t_free (if old), block p of `size` bytes allocated in
 * `domain` (enum ulma_mem_domain) at t_alloc (if p), through one writer,
 * so a realloc's records go in together (shm.h's memory records: a small
 * aligned block is one ALLOC_SMALL, any other MEM_SIZE and ALLOC).
 * With no writer, counted in the session's mem_unattributed. */
static inline void ulma_rt_mem_record(unsigned domain, const void *old, uint64_t t_free, const void *p,
				      uint64_t size, uint64_t t_alloc)
{
	struct ulma_thread_writer *w = ulma_rt_writer();
	if (ULMA_UNLIKELY(!w)) {
		struct ulma_shm_header *hdr = ULMA_RT.session.hdr;
		if (hdr && ULMA_RT.active)
			atomic_fetch_add_explicit(&hdr->mem_unattributed, 1, memory_order_relaxed);
		return;
	}
	if (old)
		ulma_rt_mem_put(w, t_free, (uint64_t)(uintptr_t)old, ULMA_REC_FREE);
	uint64_t value;
	uint8_t flags;
	if (ULMA_LIKELY(p != NULL) && ULMA_LIKELY(ulma_mem_small_encode((uintptr_t)p, size, domain, &value, &flags))) {
		ulma_ring_write_flags(&w->ring, t_alloc, (uint32_t)value, (uint32_t)(value >> 32), ULMA_REC_ALLOC_SMALL,
				      flags);
	} else if (p) {
		uint64_t sz = size < ULMA_MEM_SIZE_MAX ? size : ULMA_MEM_SIZE_MAX;
		ulma_rt_mem_put(w, t_alloc, sz << 2 | domain, ULMA_REC_MEM_SIZE);
		ulma_rt_mem_put(w, t_alloc, (uint64_t)(uintptr_t)p, ULMA_REC_ALLOC);
	}
	ulma_rt_done(w);
}

#endif
