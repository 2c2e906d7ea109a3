/* offcpu.h - each traced thread's time off its CPU, from the scheduler's
 * context-switch records (switches.h).
 *
 * The records arrive per CPU, in batches, some time after the fact; the
 * events of a thread arrive through its ring.  This module keeps, per
 * thread, the switch records not yet merged with its events, in time order
 * (converted to session ticks).  The collector, draining a thread's ring,
 * asks for the intervals that end before each event
 * (ulma_offcpu_until): a switch-out and the next switch-in make one
 * interval, blocked or runnable (the switch-out says whether the thread was
 * preempted), which becomes an OFF record in the stream, charged to the
 * frame on top.
 *
 * Order is by causality as much as by time: a thread writes events only
 * while on a CPU, so its switch-in is written before the events that
 * follow it, and the collector reads every ring's head before reading the
 * switch records (ulma_offcpu_read), so every switch before a drained
 * event is here.  A clock skew of a few ns that puts a switch-in after the
 * event it precedes is corrected by that rule: an event while the thread
 * is off ends the interval.
 *
 * A blocked interval still running at a poll is classified once by
 * reading the thread's /proc syscall file (gilwait.h): a futex wait on the
 * GIL makes it a GIL wait.  One too short to be seen takes the thread's
 * latest classification.
 *
 * Threads are kept from their first record until they exit; records of
 * threads no ring has claimed are kept up to a bound (their latest state
 * always).  Single-threaded: the monitor's loop.
 */
#ifndef ULMA_OFFCPU_H
#define ULMA_OFFCPU_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/clock.h"
#include "../core/idmap.h"
#include "gilwait.h"
#include "switches.h"

struct ulma_offcpu_pending {
	uint64_t ticks;
	uint64_t ns;
	uint8_t kind;  /* enum ulma_switch_kind: IN, OUT or PREEMPT */
	uint8_t probe; /* OUT: enum ulma_block seen while the interval it begins lasted */
	uint32_t cpu;  /* the CPU it was recorded on */
};

struct ulma_offcpu_thread {
	uint32_t pid, tid;
	bool claimed;   /* a ring writes this thread's events: keep all its records */
	bool exited;    /* its EXIT record came, at exit_ticks */
	bool known;     /* whether on or off its CPU is known: a record was merged, or /proc said */
	bool off;       /* switched out (at off_ticks) and not back yet, as far as merged */
	bool preempted; /* ...and still runnable then */
	uint8_t probe;  /* enum ulma_block seen during the current off interval, NONE if not probed */
	uint64_t off_ticks, off_ns;
	uint32_t off_cpu;    /* the CPU it left then, ULMA_OFFCPU_NO_CPU if not recorded */
	uint64_t exit_ticks; /* when it exited (its EXIT record): the kernel records no switch-out after it */
	uint64_t wake_at; /* ulma_offcpu_until has work for an event at or after this time */
	struct ulma_offcpu_pending *q; /* pending records, oldest first, from q[head] */
	uint32_t head, len, cap;
	struct ulma_gilwait gil;
};

#define ULMA_OFFCPU_NO_CPU UINT32_MAX

/* One interval off the CPU, ready for the stream. */
struct ulma_offcpu_interval {
	uint64_t ticks; /* when the thread left its CPU */
	uint64_t ns;    /* for how long */
	unsigned state; /* enum ulma_off_state */
	uint32_t cpu;   /* the CPU it left (where it ran since it last came back): the switch-out's,
			 * ULMA_OFFCPU_NO_CPU where none was recorded */
};

struct ulma_offcpu {
	struct ulma_clock_track clock;
	struct ulma_idmap by_tid;         /* tid -> index + 1 in threads */
	struct ulma_offcpu_thread **threads;
	uint32_t nthreads, cap_threads;
	uint64_t records; /* switch records taken */
};

void ulma_offcpu_init(struct ulma_offcpu *o, bool use_tsc, const struct ulma_clock_pair *start, uint64_t hz);
void ulma_offcpu_free(struct ulma_offcpu *o);

/* Take every record switches has; call once per poll, after the rings'
 * heads were read.  Returns the count or -errno. */
long ulma_offcpu_read(struct ulma_offcpu *o, struct ulma_switches *sw);

/* Take one record (what ulma_offcpu_read does for each).  0 or -ENOMEM. */
int ulma_offcpu_take(struct ulma_offcpu *o, const struct ulma_switch_record *r);

/* The thread a ring has claimed (at claimed_ticks), created if no record
 * has named it yet; gil_addr/gil_len: its GIL, for telling GIL waits apart
 * (0: unknown).  A thread no record has named yet has not left its CPU, or
 * has been off it since before the records began (attaching to a running
 * program): its /proc state tells which.  NULL only when out of memory.
 * Valid until ulma_offcpu_release. */
struct ulma_offcpu_thread *ulma_offcpu_claim(struct ulma_offcpu *o, uint32_t pid, uint32_t tid, uint64_t gil_addr,
					     uint32_t gil_len, uint64_t claimed_ticks);

/* Its ring is done with the thread. */
void ulma_offcpu_release(struct ulma_offcpu *o, struct ulma_offcpu_thread *t);

/* What an event at some time says about its thread. */
enum ulma_offcpu_at {
	ULMA_OFFCPU_SAYS_NOTHING, /* written on its behalf by another thread */
	ULMA_OFFCPU_RUNNING,      /* written by the thread itself: it is on its CPU */
	ULMA_OFFCPU_ENDS,         /* its frames end here: so does any interval */
};

/* The next off-CPU interval that ends by an event at `ticks`.  Returns
 * false when there is none; call until it does. */
bool ulma_offcpu_until(struct ulma_offcpu_thread *t, uint64_t ticks, enum ulma_offcpu_at at,
		       struct ulma_offcpu_interval *out, const struct ulma_clock_track *clock);

/* Classify the blocked intervals in progress (one read per interval). */
void ulma_offcpu_probe(struct ulma_offcpu *o);

#endif
