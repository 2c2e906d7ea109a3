/* merge.h - `ulma merge DIR -o all.trace` (docs/mpi.md): the traces of an
 * MPI run's ranks, each written where its rank ran, into one trace where
 * every rank is a process, on one clock.
 *
 * Three passes over the ranks' traces, none of which holds more than a
 * few chunks and a few counters per rank, whatever the events.  merge.c
 * reads each rank's trace for its totals and clock offsets and checks
 * that the traces belong together; each rank's clock is mapped to rank
 * 0's with the offsets its ping-pong measured at MPI_Init and
 * MPI_Finalize, interpolated between the two.  It then replays the ranks'
 * MPI events side by side (merge_feed.h reads them, merge_order.h moves
 * events later where those clocks still contradict what happened),
 * writing the moves and the receives that matched nothing to a spill
 * file per rank.  merge_write.c reads each trace again with its spill
 * and writes its events, converted, into the output, one rank after the
 * other.
 * Internal to the `ulma` program.
 */
#ifndef ULMA_MERGE_H
#define ULMA_MERGE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../core/trace_writer.h"
#include "merge_order.h"

/* One rank's trace, as the first pass found it. */
struct merge_rank {
	char *path;
	uint32_t rank, size, pid;
	char *host;
	uint64_t run_id;
	bool has_init;
	/* its clock: ticks -> its own ns */
	uint64_t start_ticks, start_ns;
	double ns_per_tick;
	uint32_t meta_flags;
	bool complete;
	struct ulma_trace_end end;
	/* its clock -> rank 0's: offset(ns) = off0 + (ns - at0) * slope */
	int64_t off0, off1; /* at MPI_Init, at MPI_Finalize (off0 if none) */
	int64_t at0;
	double slope;
	bool has_offset;
	/* totals */
	uint64_t events;
	uint64_t mpi_ns; /* in MPI frames, all threads */
	/* the replay's results: records of two int64_t, in a temporary file
	 * each (NULL: none) */
	FILE *shifts;    /* (at ns before the pass, shift ns) per move, in order */
	FILE *unmatched_recvs; /* (index among its MPI events, 0) per receive that matched nothing */
	int64_t last_shift;
	uint64_t unmatched; /* sends and receives */
	uint32_t merged_pid_base; /* 0: its pids are kept; else they are offset (another rank had one) */
};

/* A tick of rank r in its own ns (clamped as below). */
static inline int64_t merge_rank_local_ns(const struct merge_rank *r, uint64_t ticks)
{
	double ns = (double)r->start_ns + ((double)ticks - (double)r->start_ticks) * r->ns_per_tick;
	return ns > 1e18 ? (int64_t)1e18 : ns < -1e18 ? -(int64_t)1e18 : (int64_t)ns;
}

/* A tick of rank r on rank 0's clock, before the logical pass. */
static inline int64_t merge_rank_ns(const struct merge_rank *r, uint64_t ticks)
{
	double local = (double)r->start_ns + ((double)ticks - (double)r->start_ticks) * r->ns_per_tick;
	double off = (double)r->off0 + (local - (double)r->at0) * r->slope;
	double ns = local - off;
	const double lim = 1e18; /* 31 years: a corrupt trace's times, and the shifts between them, stay in int64_t */
	return ns > lim ? (int64_t)lim : ns < -lim ? -(int64_t)lim : (int64_t)ns;
}

/* Write ranks[0..n) (checked, ordered, replayed by `replay`) into the
 * trace at out.  Returns 0, or -errno after saying what went wrong on
 * stderr. */
int ulma_merge_write(struct merge_rank *ranks, uint32_t n, const char *dir, const char *out,
		     const struct ulma_merge_replay *replay, const struct ulma_merge_order_stats *order);

#endif
