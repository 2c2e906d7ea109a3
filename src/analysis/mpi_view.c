/* mpi_view.c - ranks, messages and MPI waits of a merged trace (mpi_view.h). */
#include "mpi_view.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../core/array.h"
#include "../mpi/mpi_names.h"
#include "ulma/shm.h"

struct ulma_mpi_view_thread {
	uint32_t row;    /* rank row + 1, 0: not a rank's */
	uint32_t *stack; /* function of each open frame */
	uint32_t depth, cap;
	uint32_t mpi_depth;   /* MPI frames open */
	uint64_t mpi_since;   /* the outermost opened then */
	uint32_t mpi_caller;  /* the frame under it, UINT32_MAX none */
	uint32_t mpi_call;
};

void ulma_mpi_view_init(struct ulma_mpi_view *v)
{
	memset(v, 0, sizeof(*v));
}

void ulma_mpi_view_free(struct ulma_mpi_view *v)
{
	for (uint32_t i = 0; i < v->nranks; i++)
		free(v->ranks[i].host);
	for (uint32_t i = 0; i < v->nthreads; i++)
		free(v->threads[i].stack);
	free(v->ranks);
	free(v->own_host);
	free(v->messages);
	free(v->is_mpi);
	free(v->threads);
	free(v->sums);
	ulma_idmap_free(&v->message_of);
	ulma_idmap_free(&v->rank_of_pid);
	ulma_idmap_free(&v->caller_sum);
	memset(v, 0, sizeof(*v));
}

int ulma_mpi_view_rank(struct ulma_mpi_view *v, const struct ulma_trace_rank *rk)
{
	if (!rk->merged) { /* a rank's own trace: nothing to match across ranks */
		free(v->own_host);
		if (!(v->own_host = ulma_strndup(rk->host, rk->host_len)))
			return -ENOMEM;
		v->is_rank = true;
		v->own_rank = rk->rank;
		v->own_size = rk->size;
		return 0;
	}
	if (ulma_array_grow((void **)&v->ranks, &v->cap_ranks, v->nranks, sizeof(*v->ranks)) < 0)
		return -ENOMEM;
	struct ulma_mpi_rank_row *r = &v->ranks[v->nranks];
	r->rank = rk->rank;
	r->pid = rk->pid;
	if (!(r->host = ulma_strndup(rk->host, rk->host_len)))
		return -ENOMEM;
	r->offset_init_ns = rk->offset_init_ns;
	r->offset_final_ns = rk->offset_final_ns;
	r->unmatched = rk->unmatched;
	r->first_ticks = UINT64_MAX;
	v->merged = true;
	return ulma_idmap_put(&v->rank_of_pid, (uint64_t)rk->pid + 1, ++v->nranks);
}

int ulma_mpi_view_merge(struct ulma_mpi_view *v, const struct ulma_trace_merge *m)
{
	v->merge = *m;
	return 0;
}

int ulma_mpi_view_func(struct ulma_mpi_view *v, const struct ulma_trace_func *f)
{
	if (ulma_array_grow((void **)&v->is_mpi, &v->nfuncs, f->index, 1) < 0)
		return -ENOMEM;
	v->is_mpi[f->index] = f->kind == ULMA_DEF_ZONE && f->file_len == strlen(ULMA_MPI_FILE) &&
			      memcmp(f->file, ULMA_MPI_FILE, f->file_len) == 0;
	return 0;
}

int ulma_mpi_view_thread(struct ulma_mpi_view *v, const struct ulma_trace_thread *t)
{
	if (!v->merged)
		return 0;
	if (ulma_array_grow((void **)&v->threads, &v->nthreads, t->index, sizeof(*v->threads)) < 0)
		return -ENOMEM;
	uint32_t row = 0;
	ulma_idmap_get(&v->rank_of_pid, (uint64_t)t->pid + 1, &row);
	v->threads[t->index].row = row;
	return 0;
}

static int add_wait(struct ulma_mpi_view *v, uint32_t row, uint32_t caller, uint32_t call, uint64_t ticks)
{
	uint64_t k = ((uint64_t)row << 42 ^ (uint64_t)caller << 21 ^ call) * UINT64_C(0x9e3779b97f4a7c15) | 1;
	uint32_t i;
	if (!ulma_idmap_get(&v->caller_sum, k, &i)) {
		if (ulma_array_grow((void **)&v->sums, &v->cap_sums, v->nsums, sizeof(*v->sums)) < 0)
			return -ENOMEM;
		i = v->nsums++;
		v->sums[i].row = row;
		v->sums[i].func = caller;
		v->sums[i].mpi = call;
		if (ulma_idmap_put(&v->caller_sum, k, i) < 0)
			return -ENOMEM;
	}
	v->sums[i].ticks += ticks;
	return 0;
}

