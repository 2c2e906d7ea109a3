/* test_mem_flame.c - the bounded flame graph of live memory
 * (src/analysis/mem_flame.c), on a profile fed known allocations:
 *
 * main allocates 50 bytes itself; main > a > leaf two blocks of 1000;
 * main > b 300 native bytes; main > tiny_k one byte each, for 20 k.  All
 * are still live at the end (the leaks).
 *
 * Whole (no bound): root = main = 2370, a = leaf = 2000, b = 300 native,
 * 20 tiny nodes, no "other".  Cut to 4 nodes: root, main, a, leaf, and
 * one "other" under main of 320 bytes (b's and the tiny ones'), 21 stacks,
 * 300 of them native.  Cut at 1/100 of the root (23 bytes): b stays, the
 * tiny ones are one "other" of 20 bytes and 20 stacks.  In every tree a
 * node's children weigh no more than it, parents come first, and the root
 * is the total. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/mem_flame.h"
#include "analysis/profile.h"
#include "analysis/profile_memory.h"
#include "tap.h"
#include "ulma/shm.h"

enum { F_MAIN, F_A, F_B, F_LEAF, F_TINY, NFUNCS = F_TINY + 20 };
#define TOTAL 2370

static void setup(struct ulma_profile *p)
{
	ulma_profile_init(p);
	ulma_profile_add_thread(p, 0, 1, 100, 100);
	for (uint32_t f = 0; f < NFUNCS; f++) {
		char name[16];
		snprintf(name, sizeof(name), f == F_MAIN ? "main" : f == F_A ? "a" : f == F_B ? "b" : f == F_LEAF ? "leaf"
			 : "tiny_%u", f - F_TINY);
		ulma_profile_add_func(p, f, ULMA_DEF_PY, name, strlen(name), "/m.py", 5, f + 1);
	}
	ulma_profile_memory_enable(p);
	uint64_t t = 10, addr = 0x10000;
	ulma_profile_enter(p, 0, F_MAIN, t++);
	ulma_profile_mem_alloc(p, 0, addr += 0x100, 50, ULMA_MEM_OBJ, t++);
	ulma_profile_enter(p, 0, F_A, t++);
	ulma_profile_enter(p, 0, F_LEAF, t++);
	ulma_profile_mem_alloc(p, 0, addr += 0x1000, 1000, ULMA_MEM_OBJ, t++);
	ulma_profile_mem_alloc(p, 0, addr += 0x1000, 1000, ULMA_MEM_MEM, t++);
	ulma_profile_exit(p, 0, t++);
	ulma_profile_exit(p, 0, t++);
	ulma_profile_enter(p, 0, F_B, t++);
	ulma_profile_mem_alloc(p, 0, addr += 0x1000, 300, ULMA_MEM_NATIVE, t++);
	ulma_profile_exit(p, 0, t++);
	for (uint32_t k = 0; k < 20; k++) {
		ulma_profile_enter(p, 0, F_TINY + k, t++);
		ulma_profile_mem_alloc(p, 0, addr += 0x100, 1, ULMA_MEM_OBJ, t++);
		ulma_profile_exit(p, 0, t++);
	}
	ulma_profile_exit(p, 0, t++);
	ulma_profile_finish(p, t++);
}

/* The shape every tree has: the root first with the total, parents before
 * children, children weighing no more than their parent. */
static void check_shape(const struct ulma_mem_flame *f, const char *what)
{
	uint64_t *under = calloc(f->n, sizeof(*under));
	int ok = f->n > 0 && f->nodes[0].parent == ULMA_MEM_FLAME_ROOT && f->nodes[0].func == ULMA_MEM_NO_FUNC &&
		 f->nodes[0].bytes == TOTAL;
	for (uint32_t i = 1; i < f->n && ok; i++) {
		ok = f->nodes[i].parent < i;
		under[f->nodes[i].parent] += f->nodes[i].bytes;
	}
	for (uint32_t i = 0; i < f->n && ok; i++)
		ok = under[i] <= f->nodes[i].bytes;
	CHECK(ok, "%s: the root is the total, parents first, children within their parent", what);
	free(under);
}

static uint32_t find(const struct ulma_mem_flame *f, uint32_t func)
{
	for (uint32_t i = 0; i < f->n; i++)
		if (f->nodes[i].func == func)
			return i;
	return UINT32_MAX;
}

int main(void)
{
	struct ulma_profile p;
	struct ulma_mem_leak *g;
	uint32_t ng;
	setup(&p);
	if (!CHECK_EQ_I64(ulma_profile_memory_leaks(&p, &g, &ng), 0, "leaks") || !CHECK_EQ_U64(ng, 23, "23 stacks (24 blocks)"))
		return tap_done();

	struct ulma_mem_flame f;
	CHECK_EQ_I64(ulma_mem_flame_build(&f, &p, g, ng, 1000, 0), 0, "whole tree");
	check_shape(&f, "whole");
	CHECK_EQ_U64(f.n, 25, "root, main, a, leaf, b and 20 tiny");
	uint32_t m = find(&f, F_MAIN), a = find(&f, F_A), l = find(&f, F_LEAF), b = find(&f, F_B);
	CHECK(m == 1 && f.nodes[m].bytes == TOTAL && f.nodes[m].count == 24, "main holds all 24 blocks");
	CHECK(a < f.n && f.nodes[a].parent == m && f.nodes[a].bytes == 2000, "a under main: 2000");
	CHECK(l < f.n && f.nodes[l].parent == a && f.nodes[l].bytes == 2000 && f.nodes[l].count == 2, "leaf under a");
	CHECK(b < f.n && f.nodes[b].bytes == 300 && f.nodes[b].native_bytes == 300, "b: 300 native bytes");
	CHECK(f.other_bytes == 0 && f.other_stacks == 0 && find(&f, ULMA_MEM_FLAME_OTHER) == UINT32_MAX, "no other");
	ulma_mem_flame_free(&f);

	CHECK_EQ_I64(ulma_mem_flame_build(&f, &p, g, ng, 4, 0), 0, "four nodes");
	check_shape(&f, "four nodes");
	uint32_t o = find(&f, ULMA_MEM_FLAME_OTHER);
	CHECK_EQ_U64(f.n, 5, "root, main, a, leaf and one other");
	CHECK(o < f.n && f.nodes[o].parent == find(&f, F_MAIN) && f.nodes[o].bytes == 320 && f.nodes[o].stacks == 21 &&
	      f.nodes[o].native_bytes == 300 && f.nodes[o].count == 21, "other under main: b's and the tiny ones'");
	CHECK(f.other_bytes == 320 && f.other_stacks == 21, "the totals of what was merged");
	ulma_mem_flame_free(&f);

	CHECK_EQ_I64(ulma_mem_flame_build(&f, &p, g, ng, 1000, 100), 0, "none under 1/100");
	check_shape(&f, "1/100");
	o = find(&f, ULMA_MEM_FLAME_OTHER);
	CHECK(find(&f, F_B) < f.n && find(&f, F_TINY) == UINT32_MAX, "b kept, the one-byte stacks not");
	CHECK(o < f.n && f.nodes[o].bytes == 20 && f.nodes[o].stacks == 20 && f.other_bytes == 20, "other: 20 x 1 byte");
	ulma_mem_flame_free(&f);

	CHECK_EQ_I64(ulma_mem_flame_build(&f, &p, NULL, 0, 1000, 100), 0, "no groups");
	CHECK(f.n == 1 && f.nodes[0].bytes == 0, "a root of 0 bytes");
	ulma_mem_flame_free(&f);
	free(g);
	ulma_profile_free(&p);
	return tap_done();
}
