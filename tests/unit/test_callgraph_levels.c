/* test_callgraph_levels.c - recursion levels kept apart in the call graph
 * (src/analysis/callgraph.h's `levels`, which the callgrind export uses):
 * main -> a -> b -> a -> b -> a -> a, with levels = 3.  a and b re-entered
 * through each other become a'2, b'2, a'3 (the last level, taking the
 * deeper a too), the direct call a -> a stays at its caller's level; every
 * call from another function carries the callee's whole time, the direct
 * one nothing; each level's calls and self time are its frames'. */
#include <string.h>

#include "analysis/callgraph.h"
#include "tap.h"

static const struct ulma_cg_edge *edge(const struct ulma_callgraph *g, uint32_t caller, uint32_t callee)
{
	for (uint32_t e = 0; e < g->nedges; e++)
		if (g->edges[e].caller == caller && g->edges[e].callee == callee)
			return &g->edges[e];
	return NULL;
}

/* The key of function `base` at `level`, or UINT32_MAX. */
static uint32_t key_at(const struct ulma_callgraph *g, uint32_t base, uint32_t level)
{
	for (uint32_t k = 0; k < g->nbase + g->nlevel_keys; k++) {
		uint32_t l;
		if (ulma_callgraph_level(g, k, &l) == base && l == level && (k < 3 || k >= g->nbase))
			return k;
	}
	return UINT32_MAX;
}

int main(void)
{
	struct ulma_walk w;
	memset(&w, 0, sizeof(w));
	struct ulma_walk_func funcs[3] = {{.name = "main", .key = 0}, {.name = "a", .key = 1}, {.name = "b", .key = 2}};
	w.funcs = funcs;
	w.nfuncs = 3;
	struct ulma_calltree tree;
	CHECK_EQ_I64(ulma_calltree_init(&tree), 0, "tree");
	/* enter at 0, 10, ... 60; the innermost a leaves at 70, then every 10 ns */
	static const uint32_t stack[] = {0, 1, 2, 1, 2, 1, 1};
	for (unsigned i = 0; i < 7; i++)
		CHECK_EQ_I64(ulma_calltree_enter(&tree, 0, stack[i], 10 * i), 0, "enter");
	for (unsigned i = 0; i < 7; i++)
		ulma_calltree_leave(&tree, 0, 70 + 10 * i);

	struct ulma_callgraph g;
	ulma_callgraph_init(&g);
	g.levels = 3;
	CHECK_EQ_I64(ulma_callgraph_from_tree(&g, &w, &tree), 0, "call graph with levels");
	uint32_t a1 = key_at(&g, 1, 1), b1 = key_at(&g, 2, 1), a2 = key_at(&g, 1, 2), b2 = key_at(&g, 2, 2),
		 a3 = key_at(&g, 1, 3);
	CHECK(a1 == 1 && b1 == 2, "level 1 is the function's own key");
	CHECK(a2 != UINT32_MAX && b2 != UINT32_MAX && a3 != UINT32_MAX && g.nlevel_keys == 3,
	      "three level keys: a'2, b'2, a'3 (%u)", g.nlevel_keys);
	CHECK(key_at(&g, 2, 3) == UINT32_MAX, "b has no third level");
	CHECK(a3 != UINT32_MAX && g.funcs[a3].calls == 2 && g.funcs[a3].self_ns == 30,
	      "a'3 holds the last a and the one it calls directly: 2 calls, self 20 + 10");
	CHECK(g.funcs[a1].calls == 1 && g.funcs[a1].total_ns == 110, "a: one call, 10 to 120");
	const struct ulma_cg_edge *ab = edge(&g, a1, b1), *ba2 = edge(&g, b1, a2), *a2b2 = edge(&g, a2, b2),
				  *b2a3 = edge(&g, b2, a3), *a3a3 = edge(&g, a3, a3);
	CHECK(ab && ab->incl_ns == 90, "a -> b: b's whole 90 ns");
	CHECK(ba2 && ba2->incl_ns == 70, "b -> a'2: its whole 70 ns, though a is active");
	CHECK(a2b2 && a2b2->incl_ns == 50, "a'2 -> b'2: 50");
	CHECK(b2a3 && b2a3->incl_ns == 30, "b'2 -> a'3: 30");
	CHECK(a3a3 && a3a3->calls == 1 && a3a3->incl_ns == 0, "a'3 -> a'3, direct recursion: 0 ns");
	CHECK(g.funcs[a1].self_ns + (ab ? ab->incl_ns : 0) == g.funcs[a1].total_ns,
	      "a: self + calls out = total, as KCachegrind adds them");
	ulma_callgraph_free(&g);

	/* without levels, as pstats has it: one key per function, recursion once */
	ulma_callgraph_init(&g);
	CHECK_EQ_I64(ulma_callgraph_from_tree(&g, &w, &tree), 0, "call graph without levels");
	CHECK(g.nlevel_keys == 0 && g.funcs[1].calls == 4 && g.funcs[1].reccalls == 3 && g.funcs[1].total_ns == 110,
	      "a: 4 calls, 3 recursive, total 110");
	const struct ulma_cg_edge *ba = edge(&g, 2, 1);
	CHECK(ba && ba->incl_ns == 0, "b -> a while a is active: 0 ns");
	ulma_callgraph_free(&g);
	ulma_calltree_free(&tree);
	return tap_done();
}
