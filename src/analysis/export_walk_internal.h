/* export_walk_internal.h - what the walk's two files share (export_walk.c:
 * frames and events; export_walk_defs.c: the trace's definitions and the
 * records that are not events).  Not for the exporters: they see
 * export_walk.h only.
 */
#ifndef ULMA_EXPORT_WALK_INTERNAL_H
#define ULMA_EXPORT_WALK_INTERNAL_H

#include <stdio.h>

#include "export_walk.h"
#include "../core/trace_reader.h"

/* ns since the trace start: ticks times ns_per_tick in 32.32 fixed point
 * (a 128-bit product: no rounding through a double per event). */
static inline uint64_t ticks_to_ns(uint64_t ticks, uint64_t ticks0, bool tsc, uint64_t ns_per_tick_fp)
{
	if (ticks <= ticks0)
		return 0;
	unsigned __int128 ns = tsc ? ((unsigned __int128)(ticks - ticks0) * ns_per_tick_fp + (1u << 31)) >> 32
				   : ticks - ticks0; /* without a TSC a tick is a ns */
	return ns < UINT64_C(9200000000000000000) ? (uint64_t)ns : UINT64_C(9200000000000000000); /* a damaged trace's times */
}

static inline uint64_t to_ns(const struct ulma_walk *w, uint64_t ticks)
{
	return ticks_to_ns(ticks, w->ticks0, w->tsc, w->ns_per_tick_fp);
}

/* The thread's corrected time of a record that is not an event (a mark,
 * an OFF record, an allocation, an object): the hook's cost of the events
 * before it taken out, never before the thread's latest event, and no
 * cost of its own. */
static inline uint64_t record_ns(const struct ulma_walk *w, const struct ulma_walk_thread *t, uint64_t ticks)
{
	uint64_t ns = to_ns(w, ticks), shift = t->shift_fp >> 32;
	ns = ns > shift ? ns - shift : 0;
	return t->seen && ns < t->last_ns ? t->last_ns : ns;
}

/* Look ahead from f's position without decoding, for the END chunk (its
 * clock pair into w: have_end) and the last OVERHEAD chunk (the hook's
 * cost as measured again at the program's stop, the run's figure:
 * have_last_cost), so that the times are corrected by it from the first
 * event; f's position is restored.  Any surprise just means "not known":
 * the decode that follows reports it. */
void ulma_walk_scan_ahead(struct ulma_walk *w, FILE *f);

/* Fill v's callbacks for everything but events (definitions, marks, MPI,
 * memory, objects, sched samples, sources, END), as w's sink asks: on
 * memory, objects and MPI only for a sink or profile that takes them. */
void ulma_walk_visitor_init(struct ulma_walk *w, struct ulma_trace_visitor *v);

#endif
