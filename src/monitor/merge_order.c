/* merge_order.c - the logical-clock pass of `ulma merge` (merge_order.h):
 * the one-pass replay and the numbering of messages it implies. */
#include "merge_order.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../core/idmap.h"

/* A send not yet received. */
struct in_flight {
	int64_t sent_at; /* its corrected start */
};

/* The messages of one (source, destination, tag, comm). */
struct queue {
	uint64_t src, dst, tag, comm;
	uint32_t sender; /* rank index of src, UINT32_MAX if no rank has it */
	struct in_flight *q;
	size_t head, len, cap;
	uint64_t sent;    /* sends numbered so far */
	uint64_t matched; /* receives matched so far: the sends numbered below */
	bool full;        /* took no more sends once max_in_flight was reached */
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

/* The collectives of one communicator still open: seq base, base+1, ... */
struct comm {
	uint64_t base;
	struct instance *a;
	size_t head, len, cap;
};

struct rank_state {
	uint32_t rank;
	bool has, done;
	struct ulma_merge_mpi cur; /* its next event, when has */
	uint64_t index;            /* cur's in the rank's order */
	uint64_t count;            /* events pulled */
	int64_t shift;             /* current */
	bool pending;              /* a shift not yet given: a later move at its time replaces it */
	int64_t pend_at;
	uint64_t unmatched;
};

struct ulma_merge_replay {
	const struct ulma_merge_replay_io *io;
	struct rank_state *rs;
	uint32_t n;
	struct ulma_idmap rank_index; /* rank + 1 -> rank index */
	struct ulma_idmap queue_of; /* key of (src, dst, tag, comm) -> queue index */
	struct queue *queues;
	size_t nqueues, cap_queues;
	size_t in_flight, max_in_flight;
	struct ulma_idmap comm_of; /* key of comm -> comm index */
	struct comm *comms;
	size_t ncomms, cap_comms;
	struct ulma_idmap coll_count; /* key of (rank, comm) -> collectives begun there */
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

static int grow(void **a, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 16;
	while (nc < need)
		nc *= 2;
	void *b = realloc(*a, nc * size);
	if (!b)
		return -ENOMEM;
	*a = b;
	*cap = nc;
	return 0;
}

/* The queue of (src, dst, tag, comm); NULL (without create) if none. */
static int queue_find(const struct ulma_merge_replay *p, uint64_t src, uint64_t dst, uint64_t tag, uint64_t comm,
		      uint32_t *out)
{
	uint64_t k = key4(src, dst, tag, comm);
	/* hash collisions: probe the keys that follow */
	for (uint64_t salt = 0;; salt++) {
		uint32_t v;
		if (!ulma_idmap_get(&p->queue_of, salt ? mix(k, salt) | 1 : k, &v))
			return -ENOENT;
		const struct queue *q = &p->queues[v];
		if (q->src == src && q->dst == dst && q->tag == tag && q->comm == comm) {
			*out = v;
			return 0;
		}
	}
}

static int queue_get(struct ulma_merge_replay *p, uint64_t src, uint64_t dst, uint64_t tag, uint64_t comm,
		     struct queue **out)
{
	uint32_t v;
	if (queue_find(p, src, dst, tag, comm, &v) == 0) {
		*out = &p->queues[v];
		return 0;
	}
	if (grow((void **)&p->queues, &p->cap_queues, p->nqueues + 1, sizeof(*p->queues)) < 0)
		return -ENOMEM;
	uint64_t k = key4(src, dst, tag, comm), key = k;
	for (uint64_t salt = 1; ulma_idmap_get(&p->queue_of, key, &v); salt++)
		key = mix(k, salt) | 1;
	struct queue *q = &p->queues[p->nqueues];
	memset(q, 0, sizeof(*q));
	q->src = src;
	q->dst = dst;
	q->tag = tag;
	q->comm = comm;
	q->sender = src < UINT32_MAX && ulma_idmap_get(&p->rank_index, src + 1, &v) ? v : UINT32_MAX;
	if (ulma_idmap_put(&p->queue_of, key, (uint32_t)p->nqueues) < 0)
		return -ENOMEM;
	*out = &p->queues[p->nqueues++];
	return 0;
}

static int queue_push(struct queue *q, int64_t at)
{
	if (q->head == q->len) /* empty: start over at the front */
		q->head = q->len = 0;
	if (q->len == q->cap && q->head > q->cap / 2) { /* slide the live part down */
		memmove(q->q, q->q + q->head, (q->len - q->head) * sizeof(*q->q));
		q->len -= q->head;
		q->head = 0;
	}
	if (grow((void **)&q->q, &q->cap, q->len + 1, sizeof(*q->q)) < 0)
		return -ENOMEM;
	q->q[q->len++].sent_at = at;
	return 0;
}

/* The seq-th collective on comm; NULL if it is closed already. */
static int instance_get(struct ulma_merge_replay *p, uint64_t comm, uint64_t seq, struct instance **out)
{
	uint64_t k = key4(comm, 0x636f6c6c, 0, 0);
	uint32_t v;
	if (!ulma_idmap_get(&p->comm_of, k, &v)) {
		if (grow((void **)&p->comms, &p->cap_comms, p->ncomms + 1, sizeof(*p->comms)) < 0)
			return -ENOMEM;
		memset(&p->comms[p->ncomms], 0, sizeof(p->comms[0]));
		v = (uint32_t)p->ncomms++;
		if (ulma_idmap_put(&p->comm_of, k, v) < 0)
			return -ENOMEM;
	}
	struct comm *c = &p->comms[v];
	*out = NULL;
	if (seq < c->base)
		return 0;
	uint64_t at = seq - c->base;
	if (at >= c->len - c->head) {
		if (c->head && c->len == c->cap) {
			memmove(c->a, c->a + c->head, (c->len - c->head) * sizeof(*c->a));
			c->len -= c->head;
			c->head = 0;
		}
		size_t need = c->head + (size_t)at + 1;
		if (at > SIZE_MAX / 2 || grow((void **)&c->a, &c->cap, need, sizeof(*c->a)) < 0)
			return -ENOMEM;
		for (size_t i = c->len; i < need; i++) {
			memset(&c->a[i], 0, sizeof(c->a[i]));
			c->a[i].last_begin = INT64_MIN;
		}
		c->len = need;
	}
	*out = &c->a[c->head + at];
	return 0;
}

/* Close the collectives of comm that every rank has left, oldest first. */
static void instances_close(struct ulma_merge_replay *p, uint64_t comm)
{
	uint32_t v;
	if (!ulma_idmap_get(&p->comm_of, key4(comm, 0x636f6c6c, 0, 0), &v))
		return;
	struct comm *c = &p->comms[v];
	while (c->head < c->len) {
		const struct instance *in = &c->a[c->head];
		if (!in->begun || in->begun < in->size || in->ended < in->size)
			break;
		c->head++;
		c->base++;
	}
}

/* Rank ri moves so that its current event (pass-1 time ns) lands at `at`. */
static int move_to(struct ulma_merge_replay *p, uint32_t ri, int64_t ns, int64_t at)
{
	struct rank_state *r = &p->rs[ri];
	int64_t s = at - ns;
	if (s <= r->shift)
		return 0;
	/* two moves at one time: the later wins (and times never go back) */
	if (r->pending && ns > r->pend_at) {
		int err = p->io->on_shift(p->io->ctx, ri, r->pend_at, r->shift);
		if (err)
			return err;
		r->pend_at = ns;
	} else if (!r->pending) {
		r->pend_at = ns;
	}
	r->pending = true;
	r->shift = s;
	p->st->moves++;
	if (s > p->st->max_shift_ns)
		p->st->max_shift_ns = s;
	return 0;
}

/* The collective count of (rank, comm), bumped when `begin`. */
static int coll_seq(struct ulma_merge_replay *p, uint32_t rank, uint64_t comm, bool begin, uint64_t *seq)
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

static void unmatched(struct ulma_merge_replay *p, uint32_t ri)
{
	if (ri != UINT32_MAX)
		p->rs[ri].unmatched++;
	p->st->unmatched++;
}

enum step { STEP_DONE, STEP_WAIT };

/* Replay rank ri's current event.  `release`: it waits for a partner that
 * will never come; let it go on unmatched.  Returns a step or -errno. */
static int step(struct ulma_merge_replay *p, uint32_t ri, bool release)
{
	struct rank_state *r = &p->rs[ri];
	struct ulma_merge_mpi *e = &r->cur;
	int64_t at = e->ns + r->shift;
	const uint64_t *a = e->args;
	struct queue *q;
	struct instance *in;
	uint64_t seq;
	int err;
	switch (e->op) {
	case ULMA_MPI_SEND:
		if (e->nargs < 4)
			break; /* not a message this ulma knows */
		if (queue_get(p, r->rank, a[0], a[1], a[2], &q) < 0)
			return -ENOMEM;
		q->sent++;
		if (!q->full && p->in_flight >= p->max_in_flight)
			q->full = true;
		if (q->full) {
			p->st->dropped++;
			unmatched(p, ri);
			break;
		}
		if (queue_push(q, at) < 0)
			return -ENOMEM;
		p->in_flight++;
		break;
	case ULMA_MPI_RECV:
		if (e->nargs < 4)
			break;
		if (queue_get(p, a[0], r->rank, a[1], a[2], &q) < 0)
			return -ENOMEM;
		if (q->head == q->len) {
			if (!release && !q->full)
				return STEP_WAIT;
			unmatched(p, ri);
			if ((err = p->io->on_unmatched_recv(p->io->ctx, ri, r->index)))
				return err;
			break;
		}
		int64_t sent = q->q[q->head++].sent_at;
		p->in_flight--;
		q->matched++;
		p->st->messages++;
		if (at <= sent && (err = move_to(p, ri, e->ns, sent + 1)))
			return err;
		break;
	case ULMA_MPI_COLL_BEGIN:
		if (e->nargs < 2)
			break;
		if (coll_seq(p, r->rank, a[1], true, &seq) < 0 || instance_get(p, a[1], seq, &in) < 0)
			return -ENOMEM;
		if (!in)
			break;
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
			return -ENOMEM;
		if (!in)
			break;
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
		if (after != INT64_MIN && at <= after && (err = move_to(p, ri, e->ns, after + 1)))
			return err;
		in->ended++;
		instances_close(p, a[1]);
		break;
	}
	default:
		break;
	}
	r->has = false;
	return STEP_DONE;
}

/* Rank ri's current event, pulled if needed.  Returns 1, 0 at its end, or -errno. */
static int fetch(struct ulma_merge_replay *p, uint32_t ri)
{
	struct rank_state *r = &p->rs[ri];
	if (r->has)
		return 1;
	if (r->done)
		return 0;
	int rc = p->io->next(p->io->ctx, ri, &r->cur);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		r->done = true;
		return 0;
	}
	r->has = true;
	r->index = r->count++;
	return 1;
}

