/* merge_feed.c - a reader thread per rank feeding the replay of `ulma
 * merge` through bounded queues (merge_feed.h). */
#include "merge_feed.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../core/trace_reader.h"

#define BATCH 64 /* events moved per lock, each way */

struct feed_rank {
	const struct merge_rank *r;
	pthread_t thread;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* the queue changed, or the feed stops */
	struct ulma_merge_mpi q[MERGE_FEED_CAP];
	uint64_t head, tail; /* only grow: q[head % CAP] .. q[tail % CAP] */
	bool done, stop;
	int err;
	/* the reader's batch */
	struct ulma_merge_mpi out[BATCH];
	unsigned nout;
	/* the replayer's batch */
	struct ulma_merge_mpi in[BATCH];
	unsigned nin, iin;
};

struct merge_feed {
	struct feed_rank *ranks;
	uint32_t n;
};

/* Hand the reader's batch over.  Returns 0 or -ECANCELED when the feed stops. */
static int push_batch(struct feed_rank *fr)
{
	unsigned k = 0;
	pthread_mutex_lock(&fr->mu);
	while (k < fr->nout) {
		while (fr->tail - fr->head == MERGE_FEED_CAP && !fr->stop)
			pthread_cond_wait(&fr->cv, &fr->mu);
		if (fr->stop)
			break;
		bool was_empty = fr->tail == fr->head;
		while (k < fr->nout && fr->tail - fr->head < MERGE_FEED_CAP)
			fr->q[fr->tail++ % MERGE_FEED_CAP] = fr->out[k++];
		if (was_empty)
			pthread_cond_broadcast(&fr->cv);
	}
	bool stop = fr->stop;
	pthread_mutex_unlock(&fr->mu);
	fr->nout = 0;
	return stop ? -ECANCELED : 0;
}

static int feed_mpi(void *ctx, const struct ulma_trace_mpi *m)
{
	struct feed_rank *fr = ctx;
	struct ulma_merge_mpi *e = &fr->out[fr->nout++];
	memset(e, 0, sizeof(*e));
	e->ns = merge_rank_ns(fr->r, m->ticks);
	memcpy(e->args, m->args, sizeof(e->args));
	e->op = m->op;
	e->nargs = m->nargs;
	e->seq = ULMA_MERGE_NO_SEQ;
	return fr->nout == BATCH ? push_batch(fr) : 0;
}

static void *reader(void *arg)
{
	struct feed_rank *fr = arg;
	struct ulma_trace_visitor v = {.ctx = fr, .on_mpi = feed_mpi};
	struct ulma_trace_status st;
	int err = ulma_trace_read_path(fr->r->path, &v, &st);
	if (!err && fr->nout)
		err = push_batch(fr);
	pthread_mutex_lock(&fr->mu);
	fr->done = true;
	fr->err = err;
	pthread_cond_broadcast(&fr->cv);
	pthread_mutex_unlock(&fr->mu);
	return NULL;
}

void merge_feed_stop(struct merge_feed *f)
{
	if (!f)
		return;
	for (uint32_t i = 0; i < f->n; i++) {
		struct feed_rank *fr = &f->ranks[i];
		if (!fr->started)
			continue;
		pthread_mutex_lock(&fr->mu);
		fr->stop = true;
		pthread_cond_broadcast(&fr->cv);
		pthread_mutex_unlock(&fr->mu);
	}
	for (uint32_t i = 0; i < f->n; i++) {
		struct feed_rank *fr = &f->ranks[i];
		if (!fr->started)
			continue;
		pthread_join(fr->thread, NULL);
		pthread_cond_destroy(&fr->cv);
		pthread_mutex_destroy(&fr->mu);
	}
	free(f->ranks);
	free(f);
}

int merge_feed_start(struct merge_rank *ranks, uint32_t n, struct merge_feed **out)
{
	*out = NULL;
	struct merge_feed *f = calloc(1, sizeof(*f));
	if (!f || !(f->ranks = calloc(n ? n : 1, sizeof(*f->ranks)))) {
		free(f);
		return -ENOMEM;
	}
	f->n = n;
	for (uint32_t i = 0; i < n; i++) {
		struct feed_rank *fr = &f->ranks[i];
		fr->r = &ranks[i];
		pthread_mutex_init(&fr->mu, NULL);
		pthread_cond_init(&fr->cv, NULL);
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 256 * 1024); /* the reader's frames are small */
		int err = pthread_create(&fr->thread, &attr, reader, fr);
		pthread_attr_destroy(&attr);
		if (err) {
			pthread_cond_destroy(&fr->cv);
			pthread_mutex_destroy(&fr->mu);
			merge_feed_stop(f);
			return -err;
		}
		fr->started = true;
	}
	*out = f;
	return 0;
}

int merge_feed_next(struct merge_feed *f, uint32_t ri, struct ulma_merge_mpi *out)
{
	struct feed_rank *fr = &f->ranks[ri];
	if (fr->iin == fr->nin) {
		pthread_mutex_lock(&fr->mu);
		while (fr->tail == fr->head && !fr->done)
			pthread_cond_wait(&fr->cv, &fr->mu);
		bool was_full = fr->tail - fr->head == MERGE_FEED_CAP;
		unsigned k = 0;
		while (k < BATCH && fr->head < fr->tail)
			fr->in[k++] = fr->q[fr->head++ % MERGE_FEED_CAP];
		if (was_full && k)
			pthread_cond_broadcast(&fr->cv);
		int err = k ? 0 : fr->err;
		pthread_mutex_unlock(&fr->mu);
		fr->nin = k;
		fr->iin = 0;
		if (!k)
			return err ? -EPROTO : 0;
	}
	*out = fr->in[fr->iin++];
	return 1;
}
