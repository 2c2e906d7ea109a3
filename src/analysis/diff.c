/* diff.c - two traces read and their functions matched (see diff.h). */
#include "diff.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "summary_parts.h"

static int on_open(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	struct ulma_diff_side *s = ctx;
	return ulma_calltree_open(&s->tree, w, thread, f); /* only when the walk filters, which the diff never asks */
}

static int on_close(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	struct ulma_diff_side *s = ctx;
	return ulma_walk_feeds_tree(w) ? 0 : ulma_calltree_close(&s->tree, w, thread, f);
}

int ulma_diff_side_read(struct ulma_diff_side *s, FILE *in, bool no_correction, bool tree)
{
	struct ulma_walk_filter filter;
	memset(s, 0, sizeof(*s));
	ulma_walk_filter_init(&filter);
	filter.no_correction = no_correction;
	ulma_walk_init(&s->walk, &filter);
	ulma_profile_init(&s->profile);
	if (tree) {
		int err = ulma_calltree_init(&s->tree);
		if (err)
			return err;
		s->has_tree = true;
	}
	struct ulma_walk_sink sink = {.ctx = s, .profile = &s->profile};
	if (tree) {
		sink.on_open = on_open;
		sink.on_close = on_close;
		sink.tree = &s->tree;
	}
	int err = ulma_walk_run(&s->walk, in, &sink, &s->st);
	s->read_error = err == -EIO && ferror(in);
	return err;
}

void ulma_diff_side_free(struct ulma_diff_side *s)
{
	ulma_walk_free(&s->walk);
	ulma_profile_free(&s->profile);
	if (s->has_tree)
		ulma_calltree_free(&s->tree);
	s->has_tree = false;
}

/* ---------- figures per function ---------- */

static void add_split(struct ulma_time_split *to, const struct ulma_time_split *x)
{
	to->wall_ns += x->wall_ns;
	to->on_cpu_ns += x->on_cpu_ns;
	to->runnable_ns += x->runnable_ns;
	to->blocked_ns += x->blocked_ns;
	to->gil_ns += x->gil_ns;
}

static void add_figures(struct ulma_diff_figures *to, const struct ulma_diff_figures *x)
{
	to->calls += x->calls;
	add_split(&to->self, &x->self);
	add_split(&to->total, &x->total);
}

/* A side's figures per walk key, the summary's times (ulma_summary_times)
 * summed over the definitions merged on the key.  NULL if out of memory. */
static struct ulma_diff_figures *side_figures(const struct ulma_diff_side *s)
{
	const struct ulma_walk *w = &s->walk;
	struct ulma_diff_figures *fig = calloc(w->nfuncs ? w->nfuncs : 1, sizeof(*fig));
	if (!fig)
		return NULL;
	struct ulma_summary sum = {.profile = &s->profile,
				   .cal = {.ns_per_tick = w->ns_per_tick},
				   .overhead_ps = w->cost_ps,
				   .no_correction = w->filter.no_correction};
	uint32_t n = s->profile.nfuncs < w->nfuncs ? s->profile.nfuncs : w->nfuncs;
	for (uint32_t i = 0; i < n; i++) {
		const struct ulma_func_row *f = &s->profile.funcs[i];
		if (f->calls == 0)
			continue;
		struct ulma_diff_figures x = {.calls = f->calls};
		ulma_summary_times(&sum, f, &x.self, &x.total);
		add_figures(&fig[w->funcs[i].key], &x);
	}
	return fig;
}

/* ---------- matching ---------- */

struct entry {
	const struct ulma_walk_func *f;
	uint32_t key;
	uint8_t side; /* 0: A, 1: B */
	uint32_t row;
};

/* A run of entries with the same kind, file, name and line. */
struct group {
	uint32_t first, end;
	uint8_t sides; /* bit 0: A has it, bit 1: B */
};

static int cmp_loose(const struct ulma_walk_func *x, const struct ulma_walk_func *y)
{
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	int c = strcmp(x->file, y->file);
	return c ? c : strcmp(x->name, y->name);
}

