/* callgraph.h - per-function and per-call-edge totals of a walked trace,
 * with cProfile's semantics, for the pstats and callgrind exporters.
 *
 * Made from the calling-context tree of a walk (calltree.h; functions
 * merged on their key, or on keys of the caller's choosing) once the walk
 * is over, which costs a walk only the tree's per-frame work.  It counts
 * for each function its calls, the calls made while it was already
 * active on the same thread (recursive calls), its self time, and its total
 * time counted at the outermost frame only.  For each edge caller -> callee
 * it counts the same four figures, recursion being judged on the pair, as
 * _lsprof judges it; and, for callgrind, `incl_ns`: the callee's time on
 * this edge where the callee was not already active on the thread.  So a
 * function's total time is exactly the sum of incl_ns over the edges into
 * it plus its root_ns (frames no kept frame called), and, under direct
 * recursion, also its self time plus incl_ns over the edges out of it.
 *
 * With `levels` set (callgrind), a function re-entered through another
 * function while it is active (mutual recursion) is counted under a key of
 * its own for each level of re-entry, as callgrind's --separate-recs
 * names them (`f'2`, `f'3`): its levels are then different functions, so
 * tools that read a call graph find no cycle made of recursion, and an
 * edge's incl_ns is the callee's whole time.  Direct recursion (f calling
 * f) stays at its caller's level.  The last level takes every deeper one,
 * and its edges from other functions carry their whole time (as
 * callgrind's do, so a cycle at that depth is one KCachegrind sees).
 *
 * Single-threaded.  Functions returning int give 0 or -ENOMEM.
 */
#ifndef ULMA_CALLGRAPH_H
#define ULMA_CALLGRAPH_H

#include <stdint.h>

#include "../core/idmap.h"
#include "calltree.h"
#include "export.h"
#include "export_walk.h"

struct ulma_cg_func {
	uint64_t calls;
	uint64_t reccalls; /* calls while already active on the thread */
	uint64_t self_ns;
	uint64_t total_ns; /* outermost frames only */
	uint64_t root_calls; /* frames with no kept caller */
	uint64_t root_ns;    /* and their time */
	uint32_t first_in; /* first edge into it, or ULMA_WALK_NONE; chained by next_in */
	uint32_t first_out; /* first edge out of it; chained by next_out */
};

struct ulma_cg_edge {
	uint32_t caller;
	uint32_t callee;
	uint32_t next_in;
	uint32_t next_out;
	uint64_t calls;
	uint64_t reccalls; /* calls while the same pair was already active */
	uint64_t self_ns;  /* callee self time on this edge */
	uint64_t total_ns; /* callee time, outermost active pair only */
	uint64_t incl_ns;  /* callee time where the callee was not already active */
};

#define ULMA_CG_EDGE_CACHE 4096 /* recent (caller, callee) -> edge, before the hash */

struct ulma_callgraph {
	/* Optional, set by the caller: recursion levels kept apart (see
	 * above; 0 or 1: none).  Keys from nbase up are levels 2 and deeper:
	 * ulma_callgraph_level says of which function. */
	uint32_t levels;
	uint32_t nbase;      /* keys below this are the functions' own */
	uint32_t *level_key; /* by key - nbase: the function's key */
	uint8_t *level_of;   /* by key - nbase: its level (2 ... levels) */
	uint32_t nlevel_keys;
	struct ulma_idmap level_ids; /* (key << 8 | level) + 1 -> key */
	/* Optional, set by the caller: the key each function's figures go
	 * under (indexed by function, a function index itself), replacing the
	 * walker's w->funcs[].key -- the pstats export merges functions cProfile
	 * would name alike.  It must cover every function a frame names. */
	const uint32_t *keys;
	struct ulma_cg_func *funcs; /* by function key */
	uint32_t nfuncs;
	struct ulma_cg_edge *edges;
	uint32_t nedges;
	uint32_t cap_edges;
	struct ulma_idmap edge_ids; /* caller << 32 | callee, + 1 -> edge */
	uint64_t edge_cache_key[ULMA_CG_EDGE_CACHE];
	uint32_t edge_cache_id[ULMA_CG_EDGE_CACHE];
};

void ulma_callgraph_init(struct ulma_callgraph *g);
void ulma_callgraph_free(struct ulma_callgraph *g);

/* Build g from the call tree of a whole walk instead of from every frame:
 * the same figures (a frame's recursion is judged by the nodes above it,
 * which are the frames under it), computed once per node, so a walk need
 * only feed the tree.  Returns 0 or -ENOMEM. */
int ulma_callgraph_from_tree(struct ulma_callgraph *g, const struct ulma_walk *w, const struct ulma_calltree *t);

/* The function key k counts for, and its recursion level (1 for the
 * function's own key). */
static inline uint32_t ulma_callgraph_level(const struct ulma_callgraph *g, uint32_t k, uint32_t *level)
{
	if (k < g->nbase || k - g->nbase >= g->nlevel_keys) {
		*level = 1;
		return k;
	}
	*level = g->level_of[k - g->nbase];
	return g->level_key[k - g->nbase];
}

/* Walk the trace `in` into a call graph with recursion `levels` kept
 * apart (0: none), then hand both to `write`, which renders them to `out`
 * (the callgrind exporter).  Returns the walk's or write's error, or 0. */
int ulma_callgraph_export(FILE *in, const struct ulma_export_opts *o, FILE *out, struct ulma_export_result *res,
			  uint32_t levels,
			  int (*write)(FILE *out, const struct ulma_walk *w, const struct ulma_callgraph *g));

#endif