void ulma_merge_replay_free(struct ulma_merge_replay *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nqueues; i++)
		free(p->queues[i].q);
	free(p->queues);
	for (size_t i = 0; i < p->ncomms; i++)
		free(p->comms[i].a);
	free(p->comms);
	ulma_idmap_free(&p->rank_index);
	ulma_idmap_free(&p->queue_of);
	ulma_idmap_free(&p->comm_of);
	ulma_idmap_free(&p->coll_count);
	free(p->rs);
	free(p);
}

static int replay(struct ulma_merge_replay *p)
{
	uint32_t n = p->n;
	int rc;
	for (;;) {
		bool progress = false, left = false;
		for (uint32_t i = 0; i < n; i++) {
			while ((rc = fetch(p, i)) == 1) {
				rc = step(p, i, false);
				if (rc < 0)
					return rc;
				if (rc == STEP_WAIT)
					break;
				progress = true;
			}
			if (rc < 0)
				return rc;
			left |= p->rs[i].has;
		}
		if (!left)
			break;
		if (progress)
			continue;
		/* every rank waits: the earliest waiting event has no partner */
		uint32_t first = UINT32_MAX;
		int64_t first_at = INT64_MAX;
		for (uint32_t i = 0; i < n; i++) {
			if (!p->rs[i].has)
				continue;
			int64_t at = p->rs[i].cur.ns + p->rs[i].shift;
			if (first == UINT32_MAX || at < first_at) {
				first = i;
				first_at = at;
			}
		}
		if ((rc = step(p, first, true)) < 0)
			return rc;
	}
	for (uint32_t i = 0; i < n; i++)
		if (p->rs[i].pending && (rc = p->io->on_shift(p->io->ctx, i, p->rs[i].pend_at, p->rs[i].shift)))
			return rc;
	/* sends left in the queues were never received */
	for (size_t i = 0; i < p->nqueues; i++)
		for (size_t k = p->queues[i].head; k < p->queues[i].len; k++)
			unmatched(p, p->queues[i].sender);
	return 0;
}

