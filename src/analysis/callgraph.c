/* callgraph.c - cProfile-style function and edge totals (see callgraph.h). */
#include "callgraph.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../core/array.h"

void ulma_callgraph_init(struct ulma_callgraph *g)
{
	memset(g, 0, sizeof(*g));
}

void ulma_callgraph_free(struct ulma_callgraph *g)
{
	for (uint32_t i = 0; i < g->nthreads; i++) {
		free(g->threads[i].fn_active);
		free(g->threads[i].edge_active);
		free(g->threads[i].edges);
	}
	free(g->threads);
	free(g->funcs);
	free(g->edges);
	ulma_idmap_free(&g->edge_ids);
	memset(g, 0, sizeof(*g));
}

static int ensure_funcs(struct ulma_callgraph *g, uint32_t n)
{
	if (n <= g->nfuncs)
		return 0;
	uint32_t ncap = g->nfuncs ? g->nfuncs : 64;
	while (ncap < n)
		ncap = ncap > UINT32_MAX / 2 ? n : ncap * 2;
	struct ulma_cg_func *f = realloc(g->funcs, (size_t)ncap * sizeof(*f));
	if (!f)
		return -ENOMEM;
	for (uint32_t i = g->nfuncs; i < ncap; i++)
		f[i] = (struct ulma_cg_func){.first_in = ULMA_WALK_NONE, .first_out = ULMA_WALK_NONE};
	g->funcs = f;
	g->nfuncs = ncap;
	return 0;
}

static int ensure_thread(struct ulma_callgraph *g, uint32_t thread)
{
	if (thread < g->nthreads)
		return 0;
	uint32_t n = thread + 1 > g->nthreads * 2 ? thread + 1 : g->nthreads * 2;
	struct ulma_cg_thread *t = realloc(g->threads, (size_t)n * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t + g->nthreads, 0, (size_t)(n - g->nthreads) * sizeof(*t));
	g->threads = t;
	g->nthreads = n;
	return 0;
}

static int edge_of(struct ulma_callgraph *g, uint32_t caller, uint32_t callee, uint32_t *out)
{
	uint64_t k = ((uint64_t)caller << 32 | callee) + 1;
	uint32_t slot = (uint32_t)((k * UINT64_C(0x9E3779B97F4A7C15)) >> 52) & (ULMA_CG_EDGE_CACHE - 1);
	if (g->edge_cache_key[slot] == k) {
		*out = g->edge_cache_id[slot];
		return 0;
	}
	if (ulma_idmap_get(&g->edge_ids, k, out)) {
		g->edge_cache_key[slot] = k;
		g->edge_cache_id[slot] = *out;
		return 0;
	}
	if (g->nedges == g->cap_edges) {
		uint32_t ncap = g->cap_edges ? g->cap_edges * 2 : 256;
		struct ulma_cg_edge *e = realloc(g->edges, (size_t)ncap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		g->edges = e;
		g->cap_edges = ncap;
	}
	uint32_t id = g->nedges;
	int err = ulma_idmap_put(&g->edge_ids, k, id);
	if (err)
		return err;
	g->edges[id] = (struct ulma_cg_edge){.caller = caller,
					     .callee = callee,
					     .next_in = g->funcs[callee].first_in,
					     .next_out = g->funcs[caller].first_out};
	g->funcs[callee].first_in = id;
	g->funcs[caller].first_out = id;
	g->nedges++;
	*out = id;
	return 0;
}

static inline uint32_t key_of(const struct ulma_callgraph *g, const struct ulma_walk *w, uint32_t func)
{
	return g->keys ? g->keys[func] : w->funcs[func].key;
}

/* One more open frame at counts[index], growing the array; the new count. */
static inline int level_up(uint32_t **counts, uint32_t *n, uint32_t index, uint32_t *now)
{
	if (index >= *n && ulma_array_grow((void **)counts, n, index, sizeof(**counts)))
		return -ENOMEM;
	*now = ++(*counts)[index];
	return 0;
}

/* One fewer (never below 0); the new count. */
static uint32_t level_down(uint32_t *counts, uint32_t n, uint32_t index)
{
	if (index >= n || counts[index] == 0)
		return 0;
	return --counts[index];
}

int ulma_callgraph_open(struct ulma_callgraph *g, const struct ulma_walk *w, uint32_t thread,
			const struct ulma_walk_frame *f)
{
	uint32_t k = key_of(g, w, f->func), e = ULMA_WALK_NONE, now;
	int err;
	if ((w->nfuncs > g->nfuncs && (err = ensure_funcs(g, w->nfuncs))) ||
	    (thread >= g->nthreads && (err = ensure_thread(g, thread))))
		return err;
	struct ulma_cg_thread *t = &g->threads[thread];
	if (t->depth == t->cap) {
		uint32_t ncap = t->cap ? t->cap * 2 : 64;
		uint32_t *s = realloc(t->edges, (size_t)ncap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		t->edges = s;
		t->cap = ncap;
	}
	if ((err = level_up(&t->fn_active, &t->nfn_active, k, &now)))
		return err;
	if (f->parent != ULMA_WALK_NONE) {
		if ((err = edge_of(g, key_of(g, w, f->parent), k, &e)))
			return err;
		if ((err = level_up(&t->edge_active, &t->nedge_active, e, &now)))
			return err;
	}
	t->edges[t->depth++] = e;
	return 0;
}

int ulma_callgraph_close(struct ulma_callgraph *g, const struct ulma_walk *w, uint32_t thread,
			 const struct ulma_walk_frame *f)
{
	if (thread >= g->nthreads || g->threads[thread].depth == 0)
		return -EINVAL; /* a close without its open: the walker's contract broken */
	struct ulma_cg_thread *t = &g->threads[thread];
	uint32_t k = key_of(g, w, f->func), e = t->edges[--t->depth];
	uint64_t dur = f->end_ns - f->start_ns;
	uint32_t fn_level = level_down(t->fn_active, t->nfn_active, k);
	struct ulma_cg_func *fn = &g->funcs[k];
	fn->calls++;
	fn->self_ns += f->self_ns;
	if (fn_level == 0)
		fn->total_ns += dur;
	else
		fn->reccalls++;
	if (e == ULMA_WALK_NONE) {
		fn->root_calls++;
		fn->root_ns += dur;
		return 0;
	}
	uint32_t pair_level = level_down(t->edge_active, t->nedge_active, e);
	struct ulma_cg_edge *ed = &g->edges[e];
	ed->calls++;
	ed->self_ns += f->self_ns;
	if (pair_level == 0)
		ed->total_ns += dur;
	else
		ed->reccalls++;
	if (fn_level == 0)
		ed->incl_ns += dur;
	return 0;
}

static int sink_open(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	return ulma_callgraph_open(ctx, w, thread, f);
}

static int sink_close(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	return ulma_callgraph_close(ctx, w, thread, f);
}

const struct ulma_walk_sink ulma_callgraph_sink_template = {NULL, NULL, NULL, sink_open, sink_close};

int ulma_callgraph_export(FILE *in, const struct ulma_export_opts *o, FILE *out, struct ulma_export_result *res,
			  int (*write)(FILE *out, const struct ulma_walk *w, const struct ulma_callgraph *g))
{
	struct ulma_walk w;
	struct ulma_callgraph g;
	ulma_callgraph_init(&g);
	struct ulma_walk_sink sink = ulma_callgraph_sink_template;
	sink.ctx = &g;
	int err = ulma_export_walk(in, o, &w, &sink, res);
	if (!err)
		err = write(out, &w, &g);
	ulma_callgraph_free(&g);
	ulma_walk_free(&w);
	return err;
}
