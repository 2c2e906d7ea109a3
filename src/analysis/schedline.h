/* schedline.h - a thread's CPU and run-queue time as functions of time.
 *
 * The monitor samples each traced thread's /proc schedstat (cumulative ns
 * on a CPU and ns waiting in a run queue) about once a millisecond.  A
 * schedline holds those samples; ulma_schedline_at gives the cumulative
 * values at any event time by linear interpolation between the two samples
 * around it (clamped outside them).  Differences of those values between a
 * frame's events split its wall time into on-CPU, runnable (waiting for a
 * CPU) and, as the remainder, blocked.  A third clock, the monitor's
 * estimate of the blocked ns spent waiting for the GIL, is interpolated the
 * same way (0 where unknown).  Queries must come in nondecreasing
 * time, which lets samples behind the cursor be dropped: memory stays at a
 * few samples per thread.  docs/time-split.md gives the method's error.
 */
#ifndef ULMA_SCHEDLINE_H
#define ULMA_SCHEDLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/trace_writer.h" /* struct ulma_trace_sched: one sample */

/* A thread's cumulative clocks at one moment. */
struct ulma_sched_clocks {
	uint64_t cpu_ns;
	uint64_t wait_ns;
	uint64_t gil_ns;
};

struct ulma_schedline {
	struct ulma_trace_sched *s;
	size_t first; /* index of the oldest sample kept */
	size_t n;     /* one past the newest */
	size_t cap;
	/* rates of the interval [s[first], s[first + 1]], valid while rated */
	double cpu_per_tick, wait_per_tick, gil_per_tick;
	bool rated;
	/* the clocks at the previous ulma_schedline_off query */
	bool queried;
	uint64_t first_ticks;           /* of the first query */
	struct ulma_sched_clocks first_at; /* the clocks then */
	struct ulma_sched_clocks prev;  /* at the previous query */
	uint64_t prev_blocked_ns;       /* blocked since the first query, as of the previous */
};

/* Off-CPU time between two moments of a thread. */
struct ulma_schedline_off {
	uint64_t blocked_ns;  /* neither on a CPU nor runnable (includes the GIL's) */
	uint64_t runnable_ns; /* waiting in a run queue */
	uint64_t gil_ns;      /* of the blocked time, waiting for the GIL */
};

/* Append a sample.  Samples older than the newest are ignored (times and
 * counters only grow).  Returns 0 or -ENOMEM.  Accepts a zeroed schedline. */
int ulma_schedline_add(struct ulma_schedline *l, const struct ulma_trace_sched *sample);

static inline bool ulma_schedline_empty(const struct ulma_schedline *l)
{
	return l->n == l->first;
}

/* Ticks of the newest sample (0 if none). */
static inline uint64_t ulma_schedline_last_ticks(const struct ulma_schedline *l)
{
	return ulma_schedline_empty(l) ? 0 : l->s[l->n - 1].ticks;
}

/* The cumulative clocks at `ticks`; drops samples no later query needs. */
void ulma_schedline_at(struct ulma_schedline *l, uint64_t ticks, struct ulma_sched_clocks *at);

/* The thread's off-CPU time from the previous query to `ticks` (nothing at
 * the first query, or without samples): the wall time (ticks at
 * ns_per_tick) not spent on a CPU, of which runnable and GIL time come
 * from their clocks.  Returns true if any of it is non-zero.  Queries come
 * in nondecreasing time, like ulma_schedline_at, which this calls. */
bool ulma_schedline_off(struct ulma_schedline *l, uint64_t ticks, double ns_per_tick, struct ulma_schedline_off *out);

void ulma_schedline_free(struct ulma_schedline *l);

#endif
