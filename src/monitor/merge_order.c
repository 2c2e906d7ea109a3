/* merge_order.c - the logical-clock pass of `ulma merge` (merge_order.h). */
#include "merge_order.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../core/idmap.h"

/* Sends not yet received, of one (source, destination, tag, comm). */
struct queue {
	int64_t *sent_at; /* corrected start of each send */
	struct ulma_merge_mpi **send;
	size_t head, len, cap;
	uint64_t next_seq;
};

/* One collective call on one communicator, the seq-th there. */
struct instance {
	uint64_t size;     /* ranks taking part */
	uint64_t begun, ended;
	int64_t last_begin; /* corrected, of all begun so far */
	int64_t root_begin;
	bool root_begun;
	uint64_t root;     /* world rank + 1, 0 none */
};

struct replay {
	struct ulma_merge_rank_mpi *ranks;
	uint32_t n;
	struct ulma_idmap queue_of; /* key of (src, dst, tag, comm) -> queue index + 1 */
	struct queue *queues;
	size_t nqueues, cap_queues;
	struct ulma_idmap inst_of; /* key of (comm, seq) -> instance index */
	struct instance *insts;
	size_t ninsts, cap_insts;
	struct ulma_idmap coll_count; /* key of (rank, comm) -> collectives begun there */
	size_t *cursor;  /* per rank: next event */
	int64_t *shift;  /* per rank: current shift */
	size_t *shift_cap;
	struct ulma_merge_order_stats *st;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2);
	h *= UINT64_C(0xff51afd7ed558ccd);
	return h ^ (h >> 32);
}

static uint64_t key4(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	return mix(mix(mix(mix(1, a), b), c), d) | 1;
}

static int queue_get(struct replay *p, uint64_t src, uint64_t dst, uint64_t tag, uint64_t comm, struct queue **out)
{
	uint64_t k = key4(src, dst, tag, comm);
	uint32_t v;
	if (!ulma_idmap_get(&p->queue_of, k, &v)) {
		if (p->nqueues == p->cap_queues) {
			size_t nc = p->cap_queues ? p->cap_queues * 2 : 64;
			struct queue *q = realloc(p->queues, nc * sizeof(*q));
			if (!q)
				return -ENOMEM;
			p->queues = q;
			p->cap_queues = nc;
		}
		memset(&p->queues[p->nqueues], 0, sizeof(p->queues[0]));
		v = (uint32_t)p->nqueues++;
		if (ulma_idmap_put(&p->queue_of, k, v) < 0)
			return -ENOMEM;
	}
	*out = &p->queues[v];
	return 0;
}

static int queue_push(struct queue *q, int64_t at, struct ulma_merge_mpi *e)
{
	if (q->head == q->len) /* empty: start over at the front */
		q->head = q->len = 0;
	if (q->len == q->cap) {
		if (q->head > q->cap / 2) { /* slide the live part down */
			memmove(q->sent_at, q->sent_at + q->head, (q->len - q->head) * sizeof(*q->sent_at));
			memmove(q->send, q->send + q->head, (q->len - q->head) * sizeof(*q->send));
			q->len -= q->head;
			q->head = 0;
		} else {
			size_t nc = q->cap ? q->cap * 2 : 8;
			int64_t *a = realloc(q->sent_at, nc * sizeof(*a));
			if (!a)
				return -ENOMEM;
			q->sent_at = a;
			struct ulma_merge_mpi **s = realloc(q->send, nc * sizeof(*s));
			if (!s)
				return -ENOMEM;
			q->send = s;
			q->cap = nc;
		}
	}
	q->sent_at[q->len] = at;
	q->send[q->len++] = e;
	return 0;
}

static int instance_get(struct replay *p, uint64_t comm, uint64_t seq, struct instance **out)
{
	uint64_t k = key4(comm, seq, 0x636f6c6c, 0);
	uint32_t v;
	if (!ulma_idmap_get(&p->inst_of, k, &v)) {
		if (p->ninsts == p->cap_insts) {
			size_t nc = p->cap_insts ? p->cap_insts * 2 : 64;
			struct instance *a = realloc(p->insts, nc * sizeof(*a));
			if (!a)
				return -ENOMEM;
			p->insts = a;
			p->cap_insts = nc;
		}
		memset(&p->insts[p->ninsts], 0, sizeof(p->insts[0]));
		p->insts[p->ninsts].last_begin = INT64_MIN;
		v = (uint32_t)p->ninsts++;
		if (ulma_idmap_put(&p->inst_of, k, v) < 0)
			return -ENOMEM;
	}
	*out = &p->insts[v];
	return 0;
}

