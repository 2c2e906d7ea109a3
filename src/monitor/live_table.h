/* live_table.h - the rows of the live view: a profile as it stands now,
 * since the last clear.
 *
 * The collector's profile only credits a frame's time when the frame
 * returns, so a function that is still running (main, a long sleep) would
 * show nothing.  A snapshot adds the frames still open: each open frame's
 * self time so far, and for each function its outermost open frame's time
 * so far (the same recursion rule as the profile's totals).
 *
 * Where the profile has schedstat data, each row also carries its self
 * time's on-CPU and runnable ns.  An open frame's share is its thread's
 * cumulative CPU (wait) ns at the thread's latest event, or at the entry of
 * the open frame above it, less the frame's own value at entry and its
 * finished callees' share.  The wall time since the thread's latest event
 * has no schedstat figure yet, so until the next event it counts as
 * blocked, like a frame closed at that time.
 *
 * Clearing does not touch the profile, which still feeds the trace's END
 * record and the final summary: it records the current values as a
 * baseline, and later snapshots show the difference.  Because the baseline
 * includes the open frames' time so far, a frame open at the clear counts
 * from the clear on, whether it is still open or has returned since.
 *
 * With a cost per event set (ulma_live_table_set_cost), the rows show
 * times with the hook's own cost taken out, by the rule of the summary
 * (src/analysis/overhead.h): each frame's self time loses its own exit's
 * and its children's entries' cost, on-CPU time first, its total time
 * every event's inside it, never below the self time.  An open frame is
 * charged for its children's entries so far, and a function's outermost
 * open frame for the events inside it so far.  A process's self time loses
 * the cost of all its events.
 *
 * Each row also carries its total time's native part (profile.h, "Python
 * against native"), counted like the total: an outermost open frame adds
 * its thread's native clock now less the clock at its entry, the clock
 * growing, while the top frame is native, by the time since the thread's
 * latest event too.  With the cost taken out, it is cut to the total left.
 *
 * The same snapshot also totals each process: its threads' events, lost
 * records and self time (open frames included) with that time's split and
 * its native part, since the clear: one row per process, in order of first
 * appearance until sorted.
 *
 * With --memory, each row also carries the bytes its blocks hold now (a
 * function's, profile_memory.h's live_bytes; a process's), which are a
 * state, not a count since the clear: a function or a process that holds
 * memory keeps its row after a clear even with nothing else since, as it
 * would in memray's live view (its table is what is held now).
 *
 * Wall times are in session ticks, CPU and wait times in ns.
 * Single-threaded; functions returning int give 0 or -ENOMEM.
 */
#ifndef ULMA_LIVE_TABLE_H
#define ULMA_LIVE_TABLE_H

#include <stdint.h>

#include "../analysis/profile.h"

enum ulma_live_sort {
	ULMA_SORT_SELF,
	ULMA_SORT_TOTAL,
	ULMA_SORT_CALLS,
	ULMA_SORT_CPU, /* self time on a CPU */
	ULMA_SORT_MEM, /* bytes held now (--memory) */
	ULMA_SORT_NAME,
	ULMA_SORT_COUNT,
};

struct ulma_live_counts {
	uint64_t calls;
	uint64_t total_ticks;
	uint64_t self_ticks;
	uint64_t self_cpu_ns;  /* of the self time, on a CPU */
	uint64_t self_wait_ns; /* and runnable, waiting for one */
	uint64_t self_gil_ns;  /* and blocked waiting for the GIL */
	uint64_t self_events;  /* the hook's events charged to self and total time */
	uint64_t total_events;
	uint64_t total_native_ticks; /* of the total time, with a native frame on top */
};

struct ulma_live_row {
	uint32_t func; /* index in the profile */
	struct ulma_live_counts n;
	uint64_t mem_bytes; /* its blocks live now (--memory) */
};

/* A thread's, or a process's threads', totals. */
struct ulma_live_thread_counts {
	uint64_t events;
	uint64_t lost;
	uint64_t self_ticks;   /* its frames' self time */
	uint64_t self_cpu_ns;  /* of which on a CPU */
	uint64_t self_wait_ns; /* and runnable */
	uint64_t self_gil_ns;  /* and waiting for the GIL */
	uint64_t native_ticks; /* of the self time, with a native frame on top */
};

struct ulma_live_proc {
	uint32_t pid;
	uint32_t threads; /* with anything since the clear */
	struct ulma_live_thread_counts n;
	uint64_t first_ticks; /* its first event, or the clear if that is later */
	uint64_t last_ticks;  /* its latest event */
	uint64_t mem_bytes;   /* its blocks live now (--memory) */
};

/* Shares of a self time, in percent: cpu + run + blk = 100, and gil, the
 * part of blk spent waiting for the GIL. */
struct ulma_live_split {
	double cpu, run, blk, gil;
};

struct ulma_live_table {
	struct ulma_live_counts *base; /* values at the last clear, per function */
	uint32_t nbase;                /* functions defined after it have none */
	struct ulma_live_counts *cur;  /* scratch: values now */
	uint32_t *stamp;               /* scratch: outermost-open-frame marks */
	uint32_t cap;
	uint32_t generation;
	struct ulma_live_row *rows;    /* functions with anything since the clear */
	uint32_t nrows;
	uint32_t cap_rows;
	uint64_t self_sum;             /* sum of the rows' self ticks */
	uint64_t events_base;          /* profile events and lost at the clear */
	uint64_t lost_base;
	uint64_t clear_ticks;          /* 0 if never cleared */
	struct ulma_live_thread_counts *thread_base; /* per thread, at the last clear */
	uint32_t nthread_base;
	struct ulma_live_thread_counts *thread_cur;  /* scratch: per thread, now */
	uint32_t cap_threads;
	struct ulma_live_proc *procs;  /* processes with anything since the clear */
	uint32_t nprocs;
	double cost_ticks, cost_ns;    /* the hook's cost per event; 0: none taken out */
	double ns_per_tick;            /* the session clock (1.0 until told) */
};

void ulma_live_table_init(struct ulma_live_table *t);
void ulma_live_table_free(struct ulma_live_table *t);

/* The session clock's ns per tick, for the on-CPU part of self times. */
void ulma_live_table_set_clock(struct ulma_live_table *t, double ns_per_tick);

/* Take `ns_per_event` (`ticks_per_event` in session ticks) out of the rows
 * from the next update on; 0 for raw times. */
void ulma_live_table_set_cost(struct ulma_live_table *t, double ticks_per_event, double ns_per_event);

/* Rebuild the rows from the profile, open frames counted up to now_ticks. */
int ulma_live_table_update(struct ulma_live_table *t, const struct ulma_profile *p, uint64_t now_ticks);

/* Make now the new zero (and rebuild the rows, which are then empty). */
int ulma_live_table_clear(struct ulma_live_table *t, const struct ulma_profile *p, uint64_t now_ticks);

/* A self time's shares on a CPU, runnable and blocked (the rest), and of
 * the blocked part, waiting for the GIL.  CPU, wait and GIL ns beyond what
 * is left of the self time (interpolation can give a few) are cut to it,
 * CPU first.  Call only with self_ns > 0. */
struct ulma_live_split ulma_live_split_of(uint64_t self_ns, uint64_t cpu_ns, uint64_t wait_ns, uint64_t gil_ns);

/* Order the rows: times, calls and bytes held descending, names
 * ascending.  The process rows follow the same key: self time (for self
 * and total), events (for calls), on-CPU time, bytes held, or pid (for
 * name). */
void ulma_live_table_sort(struct ulma_live_table *t, const struct ulma_profile *p, enum ulma_live_sort key);

#endif
