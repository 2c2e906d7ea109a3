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
	free(g->level_key);
	free(g->level_of);
	ulma_idmap_free(&g->level_ids);
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

/* The key of level `level` (> 1) of function key k, made on first use. */
static int level_key(struct ulma_callgraph *g, uint32_t k, uint32_t level, uint32_t *out)
{
	uint64_t id = ((uint64_t)k << 8 | level) + 1;
	if (ulma_idmap_get(&g->level_ids, id, out))
		return 0;
	uint32_t i = g->nlevel_keys;
	if ((i & (i - 1)) == 0) { /* 0, 1, 2, 4...: full, double */
		uint32_t ncap = i ? i * 2 : 16;
		uint32_t *a = realloc(g->level_key, (size_t)ncap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		g->level_key = a;
		uint8_t *b = realloc(g->level_of, ncap);
		if (!b)
			return -ENOMEM;
		g->level_of = b;
	}
	g->level_key[i] = k;
	g->level_of[i] = (uint8_t)level;
	*out = g->nbase + i;
	int err = ulma_idmap_put(&g->level_ids, id, *out);
	if (!err)
		g->nlevel_keys++;
	return err ? err : ensure_funcs(g, *out + 1);
}

/* What the walk over the tree keeps per node and per function key. */
struct tree_walk {
	uint32_t *fn_open;      /* by key: its nodes open */
	uint32_t *edge_open;    /* by edge: its nodes open */
	uint32_t *edge_of_node; /* by node */
	uint32_t *key_of_node;  /* by node: the key it counts under */
	uint8_t *level_open;    /* by function key: level of its innermost open node (0: none) */
	uint8_t *level_before;  /* by node: its function's level_open before it */
};

/* The key node n counts under, with recursion levels kept apart; *whole
 * says that its edge carries its whole time (the last level, entered from
 * another function). */
static int node_key(struct ulma_callgraph *g, const struct ulma_walk *w, const struct ulma_calltree *t,
		    struct tree_walk *tw, uint32_t n, uint32_t k, uint32_t *out, bool *whole)
{
	*out = k;
	*whole = false;
	if (g->levels < 2)
		return 0;
	uint32_t p = t->nodes[n].parent;
	bool direct = p != 0 && key_of(g, w, t->nodes[p].key) == k;
	uint32_t open = tw->level_open[k], level = direct ? open : open ? open + 1 : 1;
	if (level > g->levels)
		level = g->levels;
	tw->level_before[n] = (uint8_t)open;
	tw->level_open[k] = (uint8_t)level;
	*whole = level == g->levels && !direct && open != 0;
	return level > 1 ? level_key(g, k, level, out) : 0;
}

/* One node of the tree into g, with the counts of open nodes above it. */
static int add_node(struct ulma_callgraph *g, const struct ulma_walk *w, const struct ulma_calltree *t,
		    uint32_t n, struct tree_walk *tw)
{
	const struct ulma_ct_node *nd = &t->nodes[n];
	uint32_t k, e = ULMA_WALK_NONE;
	bool whole;
	int err = node_key(g, w, t, tw, n, key_of(g, w, nd->key), &k, &whole);
	if (err)
		return err;
	tw->key_of_node[n] = k;
	uint32_t *fn_open = tw->fn_open, *edge_open = tw->edge_open;
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
		err = edge_of(g, tw->key_of_node[nd->parent], k, &e);
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
		if (outermost || whole)
			ed->incl_ns += nd->total_ns;
	}
	tw->edge_of_node[n] = e;
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
	g->nbase = g->nfuncs;
	/* keys: the functions', and at most one level key per node */
	struct tree_walk tw = {
		.fn_open = calloc((size_t)g->nbase + t->nnodes, sizeof(*tw.fn_open)),
		.edge_open = calloc(t->nnodes, sizeof(*tw.edge_open)),
		.edge_of_node = malloc((size_t)t->nnodes * sizeof(*tw.edge_of_node)),
		.key_of_node = malloc((size_t)t->nnodes * sizeof(*tw.key_of_node)),
		.level_open = calloc(g->nbase, 1),
		.level_before = malloc(t->nnodes),
	};
	uint32_t *stack = malloc((size_t)t->nnodes * sizeof(*stack));
	err = tw.fn_open && tw.edge_open && tw.edge_of_node && tw.key_of_node && tw.level_open && tw.level_before && stack
		      ? 0
		      : -ENOMEM;
	/* depth first, counting the open nodes of each function and edge */
	uint32_t depth = 0, n = t->nodes[0].first_child;
	while (n && !err) {
		err = add_node(g, w, t, n, &tw);
		stack[depth++] = n;
		if (t->nodes[n].first_child) {
			n = t->nodes[n].first_child;
			continue;
		}
		for (n = 0; depth && !n;) {
			uint32_t done = stack[--depth];
			tw.fn_open[tw.key_of_node[done]]--;
			if (g->levels >= 2)
				tw.level_open[key_of(g, w, t->nodes[done].key)] = tw.level_before[done];
			if (tw.edge_of_node[done] != ULMA_WALK_NONE)
				tw.edge_open[tw.edge_of_node[done]]--;
			n = t->nodes[done].next_sibling;
		}
	}
	free(tw.fn_open);
	free(tw.edge_open);
	free(tw.edge_of_node);
	free(tw.key_of_node);
	free(tw.level_open);
	free(tw.level_before);
	free(stack);
	return err;
}

int ulma_callgraph_export(FILE *in, const struct ulma_export_opts *o, FILE *out, struct ulma_export_result *res,
			  uint32_t levels, int (*write)(FILE *out, const struct ulma_walk *w, const struct ulma_callgraph *g))
{
	struct ulma_walk w;
	struct ulma_callgraph g;
	struct ulma_calltree t;
	ulma_callgraph_init(&g);
	g.levels = levels;
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
