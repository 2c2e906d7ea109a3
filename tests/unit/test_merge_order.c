/* test_merge_order.c - the logical-clock pass of `ulma merge`
 * (src/monitor/merge_order.h) on hand-made ranks with known answers:
 * a receive the clocks put before its send, a barrier left before the
 * last rank entered it, a bcast, a receive whose sender crashed, a send
 * nobody received, and ranks that need no move. */
#include "tap.h"

#include <stdlib.h>
#include <string.h>

#include "monitor/merge_order.h"

#define MAXEV 16

static struct ulma_merge_mpi evs[4][MAXEV];

static struct ulma_merge_mpi *add(struct ulma_merge_rank_mpi *r, int64_t ns, uint8_t op, uint64_t a0, uint64_t a1,
				  uint64_t a2, uint64_t a3, uint64_t a4)
{
	struct ulma_merge_mpi *e = &r->ev[r->n++];
	memset(e, 0, sizeof(*e));
	e->ns = ns;
	e->op = op;
	e->args[0] = a0;
	e->args[1] = a1;
	e->args[2] = a2;
	e->args[3] = a3;
	e->args[4] = a4;
	e->nargs = op == ULMA_MPI_COLL_BEGIN ? 5 : op == ULMA_MPI_COLL_END ? 2 : 4;
	e->seq = ULMA_MERGE_NO_SEQ;
	return e;
}

static void setup(struct ulma_merge_rank_mpi *r, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].rank = i;
		r[i].ev = evs[i];
	}
}

static void release(struct ulma_merge_rank_mpi *r, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		free(r[i].shifts);
}

static int64_t shift_at(const struct ulma_merge_rank_mpi *r, int64_t ns)
{
	size_t cursor = 0;
	return ulma_merge_shift_at(r, &cursor, ns);
}

/* rank 1's clock runs 100 ns behind: its receive of rank 0's message
 * would end before the send began */
static void receive_before_send(void)
{
	struct ulma_merge_rank_mpi r[2];
	struct ulma_merge_order_stats st;
	setup(r, 2);
	struct ulma_merge_mpi *send = add(&r[0], 1000, ULMA_MPI_SEND, 1, ulma_zigzag(7), 0, 64, 0);
	add(&r[0], 1500, ULMA_MPI_RECV, 1, ulma_zigzag(8), 0, 32, 0);
	struct ulma_merge_mpi *recv = add(&r[1], 950, ULMA_MPI_RECV, 0, ulma_zigzag(7), 0, 64, 0);
	add(&r[1], 1200, ULMA_MPI_SEND, 0, ulma_zigzag(8), 0, 32, 0);
	CHECK_EQ_I64(ulma_merge_order(r, 2, &st), 0, "the pass runs");
	CHECK_EQ_U64(st.messages, 2, "both messages matched");
	CHECK_EQ_U64(st.unmatched, 0, "none left over");
	CHECK(send->matched && recv->matched && send->seq == 0 && recv->seq == 0, "the pair shares number 0");
	CHECK_EQ_U64(st.moves, 1, "one move");
	CHECK_EQ_I64(st.max_shift_ns, 51, "rank 1 moved to 1 ns after the send began");
	CHECK_EQ_I64(shift_at(&r[1], 949), 0, "events before the receive stay");
	CHECK_EQ_I64(shift_at(&r[1], 950), 51, "the receive moves");
	CHECK_EQ_I64(shift_at(&r[1], 5000), 51, "and the rest of the rank with it");
	CHECK_EQ_U64(r[0].nshifts, 0, "rank 0 did not move: its receive came after rank 1's moved send");
	release(r, 2);
}

/* a barrier: rank 0 leaves at 20 but rank 1 entered at 200 */
static void barrier_left_early(void)
{
	struct ulma_merge_rank_mpi r[2];
	struct ulma_merge_order_stats st;
	setup(r, 2);
	add(&r[0], 10, ULMA_MPI_COLL_BEGIN, ULMA_MPI_BARRIER, 0, 0, 0, 2);
	add(&r[0], 20, ULMA_MPI_COLL_END, ULMA_MPI_BARRIER, 0, 0, 0, 0);
	add(&r[1], 200, ULMA_MPI_COLL_BEGIN, ULMA_MPI_BARRIER, 0, 0, 0, 2);
	add(&r[1], 210, ULMA_MPI_COLL_END, ULMA_MPI_BARRIER, 0, 0, 0, 0);
	CHECK_EQ_I64(ulma_merge_order(r, 2, &st), 0, "the pass runs");
	CHECK_EQ_I64(shift_at(&r[0], 20), 181, "rank 0 leaves 1 ns after rank 1 entered");
	CHECK_EQ_I64(shift_at(&r[0], 10), 0, "its entry stays");
	CHECK_EQ_U64(r[1].nshifts, 0, "rank 1 needs no move");
	release(r, 2);
}

/* a bcast from root 1: rank 0 may not leave before the root entered; the
 * root waits for nobody */
