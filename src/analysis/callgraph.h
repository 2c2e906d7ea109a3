/* callgraph.h - per-function and per-call-edge totals of a walked trace,
 * with cProfile's semantics, for the pstats and callgrind exporters.
 *
 * Fed by the frames of export_walk.h (functions merged on their key, or on
 * keys of the caller's choosing), it
 * counts for each function its calls, the calls made while it was already
 * active on the same thread (recursive calls), its self time, and its total
 * time counted at the outermost frame only.  For each edge caller -> callee
 * it counts the same four figures, recursion being judged on the pair, as
 * _lsprof judges it; and, for callgrind, `incl_ns`: the callee's time on
 * this edge where the callee was not already active on the thread.  So a
 * function's total time is exactly the sum of incl_ns over the edges into
 * it plus its root_ns (frames no kept frame called), and, under direct
 * recursion, also its self time plus incl_ns over the edges out of it.
 *
 * Single-threaded.  Functions returning int give 0 or -ENOMEM.
 */
#ifndef ULMA_CALLGRAPH_H
#define ULMA_CALLGRAPH_H

#include <stdint.h>

#include "../core/idmap.h"
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

struct ulma_cg_thread {
	uint32_t *fn_active;   /* open frames per function key */
	uint32_t nfn_active;
	uint32_t *edge_active; /* open frames per edge */
	uint32_t nedge_active;
	uint32_t *edges;       /* edge of each open kept frame, or ULMA_WALK_NONE */
	uint32_t depth;
	uint32_t cap;
};

#define ULMA_CG_EDGE_CACHE 4096 /* recent (caller, callee) -> edge, before the hash */

struct ulma_callgraph {
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
	struct ulma_cg_thread *threads;
	uint32_t nthreads;
};

void ulma_callgraph_init(struct ulma_callgraph *g);
void ulma_callgraph_free(struct ulma_callgraph *g);

/* Frames from the walker, in its order. */
int ulma_callgraph_open(struct ulma_callgraph *g, const struct ulma_walk *w, uint32_t thread,
			const struct ulma_walk_frame *f);
int ulma_callgraph_close(struct ulma_callgraph *g, const struct ulma_walk *w, uint32_t thread,
			 const struct ulma_walk_frame *f);

/* A sink feeding g (ctx = g), for walkers with no other consumer. */
extern const struct ulma_walk_sink ulma_callgraph_sink_template;

/* Walk the trace `in` into a call graph, then hand both to `write`, which
 * renders them to `out` (the pstats and callgrind exporters).  Returns
 * the walk's or write's error, or 0. */
int ulma_callgraph_export(FILE *in, const struct ulma_export_opts *o, FILE *out, struct ulma_export_result *res,
			  int (*write)(FILE *out, const struct ulma_walk *w, const struct ulma_callgraph *g));

#endif
