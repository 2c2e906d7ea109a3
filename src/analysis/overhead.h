/* overhead.h - a function's times with the hook's own cost taken out.
 *
 * Every recorded event costs the traced program some time (the
 * interpreter's dispatch to the hook, the clock, the ring write), measured
 * per event at start-up (src/python/calibrate.c).  That time falls between
 * two timestamps and so lands in some frame's self time.  As profile.py
 * does with its bias, each event's cost is charged to the frame that was
 * running just before it: a frame's own exit and its children's entries
 * (ulma_func_row.self_events), and for total time every event inside the
 * frame and its exit (total_events).  The cost was spent on a CPU, so it
 * comes out of on-CPU time first.  Results never go below zero.
 * docs/overhead.md gives the method and its error.
 */
#ifndef ULMA_OVERHEAD_H
#define ULMA_OVERHEAD_H

#include <stdint.h>

#include "profile.h"

/* A function's self or total time and its split, all in ns. */
struct ulma_time_split {
	uint64_t wall_ns;
	uint64_t on_cpu_ns;
	uint64_t runnable_ns;
	uint64_t blocked_ns; /* wall - on_cpu - runnable */
	uint64_t gil_ns;     /* of blocked_ns */
};

/* Split `wall_ns` of a function with `cpu_ns` on a CPU, `wait_ns`
 * runnable and `gil_ns` waiting for the GIL, less `cost_ns` of the hook's
 * (ulma_overhead_cost; 0: no correction).  The parts are clamped so that
 * they add up to the corrected wall time exactly. */
void ulma_overhead_split(uint64_t wall_ns, uint64_t cpu_ns, uint64_t wait_ns, uint64_t gil_ns, uint64_t cost_ns,
			 struct ulma_time_split *out);

/* The hook's cost of `events` events at `ns_per_event` each, rounded. */
uint64_t ulma_overhead_cost(uint64_t events, double ns_per_event);

#endif