/* Rank ri moves so that its event e (pass-1 time e->ns) lands at `at`. */
static int move_to(struct replay *p, uint32_t ri, const struct ulma_merge_mpi *e, int64_t at)
{
	struct ulma_merge_rank_mpi *r = &p->ranks[ri];
	int64_t s = at - e->ns;
	if (s <= p->shift[ri])
		return 0;
	if (r->nshifts == p->shift_cap[ri]) {
		size_t nc = p->shift_cap[ri] ? p->shift_cap[ri] * 2 : 16;
		struct ulma_merge_shift *a = realloc(r->shifts, nc * sizeof(*a));
		if (!a)
			return -ENOMEM;
		r->shifts = a;
		p->shift_cap[ri] = nc;
	}
	if (r->nshifts && r->shifts[r->nshifts - 1].at_ns == e->ns)
		r->nshifts--; /* two moves at one time: the later wins */
	r->shifts[r->nshifts++] = (struct ulma_merge_shift){e->ns, s};
	p->shift[ri] = s;
	p->st->moves++;
	if (s > p->st->max_shift_ns)
		p->st->max_shift_ns = s;
	return 0;
}

/* The collective count of (rank, comm), bumped when `begin`. */
static int coll_seq(struct replay *p, uint32_t rank, uint64_t comm, bool begin, uint64_t *seq)
{
	uint64_t k = key4(rank, comm, 0x73657121, 0);
	uint32_t v = 0;
	ulma_idmap_get(&p->coll_count, k, &v);
	if (begin) {
		*seq = v;
		return ulma_idmap_put(&p->coll_count, k, v + 1);
	}
	*seq = v ? v - 1 : 0;
	return 0;
}

enum step { STEP_DONE, STEP_WAIT, STEP_ERROR };

/* Replay rank ri's next event.  `release`: it waits for a partner that
 * will never come; let it go on unmatched. */
static enum step step(struct replay *p, uint32_t ri, bool release)
{
	struct ulma_merge_rank_mpi *r = &p->ranks[ri];
	struct ulma_merge_mpi *e = &r->ev[p->cursor[ri]];
	int64_t at = e->ns + p->shift[ri];
	const uint64_t *a = e->args;
	struct queue *q;
	struct instance *in;
	uint64_t seq;
	switch (e->op) {
	case ULMA_MPI_SEND:
		if (e->nargs < 4)
			break; /* not a message this ulma knows */
		if (queue_get(p, r->rank, a[0], a[1], a[2], &q) < 0)
			return STEP_ERROR;
		e->seq = q->next_seq++;
		if (queue_push(q, at, e) < 0)
			return STEP_ERROR;
		break;
	case ULMA_MPI_RECV:
		if (e->nargs < 4)
			break;
		if (queue_get(p, a[0], r->rank, a[1], a[2], &q) < 0)
			return STEP_ERROR;
		if (q->head == q->len) {
			if (!release)
				return STEP_WAIT;
			e->seq = ULMA_MERGE_NO_SEQ;
			r->unmatched++;
			p->st->unmatched++;
			break;
		}
		struct ulma_merge_mpi *s = q->send[q->head];
		int64_t sent = q->sent_at[q->head++];
		s->matched = e->matched = true;
		e->seq = s->seq;
		p->st->messages++;
		if (at <= sent && move_to(p, ri, e, sent + 1) < 0)
			return STEP_ERROR;
		break;
	case ULMA_MPI_COLL_BEGIN:
		if (e->nargs < 2)
			break;
		if (coll_seq(p, r->rank, a[1], true, &seq) < 0 || instance_get(p, a[1], seq, &in) < 0)
			return STEP_ERROR;
		in->size = e->nargs >= 5 && a[4] ? a[4] : p->n;
		in->root = e->nargs >= 3 ? a[2] : 0;
		in->begun++;
		if (at > in->last_begin)
			in->last_begin = at;
		if (in->root && in->root == (uint64_t)r->rank + 1) {
			in->root_begin = at;
			in->root_begun = true;
		}
		break;
	case ULMA_MPI_COLL_END: {
		if (e->nargs < 2)
			break;
		if (coll_seq(p, r->rank, a[1], false, &seq) < 0 || instance_get(p, a[1], seq, &in) < 0)
			return STEP_ERROR;
		uint64_t which = a[0];
		bool root = in->root && in->root == (uint64_t)r->rank + 1;
		bool from_root = which == ULMA_MPI_BCAST || which == ULMA_MPI_SCATTER;
		bool to_root = which == ULMA_MPI_REDUCE || which == ULMA_MPI_GATHER;
		int64_t after = INT64_MIN;
		if (from_root && in->root && !root) {
			if (!in->root_begun && !release)
				return STEP_WAIT;
			if (in->root_begun)
				after = in->root_begin;
		} else if (!from_root && (!to_root || root)) {
			if (in->begun < in->size && !release)
				return STEP_WAIT;
			after = in->last_begin;
		}
		if (after != INT64_MIN && at <= after && move_to(p, ri, e, after + 1) < 0)
			return STEP_ERROR;
		in->ended++;
		break;
	}
	default:
		break;
	}
	p->cursor[ri]++;
	return STEP_DONE;
}

