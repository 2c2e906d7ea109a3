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
 * It replays the ranks like Scalasca's parallel replay, in one pass that
 * pulls each rank's events in its trace's order: each rank goes forward
 * until it needs a partner's event that has not been replayed; when every
 * rank waits, the earliest waiting event has no partner (its rank
 * crashed, or its trace was cut) and goes on unmatched.  Results leave
 * through callbacks as they are known.  Memory: one event and a few
 * counters per rank, the collectives still open, the message queues of
 * each (source, destination, tag, communicator) and the sends in flight,
 * at most `max_in_flight` of them: past that, a queue that would grow
 * takes no more sends, which are reported unmatched (as are the receives
 * that find it empty), never held.  Single-threaded.
 */
#ifndef ULMA_MERGE_ORDER_H
#define ULMA_MERGE_ORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/idmap.h"
#include "../core/mpi_event.h"

#define ULMA_MERGE_NO_SEQ UINT64_MAX
/* Sends held at once by `ulma merge` (16 bytes each): a real program
 * bounds its messages in flight far below. */
#define ULMA_MERGE_MAX_IN_FLIGHT (1u << 22)

/* One MPI event of a rank. */
struct ulma_merge_mpi {
	int64_t ns; /* on rank 0's clock, before the logical pass */
	uint64_t args[ULMA_MPI_ARGS_MAX];
	uint8_t op;
	uint8_t nargs;
	bool matched; /* for the caller: the replay neither reads nor sets it */
	uint64_t seq; /* for the caller: the replay neither reads nor sets it */
};

struct ulma_merge_order_stats {
	uint64_t messages;   /* matched */
	uint64_t unmatched;  /* sends and receives */
	uint64_t moves;      /* times a rank had to move */
	int64_t max_shift_ns;
	uint64_t dropped;    /* sends past max_in_flight, counted in unmatched */
};

/* How the replay gets the events and gives its results.  Each returns 0
 * (next: 1 with *out, 0 at the rank's end) or a negative errno, which
 * stops the replay and is returned. */
struct ulma_merge_replay_io {
	void *ctx;
	/* rank index ri's next MPI event, in its trace's order */
	int (*next)(void *ctx, uint32_t ri, struct ulma_merge_mpi *out);
	/* from at_ns on (the pass-1 clock) rank ri's events move shift_ns
	 * later; per rank both fields increase from call to call */
	int (*on_shift)(void *ctx, uint32_t ri, int64_t at_ns, int64_t shift_ns);
	/* rank ri's index-th MPI event (from 0), a receive, matched no send;
	 * per rank the indices increase */
	int (*on_unmatched_recv)(void *ctx, uint32_t ri, uint64_t index);
};

struct ulma_merge_replay;

/* Replay n ranks; rank_of[ri] is rank index ri's MPI rank (peers are found
 * by it).  On success *out holds what ulma_merge_replay_matched and
 * _unmatched answer (free it with ulma_merge_replay_free).  Returns 0,
 * -ENOMEM, or an io callback's error. */
int ulma_merge_replay_run(const uint32_t *rank_of, uint32_t n, size_t max_in_flight,
			  const struct ulma_merge_replay_io *io, struct ulma_merge_order_stats *st,
			  struct ulma_merge_replay **out);

/* Messages of (source, destination, tag, comm) that were received: its
 * sends numbered below this matched. */
uint64_t ulma_merge_replay_matched(const struct ulma_merge_replay *p, uint64_t src, uint64_t dst, uint64_t tag,
				   uint64_t comm);

/* Rank index ri's sends no receive matched and receives that matched no send. */
uint64_t ulma_merge_replay_unmatched(const struct ulma_merge_replay *p, uint32_t ri);

void ulma_merge_replay_free(struct ulma_merge_replay *p);

/* Numbers the messages of each rank's events read again in the replay's
 * order: the replay numbered the sends of each (source, destination,
 * tag, comm) in turn, and matched receives to them in turn. */
struct ulma_merge_number_slot;
struct ulma_merge_numbering {
	struct ulma_idmap slot_of; /* key of (src, dst, tag, comm) -> slot */
	struct ulma_merge_number_slot *slots; /* owned */
	size_t n, cap;
};

/* The number to write for event e of rank `rank` (a SEND or RECV with 4
 * or more arguments; else ULMA_MERGE_NO_SEQ), ULMA_MERGE_NO_SEQ if it
 * matched nothing.  recv_matched: for a RECV, whether the replay matched
 * it.  Returns 0 or -ENOMEM. */
int ulma_merge_number(struct ulma_merge_numbering *num, const struct ulma_merge_replay *p, uint32_t rank,
		      uint8_t op, uint8_t nargs, const uint64_t *args, bool recv_matched, uint64_t *seq);

void ulma_merge_numbering_free(struct ulma_merge_numbering *num);

#endif
