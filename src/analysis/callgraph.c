/* callgraph.c - cProfile-style function and edge totals, made from a call
 * tree (see callgraph.h). */
#include "callgraph.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


void ulma_callgraph_init(struct ulma_callgraph *g)
{
	memset(g, 0, sizeof(*g));
}

void ulma_callgraph_free(struct ulma_callgraph *g)
{
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

/* One node of the tree into g; level: open nodes above it, per key and per edge. */
static int add_node(struct ulma_callgraph *g, const struct ulma_walk *w, const struct ulma_calltree *t,
		    uint32_t n, uint32_t *fn_open, uint32_t *edge_open, uint32_t *edge_of_node)
{
	const struct ulma_ct_node *nd = &t->nodes[n];
	uint32_t k = key_of(g, w, nd->key), e = ULMA_WALK_NONE;
	struct ulma_cg_func *fn = &g->funcs[k];
	bool outermost = fn_open[k]++ == 0;
	fn->calls += nd->calls;
	fn->self_ns += nd->self_ns;
	if (outermost)
		fn->total_ns += nd->total_ns;
	else
		fn->reccalls += nd->calls;
	if (nd->parent == 0) {
		fn->root_calls += nd->calls;
		fn->root_ns += nd->total_ns;
	} else {
		int err = edge_of(g, key_of(g, w, t->nodes[nd->parent].key), k, &e);
		if (err)
			return err;
		if (e >= t->nnodes) /* edge_open has one count per node: one edge at most each */
			return -ENOMEM;
		struct ulma_cg_edge *ed = &g->edges[e];
		bool pair_outermost = edge_open[e]++ == 0;
		ed->calls += nd->calls;
		ed->self_ns += nd->self_ns;
		if (pair_outermost)
			ed->total_ns += nd->total_ns;
		else
			ed->reccalls += nd->calls;
		if (outermost)
			ed->incl_ns += nd->total_ns;
	}
	edge_of_node[n] = e;
	return 0;
}

int ulma_callgraph_from_tree(struct ulma_callgraph *g, const struct ulma_walk *w, const struct ulma_calltree *t)
{
	int err = ensure_funcs(g, w->nfuncs ? w->nfuncs : 1);
	if (err || t->nnodes <= 1)
		return err;
	/* at most one edge per node: room for them all, so the open counts can be arrays */
	if (g->cap_edges < t->nnodes) {
		struct ulma_cg_edge *v = realloc(g->edges, (size_t)t->nnodes * sizeof(*v));
		if (!v)
			return -ENOMEM;
		g->edges = v;
		g->cap_edges = t->nnodes;
	}
	uint32_t *fn_open = calloc(g->nfuncs, sizeof(*fn_open));
	uint32_t *edge_open = calloc(t->nnodes, sizeof(*edge_open));
	uint32_t *edge_of_node = malloc((size_t)t->nnodes * sizeof(*edge_of_node));
	uint32_t *stack = malloc((size_t)t->nnodes * sizeof(*stack));
	err = fn_open && edge_open && edge_of_node && stack ? 0 : -ENOMEM;
	/* depth first, counting the open nodes of each function and edge */
	uint32_t depth = 0, n = t->nodes[0].first_child;
	while (n && !err) {
		err = add_node(g, w, t, n, fn_open, edge_open, edge_of_node);
		stack[depth++] = n;
		if (t->nodes[n].first_child) {
			n = t->nodes[n].first_child;
			continue;
		}
		for (n = 0; depth && !n;) {
			uint32_t done = stack[--depth];
			fn_open[key_of(g, w, t->nodes[done].key)]--;
			if (edge_of_node[done] != ULMA_WALK_NONE)
				edge_open[edge_of_node[done]]--;
			n = t->nodes[done].next_sibling;
		}
	}
	free(fn_open);
	free(edge_open);
	free(edge_of_node);
	free(stack);
	return err;
}

int ulma_callgraph_export(FILE *in, const struct ulma_export_opts *o, FILE *out, struct ulma_export_result *res,
			  int (*write)(FILE *out, const struct ulma_walk *w, const struct ulma_callgraph *g))
{
	struct ulma_walk w;
	struct ulma_callgraph g;
	struct ulma_calltree t;
	ulma_callgraph_init(&g);
	int err = ulma_calltree_init(&t);
	if (err)
		return err;
	struct ulma_walk_sink sink = ulma_calltree_sink_template;
	sink.ctx = &t;
	sink.tree = &t;
	err = ulma_export_walk(in, o, &w, &sink, res);
	if (!err)
		err = ulma_callgraph_from_tree(&g, &w, &t);
	if (!err)
		err = write(out, &w, &g);
	ulma_calltree_free(&t);
	ulma_callgraph_free(&g);
	ulma_walk_free(&w);
	return err;
}