int ulma_mpi_view_events(struct ulma_mpi_view *v, uint32_t thread, const struct ulma_trace_event *ev, size_t n)
{
	if (!v->merged || thread >= v->nthreads || !v->threads[thread].row)
		return 0;
	struct ulma_mpi_view_thread *t = &v->threads[thread];
	struct ulma_mpi_rank_row *r = &v->ranks[t->row - 1];
	for (size_t i = 0; i < n; i++) {
		const struct ulma_trace_event *e = &ev[i];
		if (e->kind == ULMA_EV_OFF)
			continue;
		r->events++;
		if (e->ticks < r->first_ticks)
			r->first_ticks = e->ticks;
		if (e->ticks > r->last_ticks)
			r->last_ticks = e->ticks;
		if (e->kind == ULMA_EV_ENTER) {
			if (e->func < v->nfuncs && v->is_mpi[e->func] && t->mpi_depth++ == 0) {
				t->mpi_since = e->ticks;
				t->mpi_caller = t->depth ? t->stack[t->depth - 1] : UINT32_MAX;
				t->mpi_call = e->func;
			}
			if (ulma_array_grow((void **)&t->stack, &t->cap, t->depth, sizeof(*t->stack)) < 0)
				return -ENOMEM;
			t->stack[t->depth++] = e->func;
		} else if (e->kind == ULMA_EV_EXIT) {
			if (t->depth)
				t->depth--;
			if (e->func < v->nfuncs && v->is_mpi[e->func] && t->mpi_depth && --t->mpi_depth == 0) {
				uint64_t d = e->ticks - t->mpi_since;
				r->mpi_ticks += d;
				if (add_wait(v, t->row - 1, t->mpi_caller, t->mpi_call, d) < 0)
					return -ENOMEM;
			}
		}
	}
	return 0;
}

int ulma_mpi_view_mpi(struct ulma_mpi_view *v, const struct ulma_trace_mpi *m)
{
	if (!v->merged || (m->op != ULMA_MPI_SEND && m->op != ULMA_MPI_RECV) || m->nargs < 5 ||
	    m->thread >= v->nthreads || !v->threads[m->thread].row)
		return 0;
	uint32_t me = v->ranks[v->threads[m->thread].row - 1].rank;
	bool send = m->op == ULMA_MPI_SEND;
	uint32_t src = send ? me : (uint32_t)m->args[0], dst = send ? (uint32_t)m->args[0] : me;
	uint64_t seq = m->args[4];
	uint32_t i;
	uint64_t k = UINT64_C(0xcbf29ce484222325);
	uint64_t parts[5] = {src, dst, m->args[1], m->args[2], seq};
	for (int j = 0; j < 5; j++)
		k = (k ^ parts[j]) * UINT64_C(0x100000001b3) ^ (k >> 29);
	k |= 1;
	/* a message that matched none has no partner to wait for: its own row */
	if (seq == ULMA_MPI_SEQ_NONE || !ulma_idmap_get(&v->message_of, k, &i)) {
		if (v->nmessages == v->cap_messages) {
			uint64_t nc = v->cap_messages ? v->cap_messages * 2 : 256;
			struct ulma_mpi_message *a = realloc(v->messages, nc * sizeof(*a));
			if (!a)
				return -ENOMEM;
			v->messages = a;
			v->cap_messages = nc;
		}
		i = (uint32_t)v->nmessages++;
		struct ulma_mpi_message *msg = &v->messages[i];
		memset(msg, 0, sizeof(*msg));
		msg->src = src;
		msg->dst = dst;
		msg->tag = ulma_unzigzag(m->args[1]);
		msg->comm = m->args[2];
		msg->seq = seq;
		if (seq != ULMA_MPI_SEQ_NONE && ulma_idmap_put(&v->message_of, k, i) < 0)
			return -ENOMEM;
	}
	struct ulma_mpi_message *msg = &v->messages[i];
	if (send) {
		msg->send_ticks = m->ticks;
		msg->bytes = m->args[3];
		msg->have |= 1;
	} else {
		msg->recv_ticks = m->ticks;
		if (!(msg->have & 1))
			msg->bytes = m->args[3];
		msg->have |= 2;
	}
	return 0;
}

void ulma_mpi_view_finish(struct ulma_mpi_view *v)
{
	for (uint32_t i = 0; i < v->nsums; i++) {
		struct ulma_mpi_rank_row *r = &v->ranks[v->sums[i].row];
		struct ulma_mpi_caller c = {v->sums[i].func, v->sums[i].mpi, v->sums[i].ticks};
		for (unsigned k = 0; k < ULMA_MPI_VIEW_CALLERS; k++) { /* insertion into the top few */
			if (c.ticks > r->top[k].ticks) {
				struct ulma_mpi_caller t = r->top[k];
				r->top[k] = c;
				c = t;
			}
		}
	}
}