static void bcast_waits_for_root(void)
{
	struct ulma_merge_rank_mpi r[3];
	struct ulma_merge_order_stats st;
	setup(r, 3);
	add(&r[0], 100, ULMA_MPI_COLL_BEGIN, ULMA_MPI_BCAST, 5, 2, 16, 3);
	add(&r[0], 110, ULMA_MPI_COLL_END, ULMA_MPI_BCAST, 5, 0, 0, 0);
	add(&r[1], 300, ULMA_MPI_COLL_BEGIN, ULMA_MPI_BCAST, 5, 2, 16, 3);
	add(&r[1], 310, ULMA_MPI_COLL_END, ULMA_MPI_BCAST, 5, 0, 0, 0);
	add(&r[2], 500, ULMA_MPI_COLL_BEGIN, ULMA_MPI_BCAST, 5, 2, 16, 3);
	add(&r[2], 510, ULMA_MPI_COLL_END, ULMA_MPI_BCAST, 5, 0, 0, 0);
	CHECK_EQ_I64(ulma_merge_order(r, 3, &st), 0, "the pass runs");
	CHECK_EQ_I64(shift_at(&r[0], 110), 191, "rank 0 leaves after the root entered at 300");
	CHECK_EQ_U64(r[1].nshifts, 0, "the root waits for nobody");
	CHECK_EQ_U64(r[2].nshifts, 0, "rank 2 entered after the root");
	release(r, 3);
}

/* rank 1 crashed: rank 0 received nothing from it but sent one message it
 * never received; and rank 0 holds a receive whose send is missing */
static void crashed_partner(void)
{
	struct ulma_merge_rank_mpi r[2];
	struct ulma_merge_order_stats st;
	setup(r, 2);
	add(&r[0], 100, ULMA_MPI_SEND, 1, ulma_zigzag(7), 0, 8, 0);
	add(&r[0], 200, ULMA_MPI_SEND, 1, ulma_zigzag(7), 0, 8, 0);
	add(&r[0], 300, ULMA_MPI_RECV, 1, ulma_zigzag(8), 0, 8, 0);
	add(&r[1], 150, ULMA_MPI_RECV, 0, ulma_zigzag(7), 0, 8, 0);
	CHECK_EQ_I64(ulma_merge_order(r, 2, &st), 0, "the pass ends although rank 0 waits forever");
	CHECK_EQ_U64(st.messages, 1, "one message matched");
	CHECK_EQ_U64(st.unmatched, 2, "a send and a receive without a partner");
	CHECK_EQ_U64(r[0].unmatched, 2, "both are rank 0's");
	CHECK_EQ_U64(r[1].unmatched, 0, "rank 1 has none");
	CHECK(!r[0].ev[1].matched && r[0].ev[2].seq == ULMA_MERGE_NO_SEQ, "they are marked so");
	release(r, 2);
}

/* tags keep messages apart: a receive for tag 2 matches the send of tag 2
 * even if a tag 1 message was sent first */
static void tags_match_apart(void)
{
	struct ulma_merge_rank_mpi r[2];
	struct ulma_merge_order_stats st;
	setup(r, 2);
	add(&r[0], 100, ULMA_MPI_SEND, 1, ulma_zigzag(1), 0, 8, 0);
	add(&r[0], 110, ULMA_MPI_SEND, 1, ulma_zigzag(2), 0, 99, 0);
	struct ulma_merge_mpi *two = add(&r[1], 500, ULMA_MPI_RECV, 0, ulma_zigzag(2), 0, 99, 0);
	struct ulma_merge_mpi *one = add(&r[1], 600, ULMA_MPI_RECV, 0, ulma_zigzag(1), 0, 8, 0);
	CHECK_EQ_I64(ulma_merge_order(r, 2, &st), 0, "the pass runs");
	CHECK(two->matched && one->matched && st.messages == 2 && st.moves == 0, "both match, nothing moves");
	release(r, 2);
}

/* events too short to be what they say (a corrupt trace's) are passed
 * over, not waited on forever */
static void short_events_pass(void)
{
	struct ulma_merge_rank_mpi r[1];
	struct ulma_merge_order_stats st;
	setup(r, 1);
	add(&r[0], 10, ULMA_MPI_COLL_BEGIN, ULMA_MPI_BARRIER, 0, 0, 0, 1)->nargs = 1;
	add(&r[0], 20, ULMA_MPI_COLL_END, ULMA_MPI_BARRIER, 0, 0, 0, 0)->nargs = 1;
	add(&r[0], 30, ULMA_MPI_SEND, 0, 0, 0, 0, 0)->nargs = 3;
	add(&r[0], 40, ULMA_MPI_RECV, 0, 0, 0, 0, 0)->nargs = 0;
	CHECK_EQ_I64(ulma_merge_order(r, 1, &st), 0, "the pass ends");
	CHECK(st.messages == 0 && st.unmatched == 0 && st.moves == 0, "and finds nothing in them");
	release(r, 1);
}

int main(void)
{
	short_events_pass();
	receive_before_send();
	barrier_left_early();
	bcast_waits_for_root();
	crashed_partner();
	tags_match_apart();
	return tap_done();
}
