/* overhead.c - times with the hook's cost taken out (see overhead.h). */
#include "overhead.h"

#include "../core/clock.h"

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

uint64_t ulma_overhead_cost(uint64_t events, double ns_per_event)
{
	return ns_per_event > 0 ? ulma_u64_from_double(ns_per_event * (double)events + 0.5) : 0;
}

void ulma_overhead_split(uint64_t wall_ns, uint64_t cpu_ns, uint64_t wait_ns, uint64_t gil_ns, uint64_t cost_ns,
			 struct ulma_time_split *out)
{
	uint64_t wall = wall_ns > cost_ns ? wall_ns - cost_ns : 0;
	uint64_t removed = wall_ns - wall;
	/* the cost ran on a CPU: take it from on-CPU time, then from the rest */
	uint64_t cpu = cpu_ns > removed ? cpu_ns - removed : 0;
	out->wall_ns = wall;
	out->on_cpu_ns = min_u64(cpu, wall);
	out->runnable_ns = min_u64(wait_ns, wall - out->on_cpu_ns);
	out->blocked_ns = wall - out->on_cpu_ns - out->runnable_ns;
	out->gil_ns = min_u64(gil_ns, out->blocked_ns);
}
