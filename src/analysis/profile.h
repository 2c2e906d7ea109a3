/* profile.h - per-function aggregation of well-nested event streams.
 *
 * The monitor feeds it live; `ulma report` feeds it from a trace file; both
 * therefore print the same numbers.  Functions and threads are dense
 * indices assigned by the caller.  Semantics follow cProfile: a call is
 * counted when it is entered (generator resumes are calls), `total`
 * includes callees but counts a recursive function only at its outermost
 * frame per thread, `self` excludes callees.  Frames still open at the end
 * are closed at the time given to ulma_profile_finish.
 *
 * Where the caller knows each event's cumulative CPU and run-queue time
 * (from a schedline), the *_at variants also split self and total time
 * into on-CPU and runnable ns; blocked is the rest of the wall time, of
 * which the GIL clock gives the part spent waiting for the GIL.
 *
 * Times are in session ticks; convert at output.  Single-threaded.
 * Functions returning int give 0 or -ENOMEM.
 */
#ifndef ULMA_PROFILE_H
#define ULMA_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "pid_names.h"
#include "schedline.h"

struct ulma_func_row {
	char *name;  /* owned by the profile, NUL-terminated */
	char *file;
	uint32_t line;
	uint8_t kind; /* enum ulma_def_kind */
	uint64_t calls;
	uint64_t total_ticks;
	uint64_t self_ticks;
	uint64_t self_cpu_ns;   /* on a CPU, of the self time */
	uint64_t self_wait_ns;  /* runnable, waiting for a CPU, of the self time */
	uint64_t self_gil_ns;   /* blocked waiting for the GIL, of the self time */
	uint64_t total_cpu_ns;  /* the same for total time */
	uint64_t total_wait_ns;
	uint64_t total_gil_ns;
	uint64_t self_events;  /* events charged to the self time: each frame's exit and its
				* children's entries (the hook's cost, overhead.h) */
	uint64_t total_events; /* events inside the total time, and each outermost frame's exit */
};

struct ulma_frame {
	uint32_t func;
	uint64_t start;
	uint64_t child; /* ticks spent in callees */
	uint64_t cpu0, wait0;           /* cumulative cpu and wait ns at entry */
	uint64_t child_cpu, child_wait; /* of which spent in callees */
	uint64_t gil0, child_gil;       /* the same for the GIL clock */
	uint64_t child_calls;           /* frames entered directly inside */
	uint64_t descendants;           /* frames entered inside, at any depth */
};

struct ulma_thread_row {
	uint64_t serial;
	uint32_t pid;
	uint32_t tid;
	uint64_t first_ticks; /* first event */
	uint64_t last_ticks;  /* last event, or the close time of open frames */
	uint64_t events;
	uint64_t lost;
	uint64_t self_ticks;  /* sum of self time of this thread's frames */
	uint64_t cpu_ns;      /* sum of self on-CPU ns of its frames */
	uint64_t wait_ns;     /* sum of self runnable ns */
	uint64_t gil_ns;      /* sum of self GIL-wait ns */
	uint64_t last_cpu, last_wait, last_gil; /* cumulative values at the last event */
	uint64_t sample_cpu0, sample_cpu1; /* cpu ns at its first and latest schedstat sample */
	int sampled;
	int seen;             /* any event yet */
	struct ulma_frame *stack;
	uint32_t depth;
	uint32_t cap;
	uint32_t *active; /* open frames per function, for recursion-safe totals */
	uint32_t nactive;
};

struct ulma_profile {
	struct ulma_func_row *funcs;
	uint32_t nfuncs;
	uint32_t cap_funcs;
	struct ulma_thread_row *threads;
	uint32_t nthreads;
	uint32_t cap_threads;
	uint64_t events;
	uint64_t lost;
	uint64_t first_ticks;
	uint64_t last_ticks;
	int has_sched; /* events carried CPU and wait times */
	int has_gil;   /* and some thread's GIL waits were told apart */
	struct ulma_pid_names names; /* what to call each process, where known */
};

void ulma_profile_init(struct ulma_profile *p);
void ulma_profile_free(struct ulma_profile *p);

/* Define function `index` (indices may arrive in any order). */
int ulma_profile_add_func(struct ulma_profile *p, uint32_t index, uint8_t kind, const char *name,
			  size_t name_len, const char *file, size_t file_len, uint32_t line);
/* Define thread `index`. */
int ulma_profile_add_thread(struct ulma_profile *p, uint32_t index, uint64_t serial, uint32_t pid,
			    uint32_t tid);

/* Events; thread and func must have been added. */
int ulma_profile_enter(struct ulma_profile *p, uint32_t thread, uint32_t func, uint64_t ticks);
void ulma_profile_exit(struct ulma_profile *p, uint32_t thread, uint64_t ticks);
/* The same, with the thread's cumulative clocks at the event. */
int ulma_profile_enter_at(struct ulma_profile *p, uint32_t thread, uint32_t func, uint64_t ticks,
			  const struct ulma_sched_clocks *at);
void ulma_profile_exit_at(struct ulma_profile *p, uint32_t thread, uint64_t ticks,
			  const struct ulma_sched_clocks *at);
void ulma_profile_lost(struct ulma_profile *p, uint32_t thread, uint64_t ticks, uint64_t count);

/* Note a schedstat sample of a thread: its CPU time between its first and
 * latest samples measures parallelism whether or not events were lost.
 * gil_known: the sample told GIL waits apart. */
void ulma_profile_sample(struct ulma_profile *p, uint32_t thread, uint64_t cpu_ns, int gil_known);

/* Close every open frame at `ticks` (or at its thread's last event if
 * that is later). */
void ulma_profile_finish(struct ulma_profile *p, uint64_t ticks);

/* Function indices sorted by key[function] descending, then by calls
 * descending, then by index; caller frees.  NULL if out of memory. */
uint32_t *ulma_profile_sorted_by_key(const struct ulma_profile *p, const uint64_t *key);

#endif
