/* mem_flame.h - a bounded flame graph of live memory: groups of live blocks
 * by calling context (profile_memory.h's ulma_mem_leak: the blocks held at
 * the peak, or still allocated at the end) as a tree of stacks whose nodes
 * weigh the bytes allocated at or below them, as memray's peak and leaks
 * flame graphs are.  The root weighs all the groups: the peak, or the
 * leaked total, exactly.
 *
 * Bounded: only the `max_nodes` heaviest nodes are kept, and none lighter
 * than 1/`min_share` of the root; what a kept node's dropped descendants
 * weigh becomes one OTHER child of it (with how many stacks it merges),
 * so every node's width is still its bytes and the root is still the
 * total.  Nodes are ordered heaviest first (a parent before its children,
 * the root first), the OTHER nodes last; at most 2 * max_nodes in all.
 *
 * Reads the profile's calling contexts (p->memory->nodes), never the live
 * blocks.  Single-threaded; functions returning int give 0 or -ENOMEM.
 */
#ifndef ULMA_MEM_FLAME_H
#define ULMA_MEM_FLAME_H

#include <stdint.h>

#include "profile.h"
#include "profile_memory.h"

#define ULMA_MEM_FLAME_ROOT UINT32_MAX         /* the root's parent */
#define ULMA_MEM_FLAME_OTHER (UINT32_MAX - 1u) /* func of a node merging the stacks left out under its parent */

struct ulma_mem_flame_node {
	uint32_t parent; /* index in the tree; ULMA_MEM_FLAME_ROOT for the root */
	uint32_t func;   /* the profile's function index; ULMA_MEM_NO_FUNC for the root; ULMA_MEM_FLAME_OTHER */
	uint64_t bytes;  /* of the blocks allocated at or below it */
	uint64_t native_bytes; /* of bytes: native code's */
	uint64_t count;        /* blocks */
	uint32_t stacks;       /* OTHER: the groups (distinct stacks) it merges; else 0 */
};

struct ulma_mem_flame {
	struct ulma_mem_flame_node *nodes;
	uint32_t n;
	uint64_t other_bytes;  /* in all the OTHER nodes */
	uint32_t other_stacks; /* the groups they merge */
};

/* Build f from the n groups g of profile p's live blocks (any order).  f
 * is overwritten (free it first if it held a tree). */
int ulma_mem_flame_build(struct ulma_mem_flame *f, const struct ulma_profile *p, const struct ulma_mem_leak *g,
			 uint32_t n, uint32_t max_nodes, uint32_t min_share);

void ulma_mem_flame_free(struct ulma_mem_flame *f);

#endif
