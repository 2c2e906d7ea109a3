/* calltree.h - the calling-context tree of a walked trace: one node per
 * distinct stack (outermost first), with its calls, self and total time.
 *
 * Fed by the frames of export_walk.h (functions merged on their key), all
 * threads into one tree; or, with per_thread set before the first frame,
 * one subtree per thread: the root's children are then thread nodes (key
 * ULMA_CALLTREE_THREAD_KEY(thread), no times of their own) and a thread's
 * outermost frames hang from its node.  This is what a flame graph draws; the folded
 * exporter writes one line per node.  Memory is one node per distinct
 * stack, not per call.  Single-threaded.  Functions returning int give 0,
 * -ENOMEM, or -EINVAL for a close without its open.
 */
#ifndef ULMA_CALLTREE_H
#define ULMA_CALLTREE_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/idmap.h"
#include "export_walk.h"

#define ULMA_CALLTREE_ROOT 0u /* the virtual root: key ULMA_WALK_NONE, no times */
/* A thread node's key (per_thread trees): above every function key. */
#define ULMA_CALLTREE_THREAD_KEY(thread) (UINT32_MAX - 1u - (uint32_t)(thread))
#define ULMA_CALLTREE_THREAD_OF(key) (UINT32_MAX - 1u - (uint32_t)(key))

struct ulma_ct_node {
	uint32_t key;         /* function key */
	uint32_t parent;      /* node index */
	uint32_t first_child; /* node index, 0 if none (the root is nobody's child) */
	uint32_t next_sibling;
	uint32_t depth;       /* 1 for the outermost frames */
	uint32_t recent;      /* the child found last, a guess before the hash (0: none) */
	uint64_t calls;
	uint64_t self_ns;
	uint64_t total_ns;    /* time of the frames at this node */
};

struct ulma_ct_frame {
	uint32_t node;
	uint64_t start; /* ns: fed by ulma_calltree_enter only */
	uint64_t child; /* ns in callees, the same */
};

struct ulma_ct_thread {
	struct ulma_ct_frame *frames; /* open frames */
	uint32_t depth;
	uint32_t cap;
	uint32_t root; /* the node its outermost frames hang from (0 until its first frame) */
};

struct ulma_calltree {
	struct ulma_ct_node *nodes;
	uint32_t nnodes;
	uint32_t cap;
	struct ulma_idmap children; /* (parent << 32 | key) + 1 -> node */
	struct ulma_ct_thread *threads;
	uint32_t nthreads;
	bool per_thread; /* a subtree per thread (set before the first frame) */
};

int ulma_calltree_init(struct ulma_calltree *t);
void ulma_calltree_free(struct ulma_calltree *t);

int ulma_calltree_open(struct ulma_calltree *t, const struct ulma_walk *w, uint32_t thread,
		       const struct ulma_walk_frame *f);
int ulma_calltree_close(struct ulma_calltree *t, const struct ulma_walk *w, uint32_t thread,
			const struct ulma_walk_frame *f);

/* Per-function totals from the tree, as cProfile counts them: calls and
 * self time summed over a function's nodes, total time over its nodes
 * with no ancestor of the same function (the outermost frames of a
 * recursion).  out[key] for every key below nkeys (zeroed first).
 * Returns 0 or -ENOMEM. */
struct ulma_ct_totals {
	uint64_t calls;
	uint64_t self_ns;
	uint64_t total_ns;
};
int ulma_calltree_totals(const struct ulma_calltree *t, uint32_t nkeys, struct ulma_ct_totals *out);

/* Fill `to` (initialised, empty) with `from` where direct recursion is
 * folded: a node of its parent's function is merged into the parent (its
 * calls, self time and children), so no stack holds a function twice in a
 * row.  Node times stay those of the outermost frames.  Returns 0 or
 * -ENOMEM. */
int ulma_calltree_fold_recursion(struct ulma_calltree *to, const struct ulma_calltree *from);

/* A sink feeding the tree (set ctx and tree to it). */
extern const struct ulma_walk_sink ulma_calltree_sink_template;

