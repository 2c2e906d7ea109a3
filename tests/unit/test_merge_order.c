/* test_merge_order.c - the logical-clock pass of `ulma merge`
 * (src/monitor/merge_order.h) on hand-made ranks with known answers:
 * a receive the clocks put before its send, a barrier left before the
 * last rank entered it, a bcast, a receive whose sender crashed, a send
 * nobody received, ranks that need no move, sends past the cap on
 * messages in flight, and many collectives with nothing left open.
 * The ranks' events are held in arrays here and fed to the replay as
 * `ulma merge` feeds it from the traces; the messages are numbered as
 * merge_write.c numbers them. */
#include "tap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/merge_order.h"

#define MAXEV 16

static struct ulma_merge_mpi evs[4][MAXEV];

struct ulma_merge_rank_mpi {
	uint32_t rank;
	struct ulma_merge_mpi *ev;
	size_t n, pos;
	/* results */
	struct shift { int64_t at_ns, shift_ns; } shifts[MAXEV];
	size_t nshifts;
	uint64_t unmatched;
};

struct feed {
	struct ulma_merge_rank_mpi *r;
	int bad; /* a result the replay's contract rules out */
};

static int next(void *ctx, uint32_t ri, struct ulma_merge_mpi *out)
{
	struct ulma_merge_rank_mpi *r = &((struct feed *)ctx)->r[ri];
	if (r->pos == r->n)
		return 0;
	*out = r->ev[r->pos++];
	return 1;
}

static int on_shift(void *ctx, uint32_t ri, int64_t at_ns, int64_t shift_ns)
{
	struct feed *f = ctx;
	struct ulma_merge_rank_mpi *r = &f->r[ri];
	if (r->nshifts == MAXEV ||
	    (r->nshifts && (r->shifts[r->nshifts - 1].at_ns >= at_ns || r->shifts[r->nshifts - 1].shift_ns >= shift_ns)))
		f->bad++;
	else
		r->shifts[r->nshifts++] = (struct shift){at_ns, shift_ns};
	return 0;
}

static int on_unmatched_recv(void *ctx, uint32_t ri, uint64_t index)
{
	struct feed *f = ctx;
	if (index >= f->r[ri].n || f->r[ri].ev[index].op != ULMA_MPI_RECV)
		f->bad++;
	else
		f->r[ri].ev[index].matched = false;
	return 0;
}

/* The replay of r[0..n), with at most max_in_flight sends held; then
 * every event's matched and seq as merge_write.c numbers them. */
static int order_capped(struct ulma_merge_rank_mpi *r, uint32_t n, size_t max_in_flight,
			struct ulma_merge_order_stats *st)
{
	struct feed f = {.r = r};
	uint32_t rank_of[4];
	for (uint32_t i = 0; i < n; i++) {
		rank_of[i] = r[i].rank;
		for (size_t k = 0; k < r[i].n; k++)
			r[i].ev[k].matched = true; /* receives until said otherwise */
	}
	struct ulma_merge_replay_io io = {.ctx = &f, .next = next, .on_shift = on_shift,
					  .on_unmatched_recv = on_unmatched_recv};
	struct ulma_merge_replay *p;
	int err = ulma_merge_replay_run(rank_of, n, max_in_flight, &io, st, &p);
	if (err)
		return err;
	struct ulma_merge_numbering num = {0};
	for (uint32_t i = 0; i < n && !err; i++) {
		r[i].unmatched = ulma_merge_replay_unmatched(p, i);
		for (size_t k = 0; k < r[i].n && !err; k++) {
			struct ulma_merge_mpi *e = &r[i].ev[k];
			err = ulma_merge_number(&num, p, r[i].rank, e->op, e->nargs, e->args, e->matched, &e->seq);
			e->matched = e->seq != ULMA_MERGE_NO_SEQ;
		}
	}
	ulma_merge_numbering_free(&num);
	ulma_merge_replay_free(p);
	return err ? err : f.bad ? -EINVAL : 0;
}

