/* export_objects.c - objects over time for the timeline exports (see
 * export_objects.h). */
#include "export_objects.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/array.h"
#include "ulma/trace_format.h"

void ulma_xobjects_free(struct ulma_xobjects *x)
{
	for (uint32_t i = 0; i < x->n; i++)
		ulma_series_free(&x->t[i].s);
	free(x->t);
	ulma_idmap_free(&x->index);
	memset(x, 0, sizeof(*x));
}

int ulma_xobjects_add(struct ulma_xobjects *x, const struct ulma_walk *w, uint32_t thread,
		      const struct ulma_trace_object *o, uint64_t at_ns)
{
	uint32_t pid = w->threads[thread].pid, type = w->funcs[o->type].key, i;
	uint64_t key = ((uint64_t)pid << 32 | type) + 1;
	if (!ulma_idmap_get(&x->index, key, &i)) {
		if (x->n == ULMA_XOBJ_TRACKS) {
			x->left_out++;
			return 0;
		}
		if (x->n == x->cap && ulma_array_grow((void **)&x->t, &x->cap, x->n, sizeof(*x->t)))
			return -ENOMEM;
		int err = ulma_idmap_put(&x->index, key, x->n);
		if (err)
			return err;
		i = x->n++;
		x->t[i] = (struct ulma_xobj_track){.pid = pid, .type = type, .thread = thread};
		ulma_series_init(&x->t[i].s, ULMA_XOBJ_BUCKETS);
	}
	struct ulma_xobj_track *t = &x->t[i];
	t->net += o->kind == ULMA_EXT_OBJ_NEW ? 1 : -1;
	return ulma_series_add(&t->s, at_ns, (double)t->net);
}

static int by_process_then_peak(const void *a, const void *b)
{
	const struct ulma_xobj_track *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->s.max != y->s.max)
		return x->s.max < y->s.max ? 1 : -1;
	return x->type < y->type ? -1 : x->type > y->type;
}

void ulma_xobjects_choose(struct ulma_xobjects *x)
{
	if (!x->n)
		return;
	qsort(x->t, x->n, sizeof(*x->t), by_process_then_peak); /* the index is stale from here */
	uint32_t kept = 0;
	for (uint32_t i = 0; i < x->n; i++) {
		if (i && x->t[i].pid != x->t[i - 1].pid)
			kept = 0;
		x->t[i].drawn = kept < ULMA_XOBJ_TOP && x->t[i].s.max > 0;
		kept += x->t[i].drawn;
	}
}

static int by_time(const void *a, const void *b)
{
	const struct ulma_xobj_point *x = a, *y = b;
	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int ulma_xobjects_merged(const struct ulma_xobjects *x, uint32_t first, uint32_t *end, struct ulma_xobj_point **out,
			 uint32_t *n)
{
	struct ulma_series_point pts[2 * ULMA_XOBJ_BUCKETS + 1];
	uint32_t last = first, room = 0;
	while (last < x->n && x->t[last].pid == x->t[first].pid) {
		room += x->t[last].drawn ? 2 * ULMA_XOBJ_BUCKETS + 1 : 0;
		last++;
	}
	*end = last;
	*out = NULL;
	*n = 0;
	if (!room)
		return 0;
	struct ulma_xobj_point *p = malloc((size_t)room * sizeof(*p));
	if (!p)
		return -ENOMEM;
	for (uint32_t i = first; i < last; i++) {
		if (!x->t[i].drawn)
			continue;
		uint32_t k = ulma_series_points(&x->t[i].s, pts);
		for (uint32_t j = 0; j < k; j++, ++*n)
			p[*n] = (struct ulma_xobj_point){pts[j].at, pts[j].v, i, *n};
	}
	qsort(p, *n, sizeof(*p), by_time);
	*out = p;
	return 0;
}

void ulma_xobjects_name(const struct ulma_walk *w, const struct ulma_xobj_track *t, char *out, size_t cap)
{
	snprintf(out, cap, "objects: %s (created - destroyed)", w->funcs[t->type].name);
}
