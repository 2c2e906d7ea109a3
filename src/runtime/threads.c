/* threads.c - one ring writer per thread, attached on the thread's first
 * event and closed when the thread exits or tracing stops (rt.h).
 *
 * The writer pointer lives in initial-exec TLS, so the fast path reads it
 * with one instruction.  A pthread key's destructor tells us when a thread
 * ends, so its slot can be drained and reused.  A forked child inherits the
 * session mapping and the hook, so it goes on tracing, but not through its
 * parent's writers: a new generation makes each of its threads claim a slot
 * of its own, under the child's pid.
 *
 * start() may also prepare a writer for a thread that is already inside
 * frames (open_frames.c): claimed under that thread's tid and filled with
 * its open frames by the starting thread, then adopted by the thread itself
 * at its first event.  Until then the thread writes nothing, so the ring
 * has one producer at a time; the writers lock and the GIL order the
 * hand-over.
 *
 * Stopping closes every writer while their threads may be writing native
 * events: the handshake on `busy` (rt.h) makes the stopping thread the
 * ring's only producer before it writes the thread's STOP.
 *
 * Before its first thread claims a slot, a process names itself: its
 * command line and its parent, read from /proc/self, as a definition of
 * the session (ULMA_DEF_PROCESS, include/ulma/shm.h).  The monitor used to
 * read them from /proc/PID when it first saw a thread of the process,
 * which a process that ends at once may no longer have by then.
 */
#include "rt.h"

#include "ulma/ulma.h"

#include "../core/proc_name.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

ULMA_RT_API __thread struct ulma_thread_writer *ulma_tls_writer __attribute__((tls_model("initial-exec")));

static pthread_key_t exit_key;
static pthread_mutex_t writers_lock = PTHREAD_MUTEX_INITIALIZER;
static bool have_membarrier; /* this process registered for expedited membarrier */