static int ulma_merge_order(struct ulma_merge_rank_mpi *r, uint32_t n, struct ulma_merge_order_stats *st)
{
	return order_capped(r, n, 1000, st);
}

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

static int64_t shift_at(const struct ulma_merge_rank_mpi *r, int64_t ns)
{
	int64_t s = 0;
	for (size_t i = 0; i < r->nshifts && r->shifts[i].at_ns <= ns; i++)
		s = r->shifts[i].shift_ns;
	return s;
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
}

/* with room for 2 sends in flight, the third of 3 is not held: it and
 * the receive that would have matched it are unmatched, the first two
 * match, numbered 0 and 1 */
static void in_flight_capped(void)
{
	struct ulma_merge_rank_mpi r[2];
	struct ulma_merge_order_stats st;
	setup(r, 2);
	for (int k = 0; k < 3; k++)
		add(&r[0], 100 + k, ULMA_MPI_SEND, 1, ulma_zigzag(7), 0, 8, 0);
	for (int k = 0; k < 3; k++)
		add(&r[1], 200 + k, ULMA_MPI_RECV, 0, ulma_zigzag(7), 0, 8, 0);
	add(&r[1], 300, ULMA_MPI_SEND, 0, ulma_zigzag(7), 0, 8, 0);
	add(&r[0], 400, ULMA_MPI_RECV, 1, ulma_zigzag(7), 0, 8, 0);
	CHECK_EQ_I64(order_capped(r, 2, 2, &st), 0, "the pass runs");
	CHECK_EQ_U64(st.dropped, 1, "one send past the cap");
	CHECK_EQ_U64(st.messages, 3, "two of the queue that filled match, and the message back");
	CHECK_EQ_U64(st.unmatched, 2, "the send not held and the receive that found its queue empty");
	CHECK(r[0].ev[0].seq == 0 && r[0].ev[1].seq == 1 && r[1].ev[0].seq == 0 && r[1].ev[1].seq == 1,
	      "the matched pairs share numbers 0 and 1");
	CHECK(!r[0].ev[2].matched && !r[1].ev[2].matched, "the third send and receive are marked unmatched");
	CHECK(r[1].ev[3].matched && r[0].ev[3].matched, "another queue is not affected");
	CHECK(r[0].unmatched == 1 && r[1].unmatched == 1, "one each");
}

/* 7 barriers in turn (each closed once both ranks left it): the late
 * rank's entry holds the other back once, and the move holds after */
static void collectives_in_turn(void)
{
	struct ulma_merge_rank_mpi r[2];
	struct ulma_merge_order_stats st;
	setup(r, 2);
	for (int k = 0; k < 7; k++) {
		add(&r[0], 1000 * k, ULMA_MPI_COLL_BEGIN, ULMA_MPI_BARRIER, 0, 0, 0, 2);
		add(&r[0], 1000 * k + 10, ULMA_MPI_COLL_END, ULMA_MPI_BARRIER, 0, 0, 0, 0);
		add(&r[1], 1000 * k + 50, ULMA_MPI_COLL_BEGIN, ULMA_MPI_BARRIER, 0, 0, 0, 2);
		add(&r[1], 1000 * k + 60, ULMA_MPI_COLL_END, ULMA_MPI_BARRIER, 0, 0, 0, 0);
	}
	CHECK_EQ_I64(ulma_merge_order(r, 2, &st), 0, "the pass runs");
	CHECK_EQ_U64(st.moves, 1, "rank 0 moved once, and its move held for the rest");
	CHECK_EQ_I64(shift_at(&r[0], 6010), 41, "the last barrier is still left after rank 1 entered it");
	CHECK_EQ_U64(r[1].nshifts, 0, "rank 1 never moved");
}

int main(void)
{
	in_flight_capped();
	collectives_in_turn();
	short_events_pass();
	receive_before_send();
	barrier_left_early();
	bcast_waits_for_root();
	crashed_partner();
	tags_match_apart();
	return tap_done();
}
