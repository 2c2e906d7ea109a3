/* merge_order.h - the logical-clock pass of `ulma merge` (docs/mpi.md):
 * given every rank's MPI events on rank 0's clock (the physical offsets
 * already taken out), move events later where the clocks still disagree
 * with what happened: a receive completes after its message's send
 * started, and a process leaves a collective after the processes it waits
 * for entered it (all of them for a barrier, an allreduce, an alltoall, an
 * allgather; the root for a bcast or a scatter; the root waits for all in
 * a reduce or a gather).  A move shifts the rest of the rank by the same
 * amount, so every local interval is kept but the one that waited.
 *
 * It replays the ranks like Scalasca's parallel replay: each rank goes
 * forward until it needs a partner's event that has not been replayed;
 * when every rank waits, the earliest waiting event has no partner (its
 * rank crashed, or its trace was cut) and goes on unmatched.  Memory:
 * the messages in flight and the collectives open, besides the events.
 * Single-threaded; functions return 0 or -ENOMEM.
 */
#ifndef ULMA_MERGE_ORDER_H
#define ULMA_MERGE_ORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/mpi_event.h"

#define ULMA_MERGE_NO_SEQ UINT64_MAX

/* One MPI event of a rank. */
struct ulma_merge_mpi {
	int64_t ns; /* on rank 0's clock, before the logical pass */
	uint64_t args[ULMA_MPI_ARGS_MAX];
	uint8_t op;
	uint8_t nargs;
	bool matched; /* SEND, RECV: a partner was found */
	uint64_t seq; /* SEND, RECV: the message's number in its (source, destination, tag, comm) */
};

/* From `at_ns` (rank 0's clock, before the pass) on, the rank's events move `shift_ns` later. */
struct ulma_merge_shift {
	int64_t at_ns;
	int64_t shift_ns;
};

struct ulma_merge_rank_mpi {
	uint32_t rank;
	struct ulma_merge_mpi *ev; /* in the order to replay: by ns, stably */
	size_t n;
	/* results */
	struct ulma_merge_shift *shifts; /* increasing in both fields; owned */
	size_t nshifts;
	uint64_t unmatched; /* its sends no receive matched, its receives that matched no send */
};

struct ulma_merge_order_stats {
	uint64_t messages;   /* matched */
	uint64_t unmatched;  /* sends and receives */
	uint64_t moves;      /* times a rank had to move */
	int64_t max_shift_ns;
};

/* Replay ranks[0..n) (indexed by rank or not: peers are found by their
 * `rank`).  Fills each rank's results and *stats. */
int ulma_merge_order(struct ulma_merge_rank_mpi *ranks, uint32_t n, struct ulma_merge_order_stats *stats);

/* The shift of an event at ns (pass-1 clock) of a rank, moving *cursor
 * forward: calls must come with ns not decreasing per cursor. */
static inline int64_t ulma_merge_shift_at(const struct ulma_merge_rank_mpi *r, size_t *cursor, int64_t ns)
{
	size_t c = *cursor;
	while (c < r->nshifts && r->shifts[c].at_ns <= ns)
		c++;
	*cursor = c;
	return c ? r->shifts[c - 1].shift_ns : 0;
}

void ulma_merge_rank_mpi_free(struct ulma_merge_rank_mpi *r);

#endif