static int by_identity(const void *p, const void *q)
{
	const struct entry *x = p, *y = q;
	int c = cmp_loose(x->f, y->f);
	if (c)
		return c;
	if (x->f->line != y->f->line)
		return x->f->line < y->f->line ? -1 : 1;
	if (x->side != y->side)
		return x->side < y->side ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static const struct entry *sort_entries; /* for by_loose_group (qsort has no context) */

static int by_loose_group(const void *p, const void *q)
{
	const struct group *x = p, *y = q;
	int c = cmp_loose(sort_entries[x->first].f, sort_entries[y->first].f);
	if (c)
		return c;
	return x->first < y->first ? -1 : x->first > y->first;
}

static int64_t growth(const struct ulma_diff_row *r)
{
	return (int64_t)(r->fb.total.wall_ns - r->fa.total.wall_ns);
}

static const struct ulma_diff *sort_diff; /* for by_growth */

static int by_growth(const void *p, const void *q)
{
	const struct ulma_diff_row *x = &sort_diff->rows[*(const uint32_t *)p], *y = &sort_diff->rows[*(const uint32_t *)q];
	int64_t gx = growth(x), gy = growth(y);
	if (gx != gy)
		return gx > gy ? -1 : 1;
	uint64_t tx = x->fb.total.wall_ns + x->fa.total.wall_ns, ty = y->fb.total.wall_ns + y->fa.total.wall_ns;
	if (tx != ty)
		return tx > ty ? -1 : 1;
	return *(const uint32_t *)p < *(const uint32_t *)q ? -1 : 1;
}

/* One row of the entries of groups g[0..n): their figures summed. */
static void make_row(struct ulma_diff *d, struct entry *e, const struct group *g, uint32_t n,
		     struct ulma_diff_figures *const fig[2])
{
	struct ulma_diff_row *r = &d->rows[d->nrows];
	memset(r, 0, sizeof(*r));
	r->a = r->b = ULMA_DIFF_ABSENT;
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = g[k].first; i < g[k].end; i++) {
			uint32_t *key = e[i].side ? &r->b : &r->a;
			if (*key == ULMA_DIFF_ABSENT)
				*key = e[i].key;
			add_figures(e[i].side ? &r->fb : &r->fa, &fig[e[i].side][e[i].key]);
			e[i].row = d->nrows;
		}
	d->nrows++;
}

/* Rows from the sorted entries: one per identity in both runs, then the
 * rest paired by kind, file and name where that is unique on both sides. */
static int match(struct ulma_diff *d, struct entry *e, uint32_t n, struct ulma_diff_figures *const fig[2])
{
	struct group *g = malloc((n ? n : 1) * sizeof(*g));
	if (!g)
		return -ENOMEM;
	uint32_t ng = 0, pending = 0;
	for (uint32_t i = 0; i < n;) {
		uint32_t j = i;
		uint8_t sides = 0;
		for (; j < n && cmp_loose(e[i].f, e[j].f) == 0 && e[i].f->line == e[j].f->line; j++)
			sides |= (uint8_t)(1u << e[j].side);
		g[ng++] = (struct group){i, j, sides};
		i = j;
	}
	for (uint32_t k = 0; k < ng; k++) { /* the same everywhere: a row now, else pending */
		if (g[k].sides == 3)
			make_row(d, e, &g[k], 1, fig);
		else
			g[pending++] = g[k];
	}
	sort_entries = e;
	qsort(g, pending, sizeof(*g), by_loose_group);
	sort_entries = NULL;
	for (uint32_t k = 0; k < pending;) {
		uint32_t j = k + 1;
		while (j < pending && cmp_loose(e[g[k].first].f, e[g[j].first].f) == 0)
			j++;
		if (j - k == 2 && (g[k].sides | g[k + 1].sides) == 3) { /* its line moved */
			make_row(d, e, &g[k], 2, fig);
		} else {
			for (uint32_t m = k; m < j; m++)
				make_row(d, e, &g[m], 1, fig);
		}
		k = j;
	}
	free(g);
	return 0;
}

/* Put the rows in order of growth, and the keys' maps to them. */
static int order_rows(struct ulma_diff *d, const struct entry *e, uint32_t n)
{
	uint32_t *order = malloc((d->nrows ? d->nrows : 1) * sizeof(*order));
	uint32_t *rank = malloc((d->nrows ? d->nrows : 1) * sizeof(*rank));
	struct ulma_diff_row *rows = malloc((d->nrows ? d->nrows : 1) * sizeof(*rows));
	if (!order || !rank || !rows) {
		free(order);
		free(rank);
		free(rows);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < d->nrows; i++)
		order[i] = i;
	sort_diff = d;
	qsort(order, d->nrows, sizeof(*order), by_growth);
	sort_diff = NULL;
	for (uint32_t i = 0; i < d->nrows; i++) {
		rows[i] = d->rows[order[i]];
		rank[order[i]] = i;
	}
	free(d->rows);
	d->rows = rows;
	for (uint32_t i = 0; i < n; i++)
		(e[i].side ? d->row_of_b : d->row_of_a)[e[i].key] = rank[e[i].row];
	free(order);
	free(rank);
	return 0;
}