/* Fed straight from the walker's events when nothing is filtered (the
 * sink's `tree`): enter a frame of function `key` at ns, leave the top one
 * at ns.  The same figures as open/close, without building frames. */
int ulma_calltree_enter_slow(struct ulma_calltree *t, uint32_t thread, uint32_t key, uint64_t ns);

/* A thread's open frames held in locals by a loop feeding the tree
 * (export_walk.c's on_events_tree: each store into a node could alias
 * the thread's depth, which would be reloaded after each one): loaded,
 * entered and left, and stored back before anything else reads the
 * tree's thread. */
struct ulma_ct_cursor {
	struct ulma_ct_node *nodes;
	struct ulma_ct_frame *frames;
	uint32_t depth;
	uint32_t cap;
	uint32_t root;
	bool per_thread;
};

static inline void ulma_ct_cursor_load(const struct ulma_calltree *t, uint32_t thread, struct ulma_ct_cursor *c)
{
	c->nodes = t->nodes;
	c->per_thread = t->per_thread;
	if (thread < t->nthreads) {
		const struct ulma_ct_thread *th = &t->threads[thread];
		c->frames = th->frames;
		c->depth = th->depth;
		c->cap = th->cap;
		c->root = th->root;
	} else { /* a thread never seen: entering it takes the slow path */
		c->frames = NULL;
		c->depth = c->cap = c->root = 0;
	}
}

static inline void ulma_ct_cursor_store(struct ulma_calltree *t, uint32_t thread, const struct ulma_ct_cursor *c)
{
	if (thread < t->nthreads)
		t->threads[thread].depth = c->depth;
}

static inline int ulma_ct_cursor_enter(struct ulma_calltree *t, uint32_t thread, struct ulma_ct_cursor *c,
				       uint32_t key, uint64_t ns)
{
	if (__builtin_expect(c->depth < c->cap && (c->depth || c->root || !c->per_thread), 1)) {
		uint32_t parent = c->depth ? c->frames[c->depth - 1].node : c->root;
		uint32_t guess = c->nodes[parent].recent;
		if (__builtin_expect(guess && c->nodes[guess].key == key, 1)) {
			c->nodes[guess].calls++;
			c->frames[c->depth++] = (struct ulma_ct_frame){guess, ns, 0};
			return 0;
		}
	}
	ulma_ct_cursor_store(t, thread, c);
	int err = ulma_calltree_enter_slow(t, thread, key, ns);
	ulma_ct_cursor_load(t, thread, c);
	return err;
}

/* Leave the top frame (depth > 0) at ns. */
static inline void ulma_ct_cursor_leave(struct ulma_ct_cursor *c, uint64_t ns)
{
	const struct ulma_ct_frame *f = &c->frames[--c->depth];
	uint64_t dur = ns > f->start ? ns - f->start : 0;
	struct ulma_ct_node *n = &c->nodes[f->node];
	n->total_ns += dur;
	n->self_ns += dur > f->child ? dur - f->child : 0;
	if (c->depth)
		c->frames[c->depth - 1].child += dur;
}

static inline int ulma_calltree_enter(struct ulma_calltree *t, uint32_t thread, uint32_t key, uint64_t ns)
{
	struct ulma_ct_cursor c;
	ulma_ct_cursor_load(t, thread, &c);
	int err = ulma_ct_cursor_enter(t, thread, &c, key, ns);
	ulma_ct_cursor_store(t, thread, &c);
	return err;
}

/* Frames open on a thread (0 for a thread never seen). */
static inline uint32_t ulma_calltree_depth(const struct ulma_calltree *t, uint32_t thread)
{
	return thread < t->nthreads ? t->threads[thread].depth : 0;
}

/* Leave the top frame of a thread with ulma_calltree_depth > 0. */
static inline void ulma_calltree_leave(struct ulma_calltree *t, uint32_t thread, uint64_t ns)
{
	struct ulma_ct_cursor c;
	ulma_ct_cursor_load(t, thread, &c);
	ulma_ct_cursor_leave(&c, ns);
	ulma_ct_cursor_store(t, thread, &c);
}

#endif
