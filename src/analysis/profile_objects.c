/* profile_objects.c - objects per type and per function (see
 * profile_objects.h). */
#include "profile_objects.h"

#include <stdlib.h>
#include <string.h>

#include "../core/array.h"
#include "profile_memory.h"

#define INDEX_MIN 256u

void ulma_profile_objects_free(struct ulma_profile_objects *o)
{
	if (!o)
		return;
	free(o->rows);
	free(o->index);
	free(o->types);
	memset(o, 0, sizeof(*o));
}

static uint32_t slot_of(uint32_t func, uint32_t type, uint32_t mask)
{
	return (uint32_t)ulma_mem_mix((uint64_t)func << 32 | type) & mask;
}

static int grow_index(struct ulma_profile_objects *o)
{
	uint32_t cap = o->index ? (o->index_mask + 1) * 2 : INDEX_MIN;
	uint32_t *idx = calloc(cap, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (uint32_t r = 0; r < o->nrows; r++) {
		uint32_t h = slot_of(o->rows[r].func, o->rows[r].type, cap - 1);
		while (idx[h])
			h = (h + 1) & (cap - 1);
		idx[h] = r + 1;
	}
	free(o->index);
	o->index = idx;
	o->index_mask = cap - 1;
	return 0;
}

/* The row of (func, type), made if new; NULL if out of memory. */
static struct ulma_obj_count *row(struct ulma_profile_objects *o, uint32_t func, uint32_t type)
{
	if ((!o->index || (o->nrows + 1) * 2 > o->index_mask + 1) && grow_index(o))
		return NULL;
	uint32_t h = slot_of(func, type, o->index_mask);
	for (uint32_t v; (v = o->index[h]) != 0; h = (h + 1) & o->index_mask)
		if (o->rows[v - 1].func == func && o->rows[v - 1].type == type)
			return &o->rows[v - 1];
	if (o->nrows == o->cap_rows && ulma_array_grow((void **)&o->rows, &o->cap_rows, o->nrows, sizeof(*o->rows)))
		return NULL;
	o->rows[o->nrows] = (struct ulma_obj_count){func, type, 0, 0};
	o->index[h] = ++o->nrows;
	return &o->rows[o->nrows - 1];
}

int ulma_profile_object(struct ulma_profile *p, uint32_t thread, uint32_t type, bool created)
{
	struct ulma_profile_objects *o = &p->memory->objects;
	const struct ulma_thread_row *t = &p->threads[thread];
	if (type >= o->ntypes) {
		uint32_t n = o->ntypes;
		if (ulma_array_grow((void **)&o->types, &o->ntypes, type, sizeof(*o->types)))
			return -ENOMEM;
		for (uint32_t i = n; i < o->ntypes; i++)
			o->types[i] = (struct ulma_obj_count){ULMA_OBJ_NO_FUNC, i, 0, 0};
	}
	struct ulma_obj_count *r = row(o, t->depth ? t->top : ULMA_OBJ_NO_FUNC, type);
	if (!r)
		return -ENOMEM;
	p->memory->objects_recorded = true;
	if (created) {
		r->created++;
		o->types[type].created++;
		o->created++;
	} else {
		r->destroyed++;
		o->types[type].destroyed++;
		o->destroyed++;
	}
	return 0;
}

static int by_live(const void *a, const void *b)
{
	const struct ulma_obj_count *x = a, *y = b;
	int64_t lx = (int64_t)(x->created - x->destroyed), ly = (int64_t)(y->created - y->destroyed);
	if (lx != ly)
		return lx < ly ? 1 : -1;
	if (x->created != y->created)
		return x->created < y->created ? 1 : -1;
	return x->type < y->type ? -1 : x->type > y->type;
}

static int by_func(const void *a, const void *b)
{
	const struct ulma_obj_count *x = a, *y = b;
	if (x->func != y->func)
		return x->func < y->func ? -1 : 1;
	if (x->created != y->created)
		return x->created < y->created ? 1 : -1;
	if (x->destroyed != y->destroyed)
		return x->destroyed < y->destroyed ? 1 : -1;
	return x->type < y->type ? -1 : x->type > y->type;
}

int ulma_profile_objects_by_type(const struct ulma_profile *p, struct ulma_obj_count **out, uint32_t *n)
{
	*out = NULL;
	*n = 0;
	const struct ulma_profile_objects *o = p->memory ? &p->memory->objects : NULL;
	if (!o || !o->ntypes)
		return 0;
	struct ulma_obj_count *v = malloc(o->ntypes * sizeof(*v));
	if (!v)
		return -ENOMEM;
	uint32_t k = 0;
	for (uint32_t i = 0; i < o->ntypes; i++)
		if (o->types[i].created || o->types[i].destroyed)
			v[k++] = o->types[i];
	qsort(v, k, sizeof(*v), by_live);
	*out = v;
	*n = k;
	return 0;
}

int ulma_profile_objects_by_func(const struct ulma_profile *p, struct ulma_obj_count **out, uint32_t *n)
{
	*out = NULL;
	*n = 0;
	const struct ulma_profile_objects *o = p->memory ? &p->memory->objects : NULL;
	if (!o || !o->nrows)
		return 0;
	struct ulma_obj_count *v = malloc(o->nrows * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, o->rows, o->nrows * sizeof(*v));
	qsort(v, o->nrows, sizeof(*v), by_func);
	*out = v;
	*n = o->nrows;
	return 0;
}

uint32_t ulma_obj_rows_of(const struct ulma_obj_count *rows, uint32_t n, uint32_t f, uint32_t *count)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) { /* the first row of a function >= f */
		uint32_t mid = lo + (hi - lo) / 2;
		if (rows[mid].func < f)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint32_t end = lo;
	while (end < n && rows[end].func == f)
		end++;
	*count = end - lo;
	return lo;
}