static void replay_free(struct replay *p)
{
	for (size_t i = 0; i < p->nqueues; i++) {
		free(p->queues[i].sent_at);
		free(p->queues[i].send);
	}
	free(p->queues);
	free(p->insts);
	ulma_idmap_free(&p->queue_of);
	ulma_idmap_free(&p->inst_of);
	ulma_idmap_free(&p->coll_count);
	free(p->cursor);
	free(p->shift);
	free(p->shift_cap);
}

int ulma_merge_order(struct ulma_merge_rank_mpi *ranks, uint32_t n, struct ulma_merge_order_stats *st)
{
	struct replay p = {.ranks = ranks, .n = n, .st = st};
	memset(st, 0, sizeof(*st));
	p.cursor = calloc(n ? n : 1, sizeof(*p.cursor));
	p.shift = calloc(n ? n : 1, sizeof(*p.shift));
	p.shift_cap = calloc(n ? n : 1, sizeof(*p.shift_cap));
	int err = 0;
	if (!p.cursor || !p.shift || !p.shift_cap) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		free(ranks[i].shifts);
		ranks[i].shifts = NULL;
		ranks[i].nshifts = 0;
		ranks[i].unmatched = 0;
	}
	for (;;) {
		bool progress = false, left = false;
		for (uint32_t i = 0; i < n; i++) {
			while (p.cursor[i] < ranks[i].n) {
				enum step s = step(&p, i, false);
				if (s == STEP_ERROR) {
					err = -ENOMEM;
					goto out;
				}
				if (s == STEP_WAIT)
					break;
				progress = true;
			}
			left |= p.cursor[i] < ranks[i].n;
		}
		if (!left)
			break;
		if (progress)
			continue;
		/* every rank waits: the earliest waiting event has no partner */
		uint32_t first = UINT32_MAX;
		int64_t first_at = INT64_MAX;
		for (uint32_t i = 0; i < n; i++) {
			if (p.cursor[i] >= ranks[i].n)
				continue;
			int64_t at = ranks[i].ev[p.cursor[i]].ns + p.shift[i];
			if (first == UINT32_MAX || at < first_at) {
				first = i;
				first_at = at;
			}
		}
		if (step(&p, first, true) == STEP_ERROR) {
			err = -ENOMEM;
			goto out;
		}
	}
	/* sends left in the queues were never received */
	for (size_t i = 0; i < p.nqueues; i++) {
		struct queue *q = &p.queues[i];
		for (size_t k = q->head; k < q->len; k++) {
			st->unmatched++;
			for (uint32_t j = 0; j < n; j++) /* its rank: the one whose events hold it */
				if (q->send[k] >= ranks[j].ev && q->send[k] < ranks[j].ev + ranks[j].n)
					ranks[j].unmatched++;
		}
	}
out:
	replay_free(&p);
	return err;
}

void ulma_merge_rank_mpi_free(struct ulma_merge_rank_mpi *r)
{
	free(r->ev);
	free(r->shifts);
	r->ev = NULL;
	r->shifts = NULL;
	r->n = r->nshifts = 0;
}