int ulma_merge_replay_run(const uint32_t *rank_of, uint32_t n, size_t max_in_flight,
			  const struct ulma_merge_replay_io *io, struct ulma_merge_order_stats *st,
			  struct ulma_merge_replay **out)
{
	memset(st, 0, sizeof(*st));
	*out = NULL;
	struct ulma_merge_replay *p = calloc(1, sizeof(*p));
	if (!p || !(p->rs = calloc(n ? n : 1, sizeof(*p->rs)))) {
		free(p);
		return -ENOMEM;
	}
	p->io = io;
	p->n = n;
	p->st = st;
	p->max_in_flight = max_in_flight;
	int err = 0;
	for (uint32_t i = 0; i < n && !err; i++) {
		p->rs[i].rank = rank_of[i];
		err = ulma_idmap_put(&p->rank_index, (uint64_t)rank_of[i] + 1, i);
	}
	if (!err)
		err = replay(p);
	if (err) {
		ulma_merge_replay_free(p);
		return err;
	}
	*out = p;
	return 0;
}

uint64_t ulma_merge_replay_matched(const struct ulma_merge_replay *p, uint64_t src, uint64_t dst, uint64_t tag,
				   uint64_t comm)
{
	uint32_t v;
	return queue_find(p, src, dst, tag, comm, &v) == 0 ? p->queues[v].matched : 0;
}