int ulma_diff_build(struct ulma_diff *d, const struct ulma_diff_side *a, const struct ulma_diff_side *b)
{
	memset(d, 0, sizeof(*d));
	d->a = a;
	d->b = b;
	d->split = a->profile.split != ULMA_PROFILE_SPLIT_NONE && b->profile.split != ULMA_PROFILE_SPLIT_NONE;
	d->gil = a->profile.has_gil && b->profile.has_gil;
	const struct ulma_diff_side *side[2] = {a, b};
	struct ulma_diff_figures *fig[2] = {side_figures(a), side_figures(b)};
	size_t n = (size_t)a->walk.nfuncs + b->walk.nfuncs;
	struct entry *e = malloc((n ? n : 1) * sizeof(*e));
	d->rows = malloc((n ? n : 1) * sizeof(*d->rows));
	d->row_of_a = malloc((a->walk.nfuncs ? a->walk.nfuncs : 1) * sizeof(uint32_t));
	d->row_of_b = malloc((b->walk.nfuncs ? b->walk.nfuncs : 1) * sizeof(uint32_t));
	int err = fig[0] && fig[1] && e && d->rows && d->row_of_a && d->row_of_b && n < UINT32_MAX ? 0 : -ENOMEM;
	uint32_t ne = 0;
	for (int s = 0; s < 2 && !err; s++) {
		const struct ulma_walk *w = &side[s]->walk;
		uint32_t *row_of = s ? d->row_of_b : d->row_of_a;
		for (uint32_t k = 0; k < w->nfuncs; k++) {
			row_of[k] = ULMA_DIFF_ABSENT;
			if (w->funcs[k].key == k && fig[s][k].calls > 0)
				e[ne++] = (struct entry){&w->funcs[k], k, (uint8_t)s, 0};
		}
	}
	if (!err) {
		qsort(e, ne, sizeof(*e), by_identity);
		err = match(d, e, ne, fig);
	}
	free(fig[0]);
	free(fig[1]);
	fig[0] = fig[1] = NULL;
	if (!err && d->nrows) { /* at most one row per entry were reserved: give back the rest */
		struct ulma_diff_row *rows = realloc(d->rows, (size_t)d->nrows * sizeof(*rows));
		if (rows)
			d->rows = rows;
	}
	if (!err)
		err = order_rows(d, e, ne);
	if (!err) { /* keys merged into another map to its row */
		for (int s = 0; s < 2; s++) {
			const struct ulma_walk *w = &side[s]->walk;
			uint32_t *row_of = s ? d->row_of_b : d->row_of_a;
			for (uint32_t k = 0; k < w->nfuncs; k++)
				row_of[k] = row_of[w->funcs[k].key];
		}
	}
	free(e);
	free(fig[0]);
	free(fig[1]);
	if (err)
		ulma_diff_free(d);
	return err;
}

void ulma_diff_free(struct ulma_diff *d)
{
	free(d->rows);
	free(d->row_of_a);
	free(d->row_of_b);
	d->rows = NULL;
	d->row_of_a = d->row_of_b = NULL;
	d->nrows = 0;
}

const struct ulma_walk_func *ulma_diff_func(const struct ulma_diff *d, const struct ulma_diff_row *r)
{
	return r->b != ULMA_DIFF_ABSENT ? &d->b->walk.funcs[r->b] : &d->a->walk.funcs[r->a];
}

uint32_t ulma_diff_regressions(const struct ulma_diff *d, const struct ulma_diff_threshold *t)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < d->nrows; i++) {
		const struct ulma_diff_row *r = &d->rows[i];
		if (r->a == ULMA_DIFF_ABSENT || r->b == ULMA_DIFF_ABSENT)
			continue; /* new or gone: their callers' totals carry the change */
		bool cpu = t->on_cpu && d->split;
		uint64_t ta = cpu ? r->fa.total.on_cpu_ns : r->fa.total.wall_ns;
		uint64_t tb = cpu ? r->fb.total.on_cpu_ns : r->fb.total.wall_ns;
		if (tb > ta && tb - ta >= t->min_ns && (double)(tb - ta) > (double)ta * t->percent / 100.0)
			n++;
	}
	return n;
}