static void membarrier_register(void)
{
	have_membarrier = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* Every other thread of the process passes a full barrier before this
 * returns.  Without membarrier (kernels before 4.14), a short sleep: a
 * thread that has not seen `closed` by then is inside its write, whose
 * `busy` the caller then waits out, and the x86 store buffer it could hide
 * in drains within microseconds. */
static void barrier_all_threads(void)
{
	if (have_membarrier && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
		return;
	struct timespec ms = {0, 1000000};
	nanosleep(&ms, NULL);
}

/* A slotless thread writes into this ring of one record that is always
 * full, so every event counts as lost and nothing is stored. */
static struct ulma_shm_slot full_slot;

static void unlink_writer_locked(struct ulma_thread_writer *w)
{
	for (struct ulma_thread_writer **p = &ulma_rt.writers; *p; p = &(*p)->next) {
		if (*p == w) {
			*p = w->next;
			break;
		}
	}
}

static void unlink_writer(struct ulma_thread_writer *w)
{
	pthread_mutex_lock(&writers_lock);
	unlink_writer_locked(w);
	pthread_mutex_unlock(&writers_lock);
}

/* The time tracing stopped, for close_writer. */
struct stop_mark {
	uint64_t time;
	uint32_t cpu;
};

/* Hand a writer's losses and slot back to the session.  When tracing stops
 * (`stopped` not NULL), first the time it stopped: the thread's frames still
 * open end there, not at its last event.  A thread that exits has left its
 * frames already, so it writes none (and the monitor does not wait on it
 * for one more schedstat sample of a thread on its way out).  With
 * writers_lock held. */
static void close_writer(struct ulma_thread_writer *w, const struct stop_mark *stopped)
{
	w->closed = 1;
	if (w->finished || w->generation != ulma_rt.writer_generation || !ulma_rt.session.hdr)
		return;
	w->finished = true;
	if (w->has_slot) {
		if (stopped)
			ulma_ring_write_proxy(&w->ring, stopped->time, 0, stopped->cpu, ULMA_REC_STOP);
		ulma_session_close_slot(&w->ring); /* writes the LOST marker if it fits */
	}
	if (w->ring.lost) /* no slot, or no room left for the marker: count it here */
		atomic_fetch_add_explicit(&ulma_rt.session.hdr->lost_unmarked, w->ring.lost,
					  memory_order_relaxed);
	w->ring.lost = 0;
}

static void on_thread_exit(void *arg)
{
	struct ulma_thread_writer *w = arg;
	/* under the lock: stop() may be closing every writer at this moment */
	pthread_mutex_lock(&writers_lock);
	close_writer(w, NULL);
	unlink_writer_locked(w);
	pthread_mutex_unlock(&writers_lock);
	if (ulma_tls_writer == w)
		ulma_tls_writer = NULL;
	free(w);
}

static void after_fork_child(void)
{
	membarrier_register(); /* the registration belongs to the parent's address space */
	/* the inherited writers write into the parent's rings: forget them (the
	 * memory of the parent's other threads is not ours to free) */
	ulma_rt.writer_generation++; /* ids stay valid: the session is the same */
	ulma_rt.writers = NULL;
	ulma_tls_writer = NULL;
	pthread_mutex_init(&writers_lock, NULL);
}

int ulma_rt_threads_init(void)
{
	static bool done;
	if (done)
		return 0;
	if (pthread_key_create(&exit_key, on_thread_exit) != 0 ||
	    pthread_atfork(NULL, NULL, after_fork_child) != 0)
		return -1;
	membarrier_register();
	done = true;
	return 0;
}

/* The writer start() prepared for thread `tid`, now this thread's own; NULL if none. */
static struct ulma_thread_writer *adopt_prepared(uint32_t tid)
{
	struct ulma_thread_writer *found = NULL;
	pthread_mutex_lock(&writers_lock);
	for (struct ulma_thread_writer *w = ulma_rt.writers; w; w = w->next) {
		if (!w->adopted && w->tid == tid && w->generation == ulma_rt.writer_generation) {
			w->adopted = true;
			found = w;
			break;
		}
	}
	pthread_mutex_unlock(&writers_lock);
	return found;
}

/* The writer generation whose process has named itself (see the top). */
static _Atomic uint32_t named_generation;

/* Claim a slot for thread tid of this process, the process named first:
 * once per writer generation (a session mapped, a forked child), by the
 * first of its threads to get here (another meanwhile does not wait: the
 * monitor reads /proc/PID for a process it finds unnamed). */
static int claim_slot(struct ulma_rt *t, uint32_t tid, struct ulma_ring_writer *ring)
{
	uint32_t pid = (uint32_t)getpid(), gen = t->writer_generation;
	uint32_t seen = atomic_load_explicit(&named_generation, memory_order_relaxed);
	if (seen != gen && atomic_compare_exchange_strong_explicit(&named_generation, &seen, gen, memory_order_relaxed,
								     memory_order_relaxed)) {
		char name[ULMA_PROC_NAME_MAX], ppid[16];
		ulma_proc_name_read(pid, name, sizeof(name));
		int len = snprintf(ppid, sizeof(ppid), "%u", (unsigned)getppid());
		ulma_session_define(&t->session, ULMA_DEF_PROCESS, name, strlen(name), ppid, (size_t)len, pid);
	}
	return ulma_session_claim_slot(&t->session, pid, tid, ring);
}

struct ulma_thread_writer *ulma_rt_thread_prepare(uint32_t tid)
{
	struct ulma_rt *t = &ulma_rt;
	struct ulma_thread_writer *w = calloc(1, sizeof(*w));
	if (!w) {
		atomic_fetch_or_explicit(&t->session.hdr->failures, ULMA_FAIL_NOMEM, memory_order_relaxed);
		return NULL;
	}
	w->generation = t->writer_generation;
	w->tid = tid;
	if (claim_slot(t, tid, &w->ring) < 0) {
		free(w);
		return NULL;
	}
	w->has_slot = true;
	pthread_mutex_lock(&writers_lock);
	w->next = t->writers;
	t->writers = w;
	pthread_mutex_unlock(&writers_lock);
	return w;
}

ULMA_RT_API void (*ulma_rt_on_attach)(void);

struct ulma_thread_writer *ulma_rt_thread_attach(void)
{
	struct ulma_rt *t = &ulma_rt;
	if (!t->active)
		return NULL;
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	struct ulma_thread_writer *w = adopt_prepared(tid);
	if (w) {
		if (ulma_tls_writer) { /* from an earlier session */
			unlink_writer(ulma_tls_writer);
			free(ulma_tls_writer);
		}
		ulma_tls_writer = w;
		pthread_setspecific(exit_key, w);
		return w;
	}
	w = ulma_tls_writer;
	if (w) { /* from an earlier session: reuse the memory */
		unlink_writer(w);
	} else {
		w = malloc(sizeof(*w));
		if (!w) {
			atomic_fetch_or_explicit(&t->session.hdr->failures, ULMA_FAIL_NOMEM, memory_order_relaxed);
			return NULL;
		}
	}
	memset(w, 0, sizeof(*w));
	w->generation = t->writer_generation;
	w->tid = tid;
	w->adopted = true;
	int slot = claim_slot(t, tid, &w->ring);
	if (slot >= 0) {
		w->has_slot = true;
	} else {
		ulma_ring_writer_init(&w->ring, t->session.hdr, &full_slot, NULL, 1, t->use_tsc);
		w->ring.head = 1;
		w->ring.lossless = false;
	}
	pthread_mutex_lock(&writers_lock);
	w->next = t->writers;
	t->writers = w;
	/* under the lock: a stop either sees this writer and closes it, or
	 * has already cleared `active` */
	if (!t->active)
		close_writer(w, NULL);
	pthread_mutex_unlock(&writers_lock);
	ulma_tls_writer = w;
	pthread_setspecific(exit_key, w);
	if (w->closed)
		return NULL;
	if (ulma_rt_on_attach) /* before the event that attached it: its busy is still clear */
		ulma_rt_on_attach();
	return w;
}

void ulma_rt_stop(uint64_t stopped_at, uint32_t cpu)
{
	const struct stop_mark stopped = {stopped_at, cpu};
	/* back to the one load and branch of a process that does not trace; a
	 * hook past this check meets its writer closed, below */
	ulma_rt_hooks_state = ULMA_HOOKS_OFF;
	ulma_enabled = 0;
	ulma_rt.active = false;
	pthread_mutex_lock(&writers_lock);
	/* first no writer takes a new record, then none is inside one */
	for (struct ulma_thread_writer *w = ulma_rt.writers; w; w = w->next)
		if (w->generation == ulma_rt.writer_generation)
			w->closed = 1;
	barrier_all_threads();
	for (struct ulma_thread_writer **p = &ulma_rt.writers; *p;) {
		struct ulma_thread_writer *w = *p;
		while (w->busy && w != ulma_tls_writer)
			sched_yield();
		close_writer(w, &stopped);
		if (!w->adopted) { /* prepared for a thread that never wrote: no thread holds it */
			*p = w->next;
			free(w);
		} else {
			p = &w->next;
		}
	}
	pthread_mutex_unlock(&writers_lock);
	if (ulma_rt.session.hdr)
		atomic_store(&ulma_rt.session.hdr->tracing, 0);
}

struct ulma_thread_writer *ulma_rt_writer_slow(void)
{
	struct ulma_thread_writer *w = ulma_tls_writer;
	if (w && w->busy) { /* a signal handler inside one of this thread's writes */
		if (ulma_rt.session.hdr)
			atomic_fetch_add_explicit(&ulma_rt.session.hdr->lost_unmarked, 1, memory_order_relaxed);
		return NULL;
	}
	if (!ulma_rt.active)
		return NULL;
	if (!w || w->generation != ulma_rt.writer_generation) {
		w = ulma_rt_thread_attach();
		if (!w)
			return NULL;
	}
	w->busy = 1;
	__asm__ __volatile__("" ::: "memory");
	if (w->closed) {
		w->busy = 0;
		return NULL;
	}
	return w;
}
