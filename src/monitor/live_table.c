/* live_table.c - snapshots of the profile for the live view (see live_table.h). */
#include "live_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void ulma_live_table_init(struct ulma_live_table *t)
{
	memset(t, 0, sizeof(*t));
}

void ulma_live_table_free(struct ulma_live_table *t)
{
	free(t->base);
	free(t->cur);
	free(t->stamp);
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

static int reserve(struct ulma_live_table *t, uint32_t nfuncs)
{
	if (nfuncs <= t->cap)
		return 0;
	uint32_t cap = t->cap ? t->cap : 256;
	while (cap < nfuncs)
		cap *= 2;
	struct ulma_live_counts *cur = realloc(t->cur, cap * sizeof(*cur));
	if (!cur)
		return -ENOMEM;
	t->cur = cur;
	uint32_t *stamp = realloc(t->stamp, cap * sizeof(*stamp));
	if (!stamp)
		return -ENOMEM;
	memset(stamp + t->cap, 0, (cap - t->cap) * sizeof(*stamp));
	t->stamp = stamp;
	struct ulma_live_row *rows = realloc(t->rows, cap * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	t->rows = rows;
	t->cap = t->cap_rows = cap;
	return 0;
}

/* Fresh mark for "this function has an open frame lower in this stack". */
static uint32_t next_generation(struct ulma_live_table *t)
{
	if (++t->generation == 0) {
		memset(t->stamp, 0, t->cap * sizeof(*t->stamp));
		t->generation = 1;
	}
	return t->generation;
}

static uint64_t minus(uint64_t a, uint64_t b)
{
	/* never negative: a frame open at the clear may return with an earlier
	 * time than the clock read then (its record was still in the ring) */
	return a > b ? a - b : 0;
}

/* cur = the profile's completed frames plus its open frames up to now. */
static void measure(struct ulma_live_table *t, const struct ulma_profile *p, uint64_t now)
{
	for (uint32_t f = 0; f < p->nfuncs; f++) {
		const struct ulma_func_row *r = &p->funcs[f];
		t->cur[f] = (struct ulma_live_counts){r->calls, r->total_ticks, r->self_ticks, r->self_cpu_ns,
						      r->self_wait_ns};
	}
	for (uint32_t i = 0; i < p->nthreads; i++) {
		const struct ulma_thread_row *th = &p->threads[i];
		if (th->depth == 0)
			continue;
		uint64_t end = now > th->last_ticks ? now : th->last_ticks;
		uint32_t gen = next_generation(t);
		for (uint32_t d = 0; d < th->depth; d++) {
			const struct ulma_frame *fr = &th->stack[d];
			struct ulma_live_counts *c = &t->cur[fr->func];
			/* the part of this frame not spent in finished callees or the open one above */
			const struct ulma_frame *above = d + 1 < th->depth ? &th->stack[d + 1] : NULL;
			uint64_t until = above ? above->start : end;
			uint64_t cpu_until = above ? above->cpu0 : th->last_cpu;
			uint64_t wait_until = above ? above->wait0 : th->last_wait;
			c->self_ticks += minus(minus(until, fr->start), fr->child);
			c->self_cpu_ns += minus(minus(cpu_until, fr->cpu0), fr->child_cpu);
			c->self_wait_ns += minus(minus(wait_until, fr->wait0), fr->child_wait);
			if (t->stamp[fr->func] != gen) {
				t->stamp[fr->func] = gen; /* outermost frame of this function */
				c->total_ticks += minus(end, fr->start);
			}
		}
	}
}

int ulma_live_table_update(struct ulma_live_table *t, const struct ulma_profile *p, uint64_t now_ticks)
{
	if (reserve(t, p->nfuncs))
		return -ENOMEM;
	measure(t, p, now_ticks);
	t->nrows = 0;
	t->self_sum = 0;
	for (uint32_t f = 0; f < p->nfuncs; f++) {
		struct ulma_live_row r = {f, t->cur[f]};
		if (f < t->nbase) {
			const struct ulma_live_counts *b = &t->base[f];
			r.n.calls = minus(r.n.calls, b->calls);
			r.n.total_ticks = minus(r.n.total_ticks, b->total_ticks);
			r.n.self_ticks = minus(r.n.self_ticks, b->self_ticks);
			r.n.self_cpu_ns = minus(r.n.self_cpu_ns, b->self_cpu_ns);
			r.n.self_wait_ns = minus(r.n.self_wait_ns, b->self_wait_ns);
		}
		if (r.n.calls == 0 && r.n.total_ticks == 0 && r.n.self_ticks == 0)
			continue;
		t->rows[t->nrows++] = r;
		t->self_sum += r.n.self_ticks;
	}
	return 0;
}

int ulma_live_table_clear(struct ulma_live_table *t, const struct ulma_profile *p, uint64_t now_ticks)
{
	if (reserve(t, p->nfuncs))
		return -ENOMEM;
	if (p->nfuncs > t->nbase) {
		struct ulma_live_counts *b = realloc(t->base, t->cap * sizeof(*b));
		if (!b)
			return -ENOMEM;
		t->base = b;
	}
	measure(t, p, now_ticks);
	if (p->nfuncs)
		memcpy(t->base, t->cur, p->nfuncs * sizeof(*t->base));
	t->nbase = p->nfuncs;
	t->events_base = p->events;
	t->lost_base = p->lost;
	return ulma_live_table_update(t, p, now_ticks);
}

struct ulma_live_split ulma_live_split_of(uint64_t self_ns, uint64_t cpu_ns, uint64_t wait_ns)
{
	uint64_t cpu = cpu_ns < self_ns ? cpu_ns : self_ns;
	uint64_t run = wait_ns < self_ns - cpu ? wait_ns : self_ns - cpu;
	double d = (double)self_ns;
	return (struct ulma_live_split){100.0 * (double)cpu / d, 100.0 * (double)run / d,
					100.0 * (double)(self_ns - cpu - run) / d};
}

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a == b ? 0 : a < b ? 1 : -1;
}

static int compare(const void *pa, const void *pb, void *ctx)
{
	const struct ulma_live_row *a = pa, *b = pb;
	const struct ulma_profile *p = ((const void **)ctx)[0];
	enum ulma_live_sort key = *(const enum ulma_live_sort *)((const void **)ctx)[1];
	int c = 0;
	switch (key) {
	case ULMA_SORT_TOTAL:
		c = cmp_u64_desc(a->n.total_ticks, b->n.total_ticks);
		break;
	case ULMA_SORT_CALLS:
		c = cmp_u64_desc(a->n.calls, b->n.calls);
		break;
	case ULMA_SORT_CPU:
		c = cmp_u64_desc(a->n.self_cpu_ns, b->n.self_cpu_ns);
		break;
	case ULMA_SORT_NAME: {
		const char *x = p->funcs[a->func].name, *y = p->funcs[b->func].name;
		c = strcmp(x ? x : "", y ? y : "");
		break;
	}
	default:
		break;
	}
	if (c == 0)
		c = cmp_u64_desc(a->n.self_ticks, b->n.self_ticks);
	if (c == 0)
		c = a->func < b->func ? -1 : a->func > b->func;
	return c;
}

void ulma_live_table_sort(struct ulma_live_table *t, const struct ulma_profile *p, enum ulma_live_sort key)
{
	const void *ctx[2] = {p, &key};
	if (t->nrows > 1)
		qsort_r(t->rows, t->nrows, sizeof(*t->rows), compare, (void *)ctx);
}
