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
 * hidden, kept by ulma_rt_set_active and the arming (rt.c). */
enum ulma_hooks_state {
	ULMA_HOOKS_OFF = 0,
	ULMA_HOOKS_ARMED = 1, /* a session waits in the environment: the first native event or
			       * C API call starts tracing (ulma_rt_start_armed, rt.c) */
	ULMA_HOOKS_ON = 2,
};
#ifdef ULMA_RT_INTERNAL
extern volatile uint8_t ulma_rt_hooks_state __attribute__((visibility("hidden")));
#endif
ULMA_RT_API extern __thread struct ulma_thread_writer *ulma_tls_writer __attribute__((tls_model("initial-exec")));

/* Map the session behind fd (not taken over) as this process's, dropping
 * the previous one, and bump the writer generation.  Does not start
 * tracing.  Returns 0, -EPROTO for a foreign session, or -errno. */
ULMA_RT_API int ulma_rt_map(int fd);

/* An armed process (no Python) starts tracing now, at its first native
 * event or C API call.  Returns true if tracing is on. */
ULMA_RT_API bool ulma_rt_start_armed(void);

/* Turn recording on or off (the hooks' `active`, and `ulma_enabled` of
 * include/ulma/ulma.h). */
ULMA_RT_API void ulma_rt_set_active(bool on);

/* Stop tracing in this process: no more events, and each thread's frames
 * still open end at `stopped_at` (taken on CPU `cpu`).  Safe against
 * threads writing meanwhile.  Tracing may start again with a new map. */
ULMA_RT_API void ulma_rt_stop(uint64_t stopped_at, uint32_t cpu);

/* Register the thread-exit and fork handlers (once).  Returns 0 or -1. */
ULMA_RT_API int ulma_rt_threads_init(void);

/* Attach the calling thread to the session (slow path).  Returns NULL when
 * tracing is off; a thread without a free slot gets a writer that counts
 * its events as lost. */
ULMA_RT_API struct ulma_thread_writer *ulma_rt_thread_attach(void);

/* A writer with a slot claimed for thread `tid` of this process, for the
 * caller to fill before that thread adopts it at its first event.  NULL
 * when no slot or memory is left (the failure bits say which). */
ULMA_RT_API struct ulma_thread_writer *ulma_rt_thread_prepare(uint32_t tid);

/* Rebind every newly loaded object's imports of the -finstrument-functions
 * hooks to this library's (got.c).  Cheap when nothing was loaded since
 * the last call. */
ULMA_RT_API void ulma_rt_bind_hooks(void);

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

static inline struct ulma_thread_writer *ulma_rt_writer(void)
{
	struct ulma_thread_writer *w = ulma_tls_writer;
	if (ULMA_UNLIKELY(!w) || ULMA_UNLIKELY(w->busy))
		return ulma_rt_writer_slow();
	w->busy = 1;
	__asm__ __volatile__("" ::: "memory"); /* busy is stored before closed is read */
	if (ULMA_UNLIKELY(w->closed | (w->generation != ULMA_RT.writer_generation))) {
		w->busy = 0;
		return ulma_rt_writer_slow();
	}
	return w;
}

static inline void ulma_rt_done(struct ulma_thread_writer *w)
{
	__asm__ __volatile__("" ::: "memory"); /* the record is written before busy drops */
	w->busy = 0;
}

#endif
