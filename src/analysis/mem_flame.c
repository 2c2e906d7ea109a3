/* mem_flame.c - a bounded flame graph of live memory (see mem_flame.h).
 *
 * First the whole tree of the groups' stacks: each calling context met is
 * given a local index, its unknown ancestors before it, so that a parent's
 * index is below its children's and the sums run in one backward pass.
 * Then the kept nodes: the heaviest first, ties by index, so the kept set
 * holds every kept node's parent (a parent weighs at least what its child
 * does).  A kept node's weight not in its own groups nor in its kept
 * children is that of dropped descendants: its OTHER child.
 */
#include "mem_flame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../core/array.h"
#include "../core/idmap.h"

struct weight {
	uint64_t bytes, native_bytes, count;
};

static void add(struct weight *a, const struct weight *b)
{
	a->bytes += b->bytes;
	a->native_bytes += b->native_bytes;
	a->count += b->count;
}

static void sub(struct weight *a, const struct weight *b)
{
	a->bytes -= b->bytes;
	a->native_bytes -= b->native_bytes;
	a->count -= b->count;
}

struct local {
	uint32_t parent, func;
	struct weight self; /* the groups at this context */
	struct weight all;  /* at or below it */
	uint32_t groups;    /* at this context */
};

struct build {
	struct local *l;
	uint32_t n, cap;
	struct ulma_idmap of_node; /* calling context + 1 -> local index */
	uint32_t *chain;           /* scratch: a stack's unknown contexts, innermost first */
	uint32_t nchain, cap_chain;
};

static int add_local(struct build *b, uint32_t parent, uint32_t func)
{
	if (ulma_array_grow((void **)&b->l, &b->cap, b->n, sizeof(*b->l)))
		return -ENOMEM;
	b->l[b->n++] = (struct local){.parent = parent, .func = func};
	return 0;
}

/* The local index of calling context `node`, adding it and its unknown
 * ancestors; UINT32_MAX when out of memory. */
static uint32_t local_of(struct build *b, const struct ulma_profile_memory *m, uint32_t node)
{
	uint32_t at = 0, v = node;
	b->nchain = 0;
	while (v != 0 && v < m->nnodes && !ulma_idmap_get(&b->of_node, (uint64_t)v + 1, &at)) {
		if (ulma_array_grow((void **)&b->chain, &b->cap_chain, b->nchain, sizeof(*b->chain)))
			return UINT32_MAX;
		b->chain[b->nchain++] = v;
		v = m->nodes[v].parent;
	}
	if (v == 0 || v >= m->nnodes)
		at = 0; /* the root (also for a context past the table, which a sound profile never gives) */
	while (b->nchain) {
		uint32_t c = b->chain[--b->nchain];
		if (add_local(b, at, m->nodes[c].func) || ulma_idmap_put(&b->of_node, (uint64_t)c + 1, b->n - 1))
			return UINT32_MAX;
		at = b->n - 1;
	}
	return at;
}

static int heavier_first(const void *x, const void *y, void *ctx)
{
	const struct local *l = ctx;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	if (l[a].all.bytes != l[b].all.bytes)
		return l[a].all.bytes < l[b].all.bytes ? 1 : -1;
	return a < b ? -1 : a > b;
}

/* The heaviest nodes of b's tree and their OTHER children, into f. */
static int choose(struct ulma_mem_flame *f, const struct build *b, uint32_t max_nodes, uint32_t min_share)
{
	uint32_t n = b->n, *order = malloc((size_t)n * sizeof(*order)), *slot = malloc((size_t)n * sizeof(*slot));
	uint32_t *near = malloc((size_t)n * sizeof(*near)); /* the nearest kept node at or above */
	struct weight *rest = calloc(n, sizeof(*rest));     /* per kept node: its dropped descendants' weight */
	uint32_t *stacks = calloc(n, sizeof(*stacks));      /* and their groups */
	int err = -ENOMEM;
	if (!order || !slot || !near || !rest || !stacks)
		goto out;
	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), heavier_first, b->l);
	uint64_t total = b->l[0].all.bytes, least = total && min_share ? total / min_share : 0;
	if (total && !least)
		least = 1;
	uint32_t kept = 0, cap = max_nodes ? max_nodes : 1;
	while (kept < n && kept < cap && b->l[order[kept]].all.bytes >= least)
		kept++;
	for (uint32_t i = 0; i < n; i++)
		slot[i] = UINT32_MAX;
	for (uint32_t k = 0; k < kept; k++) {
		uint32_t i = order[k];
		slot[i] = k;
		rest[i] = b->l[i].all;
		sub(&rest[i], &b->l[i].self);
	}
	for (uint32_t k = 1; k < kept; k++)
		sub(&rest[b->l[order[k]].parent], &b->l[order[k]].all);
	uint32_t others = 0;
	for (uint32_t i = 0; i < n; i++) { /* parents first */
		near[i] = slot[i] != UINT32_MAX ? i : near[b->l[i].parent];
		if (slot[i] == UINT32_MAX && b->l[i].groups) {
			others += !stacks[near[i]];
			stacks[near[i]] += b->l[i].groups;
		}
	}
	f->nodes = malloc((size_t)(kept + others) * sizeof(*f->nodes));
	if (!f->nodes)
		goto out;
	for (uint32_t k = 0; k < kept; k++) {
		const struct local *l = &b->l[order[k]];
		f->nodes[k] = (struct ulma_mem_flame_node){k ? slot[l->parent] : ULMA_MEM_FLAME_ROOT, l->func, l->all.bytes,
							   l->all.native_bytes, l->all.count, 0};
	}
	f->n = kept;
	for (uint32_t k = 0; k < kept; k++) {
		uint32_t i = order[k];
		if (!stacks[i])
			continue;
		f->nodes[f->n++] = (struct ulma_mem_flame_node){k, ULMA_MEM_FLAME_OTHER, rest[i].bytes,
								rest[i].native_bytes, rest[i].count, stacks[i]};
		f->other_bytes += rest[i].bytes;
		f->other_stacks += stacks[i];
	}
	err = 0;
out:
	free(order);
	free(slot);
	free(near);
	free(rest);
	free(stacks);
	return err;
}

int ulma_mem_flame_build(struct ulma_mem_flame *f, const struct ulma_profile *p, const struct ulma_mem_leak *g,
			 uint32_t n, uint32_t max_nodes, uint32_t min_share)
{
	struct build b = {0};
	const struct ulma_profile_memory *m = p->memory;
	memset(f, 0, sizeof(*f));
	int err = add_local(&b, ULMA_MEM_FLAME_ROOT, ULMA_MEM_NO_FUNC);
	for (uint32_t i = 0; i < n && m && !err; i++) {
		uint32_t at = local_of(&b, m, g[i].node);
		if (at == UINT32_MAX) {
			err = -ENOMEM;
			break;
		}
		struct weight w = {g[i].bytes, g[i].native_bytes, g[i].count};
		add(&b.l[at].self, &w);
		b.l[at].groups++;
	}
	if (!err) {
		for (uint32_t i = 0; i < b.n; i++)
			b.l[i].all = b.l[i].self;
		for (uint32_t i = b.n; i-- > 1;)
			add(&b.l[b.l[i].parent].all, &b.l[i].all);
		err = choose(f, &b, max_nodes, min_share);
	}
	free(b.l);
	free(b.chain);
	ulma_idmap_free(&b.of_node);
	if (err)
		ulma_mem_flame_free(f);
	return err;
}

void ulma_mem_flame_free(struct ulma_mem_flame *f)
{
	free(f->nodes);
	memset(f, 0, sizeof(*f));
}