uint64_t ulma_merge_replay_unmatched(const struct ulma_merge_replay *p, uint32_t ri)
{
	return ri < p->n ? p->rs[ri].unmatched : 0;
}

/* Per (source, destination, tag, comm): sends and matched receives numbered. */
struct ulma_merge_number_slot {
	uint64_t src, dst, tag, comm;
	uint64_t sent, received;
};

int ulma_merge_number(struct ulma_merge_numbering *num, const struct ulma_merge_replay *p, uint32_t rank,
		      uint8_t op, uint8_t nargs, const uint64_t *args, bool recv_matched, uint64_t *seq)
{
	*seq = ULMA_MERGE_NO_SEQ;
	if ((op != ULMA_MPI_SEND && op != ULMA_MPI_RECV) || nargs < 4)
		return 0;
	bool send = op == ULMA_MPI_SEND;
	if (!send && !recv_matched)
		return 0;
	uint64_t src = send ? rank : args[0], dst = send ? args[0] : rank, tag = args[1], comm = args[2];
	struct ulma_idmap *map = &num->slot_of;
	struct ulma_merge_number_slot *slots = num->slots, *s = NULL;
	uint64_t k = key4(src, dst, tag, comm), key = k;
	uint32_t v;
	for (uint64_t salt = 1; ulma_idmap_get(map, key, &v); salt++) {
		if (slots[v].src == src && slots[v].dst == dst && slots[v].tag == tag && slots[v].comm == comm) {
			s = &slots[v];
			break;
		}
		key = mix(k, salt) | 1;
	}
	if (!s) {
		if (grow((void **)&num->slots, &num->cap, num->n + 1, sizeof(*slots)) < 0 ||
		    ulma_idmap_put(map, key, (uint32_t)num->n) < 0)
			return -ENOMEM;
		s = &num->slots[num->n++];
		*s = (struct ulma_merge_number_slot){src, dst, tag, comm, 0, 0};
	}
	if (!send) {
		*seq = s->received++;
		return 0;
	}
	uint64_t k_sent = s->sent++;
	if (k_sent < ulma_merge_replay_matched(p, src, dst, tag, comm))
		*seq = k_sent;
	return 0;
}

void ulma_merge_numbering_free(struct ulma_merge_numbering *num)
{
	ulma_idmap_free(&num->slot_of);
	free(num->slots);
	memset(num, 0, sizeof(*num));
}
