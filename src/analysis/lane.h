/* lane.h - a thread's CPU lane: which CPU it ran on, and whether it ran at
 * all, over the whole session, in a fixed number of time bins.
 *
 * Fed with every event of the thread (its time, the CPU the event was taken
 * on, and the thread's cumulative on-CPU ns at that time from a schedline),
 * a lane charges each interval between two events to the CPU of the first
 * one, and the on-CPU share of it to that bin.  When the session outgrows
 * the bins, pairs of bins merge and each bin doubles in width, so memory is
 * fixed however long the program runs.  Rendered as one character a column:
 * the CPU number where the thread was on a CPU for at least a fifth of the
 * column (two GIL-bound threads each run about half the time), '.' where
 * it was less, ' ' before its first or after its last event.
 */
#ifndef ULMA_LANE_H
#define ULMA_LANE_H

#include <stddef.h>
#include <stdint.h>

#define ULMA_LANE_BINS 128

struct ulma_lane {
	uint64_t origin; /* ticks where bin 0 starts */
	uint64_t width;  /* ticks per bin, 0 until the first event */
	uint64_t last_ticks;
	uint64_t last_cpu_ns;
	uint32_t last_cpu; /* CPU of the last event */
	int started;
	uint32_t used; /* bins touched so far */
	double span[ULMA_LANE_BINS];  /* ticks of intervals charged to the bin */
	double oncpu[ULMA_LANE_BINS]; /* of which on a CPU (ticks) */
	uint16_t cpu[ULMA_LANE_BINS]; /* CPU with the most on-CPU time in the bin */
	double cpu_best[ULMA_LANE_BINS];
};

/* Start a lane whose first bins each cover min_width ticks. */
void ulma_lane_init(struct ulma_lane *l, uint64_t origin, uint64_t min_width);

/* One event: at `ticks` on CPU `cpu`, the thread's cumulative on-CPU ns
 * being `cpu_ns`; ns_per_tick converts (1.0 for a ns clock).  Events come
 * in time order. */
void ulma_lane_event(struct ulma_lane *l, uint64_t ticks, uint32_t cpu, uint64_t cpu_ns, double ns_per_tick);

/* Render `cols` columns covering [from, to) ticks into out (cols + 1 bytes). */
void ulma_lane_render(const struct ulma_lane *l, uint64_t from, uint64_t to, char *out, size_t cols);

#endif
