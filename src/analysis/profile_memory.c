/* profile_memory.c - allocations per function, leaks and the peak (see
 * profile_memory.h for the model and its bounds). */
#include "profile_memory.h"

#include <stdlib.h>
#include <string.h>

#include "../core/array.h"

#define NODES_MIN 1024u /* calling contexts room is first made for */
#define PEAK_STEP 64     /* copy the holders when the peak has grown by 1/PEAK_STEP */
#define GHOST_SAMPLE 1024 /* ghosts whose times estimate the median */

static int by_ticks(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

#define mix ulma_mem_mix

int ulma_profile_memory_enable(struct ulma_profile *p)
{
	if (p->memory)
		return 0;
	struct ulma_profile_memory *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->node_index = calloc(NODES_MIN, sizeof(*m->node_index));
	m->nodes = malloc(NODES_MIN * sizeof(*m->nodes));
	if (ulma_mem_table_init(&m->table) || !m->node_index || !m->nodes) {
		ulma_profile_memory_free(m);
		return -ENOMEM;
	}
	m->node_mask = NODES_MIN - 1;
	m->cap_nodes = NODES_MIN;
	m->nodes[0] = (struct ulma_mem_node){0, ULMA_MEM_NO_FUNC};
	m->nnodes = 1;
	p->memory = m;
	return 0;
}

void ulma_profile_memory_free(struct ulma_profile_memory *m)
{
	if (!m)
		return;
	free(m->funcs);
	ulma_mem_table_free(&m->table);
	free(m->nodes);
	free(m->node_index);
	free(m->procs);
	ulma_profile_objects_free(&m->objects);
	free(m);
}

/* ---- per function and per thread ---- */

static struct ulma_mem_thread *thread_mem_slow(struct ulma_profile *p, struct ulma_thread_row *t, uint32_t depth);

/* thread_mem_slow's common case: made, deep enough, a row per function. */
static inline struct ulma_mem_thread *thread_mem(struct ulma_profile *p, struct ulma_thread_row *t, uint32_t depth)
{
	struct ulma_mem_thread *mt = t->mem;
	if (__builtin_expect(mt && depth < mt->cap && p->memory->nfuncs >= p->nfuncs, 1))
		return mt;
	return thread_mem_slow(p, t, depth);
}

static struct ulma_mem_func *func_row(struct ulma_profile_memory *m, uint32_t f)
{
	return f < m->nfuncs ? &m->funcs[f] : NULL;
}

struct ulma_mem_func ulma_profile_memory_func(const struct ulma_profile *p, uint32_t f)
{
	const struct ulma_profile_memory *m = p->memory;
	struct ulma_mem_func none = {0};
	return m && f < m->nfuncs ? m->funcs[f] : none;
}

static uint32_t proc_of(struct ulma_profile_memory *m, uint32_t pid)
{
	for (uint32_t i = 0; i < m->nprocs; i++)
		if (m->procs[i].pid == pid)
			return i;
	if (m->nprocs == ULMA_MEM_PROCS_MAX)
		return m->nprocs - 1;
	if (ulma_array_grow((void **)&m->procs, &m->cap_procs, m->nprocs, sizeof(*m->procs)))
		return UINT32_MAX;
	m->procs[m->nprocs].pid = pid;
	return m->nprocs++;
}

/* The thread's memory state, made at its first allocation or free, with
 * room for depth `depth`; NULL if out of memory. */
static struct ulma_mem_thread *thread_mem_slow(struct ulma_profile *p, struct ulma_thread_row *t, uint32_t depth)
{
	struct ulma_mem_thread *mt = t->mem;
	if (!mt) {
		uint32_t proc = proc_of(p->memory, t->pid);
		if (proc == UINT32_MAX || !(mt = calloc(1, sizeof(*mt))))
			return NULL;
		mt->proc = proc;
		t->mem = mt;
	}
	if (depth >= mt->cap) {
		uint32_t cap = mt->cap ? mt->cap : 16;
		while (cap <= depth)
			cap *= 2;
		struct ulma_mem_acc *acc = realloc(mt->acc, cap * sizeof(*acc));
		if (!acc)
			return NULL;
		mt->acc = acc;
		uint32_t *node = realloc(mt->node, (cap + 1) * sizeof(*node));
		if (!node)
			return NULL;
		mt->node = node;
		memset(acc + mt->cap, 0, (cap - mt->cap) * sizeof(*acc));
		if (mt->cap == 0)
			node[0] = 0;
		mt->cap = cap;
	}
	/* every function on the stack may need its row at an exit */
	if (p->memory->nfuncs < p->nfuncs &&
	    ulma_array_grow((void **)&p->memory->funcs, &p->memory->nfuncs, p->nfuncs - 1, sizeof(struct ulma_mem_func)))
		return NULL;
	return mt;
}

void ulma_profile_memory_pop(struct ulma_profile *p, struct ulma_thread_row *t, const struct ulma_frame *f)
{
	struct ulma_mem_thread *mt = t->mem;
	uint32_t d = t->depth; /* the leaving frame's */
	if (mt->valid > d)
		mt->valid = d;
	if (d >= mt->cap || mt->acc[d].count == 0)
		return;
	struct ulma_mem_acc a = mt->acc[d];
	mt->acc[d] = (struct ulma_mem_acc){0, 0};
	if (d) {
		mt->acc[d - 1].count += a.count;
		mt->acc[d - 1].bytes += a.bytes;
	}
	struct ulma_mem_func *r = func_row(p->memory, f->func);
	if (r && f->outer) { /* its outermost frame */
		r->total_alloc_count += a.count;
		r->total_alloc_bytes += a.bytes;
	}
}

/* ---- calling contexts ---- */

static int grow_node_index(struct ulma_profile_memory *m)
{
	uint32_t cap = (m->node_mask + 1) * 2;
	uint32_t *idx = calloc(cap, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (uint32_t n = 1; n < m->nnodes; n++) {
		uint32_t h = (uint32_t)mix((uint64_t)m->nodes[n].parent << 32 | m->nodes[n].func) & (cap - 1);
		while (idx[h])
			h = (h + 1) & (cap - 1);
		idx[h] = n + 1;
	}
	free(m->node_index);
	m->node_index = idx;
	m->node_mask = cap - 1;
	return 0;
}

/* The node of `func` called from `parent`; the parent itself when the
 * tree is full or out of memory (the context is cut there). */
static uint32_t child(struct ulma_profile_memory *m, uint32_t parent, uint32_t func)
{
	uint32_t h = (uint32_t)mix((uint64_t)parent << 32 | func) & m->node_mask;
	for (uint32_t v; (v = m->node_index[h]) != 0; h = (h + 1) & m->node_mask)
		if (m->nodes[v - 1].parent == parent && m->nodes[v - 1].func == func)
			return v - 1;
	if (m->nnodes >= ULMA_MEM_NODES_MAX)
		return parent;
	if (m->nnodes == m->cap_nodes &&
	    ulma_array_grow((void **)&m->nodes, &m->cap_nodes, m->nnodes, sizeof(*m->nodes)))
		return parent;
	if ((m->nnodes + 1) * 2 > m->node_mask + 1) {
		if (grow_node_index(m))
			return parent;
		h = (uint32_t)mix((uint64_t)parent << 32 | func) & m->node_mask;
		while (m->node_index[h])
			h = (h + 1) & m->node_mask;
	}
	uint32_t n = m->nnodes++;
	m->nodes[n] = (struct ulma_mem_node){parent, func};
	m->node_index[h] = n + 1;
	return n;
}

/* The calling context of the thread's stack now. */
static uint32_t context(struct ulma_profile_memory *m, const struct ulma_thread_row *t, struct ulma_mem_thread *mt)
{
	for (uint32_t d = mt->valid; d < t->depth; d++)
		mt->node[d + 1] = child(m, mt->node[d], t->stack[d].func);
	mt->valid = t->depth;
	return mt->node[t->depth];
}

uint32_t ulma_profile_memory_stack(const struct ulma_profile *p, uint32_t node, uint32_t *funcs, uint32_t max)
{
	const struct ulma_profile_memory *m = p->memory;
	uint32_t n = 0;
	for (uint32_t v = node; m && v != 0 && v < m->nnodes; v = m->nodes[v].parent)
		n++;
	uint32_t skip = n > max ? n - max : 0, k = n - skip; /* the innermost max of them */
	uint32_t i = k;
	for (uint32_t v = node; m && v != 0 && v < m->nnodes && i > 0; v = m->nodes[v].parent)
		funcs[--i] = m->nodes[v].func;
	return k;
}

/* ---- live blocks ---- */

/* Too many ghosts: forget the older half (by a sample's median time).
 * An allocation older than a forgotten ghost's free that is still in a
 * ring would then be taken as live: ghosts are kept long enough for that
 * to need a thread whose records wait unpublished for that long. */
struct ghost_cut {
	struct ulma_profile_memory *m;
	uint64_t cut;
};

static bool ghost_older(void *ctx, uint32_t proc, const struct ulma_mem_block *b)
{
	(void)proc;
	struct ghost_cut *g = ctx;
	if (b->size != ULMA_MEM_GHOST || b->ticks > g->cut)
		return false;
	if (!b->func) {
		g->m->unknown_frees++;
		g->m->unmatched--;
	}
	g->m->nghosts--;
	return true;
}

static void drop_ghosts(struct ulma_profile_memory *m)
{
	uint64_t sample[GHOST_SAMPLE];
	uint32_t n = 0;
	for (uint64_t i = 0; i <= m->table.mask && n < GHOST_SAMPLE; i += 1 + (m->table.mask >> 9)) {
		const struct ulma_mem_chunk *c = &m->table.chunks[i]; /* up to 4 ghosts of 512 chunk slots */
		for (uint32_t k = 0, e = ulma_mem_table_count(c->bits); k < e && n < GHOST_SAMPLE; k += 1 + e / 4)
			if (c->blocks[k].size == ULMA_MEM_GHOST)
				sample[n++] = c->blocks[k].ticks;
	}
	qsort(sample, n, sizeof(*sample), by_ticks);
	struct ghost_cut g = {m, n ? sample[n / 2] : UINT64_MAX};
	ulma_mem_table_sweep(&m->table, ghost_older, &g);
}

/* A block of func's, of `size` bytes in process proc, is gone. */
static inline void block_gone(struct ulma_profile_memory *m, uint32_t func, uint32_t proc, uint64_t size, bool native,
		       bool was_live)
{
	struct ulma_mem_func *r = func == ULMA_MEM_NO_FUNC ? NULL : func_row(m, func);
	m->free_count++;
	m->free_bytes += size;
	if (r) {
		r->free_count++;
		r->free_bytes += size;
		if (native)
			r->native_free_bytes += size;
		if (was_live)
			r->live_bytes -= size;
	}
	if (was_live) {
		m->procs[proc].live_bytes -= size;
		m->procs[proc].live_blocks--;
		if (native)
			m->procs[proc].native_live_bytes -= size;
	}
}

/* Copy every function's live bytes as the holders of the peak. */
static void copy_holders(struct ulma_profile_memory *m)
{
	for (uint32_t i = 0; i < m->nfuncs; i++)
		m->funcs[i].peak_bytes = m->funcs[i].live_bytes;
}

static void note_peak(struct ulma_profile_memory *m, uint32_t proc, uint64_t ticks)
{
	struct ulma_mem_proc *pr = &m->procs[proc];
	if (pr->live_bytes <= pr->peak_bytes)
		return;
	pr->peak_bytes = pr->live_bytes;
	pr->peak_ticks = ticks;
	const struct ulma_mem_proc *best = &m->procs[m->peak_proc];
	if (proc != m->peak_proc && pr->peak_bytes <= best->peak_bytes)
		return;
	if (proc != m->peak_proc || pr->live_bytes - m->snap_bytes >= m->snap_bytes / PEAK_STEP + 1) {
		m->peak_proc = proc;
		m->snap_bytes = pr->live_bytes;
		copy_holders(m);
	}
}

int ulma_profile_mem_alloc(struct ulma_profile *p, uint32_t thread, uint64_t addr, uint64_t size, unsigned domain,
			   uint64_t ticks)
{
	bool native = domain == ULMA_MEM_NATIVE;
	struct ulma_profile_memory *m = p->memory;
	struct ulma_thread_row *t = &p->threads[thread];
	struct ulma_mem_thread *mt = thread_mem(p, t, t->depth);
	if (!mt)
		return -ENOMEM;
	uint32_t func = t->depth ? t->top : ULMA_MEM_NO_FUNC;
	struct ulma_mem_func *r = func == ULMA_MEM_NO_FUNC ? NULL : &m->funcs[func];
	m->alloc_count++;
	m->alloc_bytes += size;
	t->alloc_count++;
	t->alloc_bytes += size;
	if (native) {
		m->native_alloc_count++;
		m->native_alloc_bytes += size;
	}
	if (r) {
		r->alloc_count++;
		r->alloc_bytes += size;
		if (native) {
			r->native_alloc_count++;
			r->native_alloc_bytes += size;
		}
		mt->acc[t->depth - 1].count++;
		mt->acc[t->depth - 1].bytes += size;
	} else {
		m->outside_count++;
		m->outside_bytes += size;
	}
	struct ulma_mem_where w;
	struct ulma_mem_block *b = ulma_mem_table_find(&m->table, mt->proc, addr, &w);
	if (b) {
		bool ghost = b->size == ULMA_MEM_GHOST;
		if (b->ticks > ticks) {
			/* a later block, or a later free, at this address: this block
			 * was freed before it (the free may still be in a ring) */
			if (ghost && !b->func) {
				b->func = 1; /* that free was this block's */
				m->unmatched--;
			}
			block_gone(m, func, mt->proc, size, native, false);
			return 0;
		}
		if (ghost) { /* freed before: the address is free for this block */
			if (!b->func) {
				m->unknown_frees++; /* a free of a block allocated before tracing */
				m->unmatched--;
			}
			m->nghosts--;
		} else { /* an older block whose free is still in another thread's ring */
			block_gone(m, b->func, mt->proc, b->size, b->node & ULMA_MEM_NODE_NATIVE, true);
		}
	} else if (!(b = ulma_mem_table_add(&m->table, &w))) {
		m->untracked++;
		return 0; /* counted, not kept: its free will be of an unknown block */
	}
	*b = (struct ulma_mem_block){size, ticks, func, context(m, t, mt) | (native ? ULMA_MEM_NODE_NATIVE : 0)};
	if (r)
		r->live_bytes += size;
	struct ulma_mem_proc *pr = &m->procs[mt->proc];
	pr->live_bytes += size;
	pr->live_blocks++;
	if (native)
		pr->native_live_bytes += size;
	note_peak(m, mt->proc, ticks);
	return 0;
}

int ulma_profile_mem_free(struct ulma_profile *p, uint32_t thread, uint64_t addr, uint64_t ticks)
{
	struct ulma_profile_memory *m = p->memory;
	struct ulma_thread_row *t = &p->threads[thread];
	struct ulma_mem_thread *mt = thread_mem(p, t, t->depth);
	if (!mt)
		return -ENOMEM;
	struct ulma_mem_where w;
	struct ulma_mem_block *b = ulma_mem_table_find(&m->table, mt->proc, addr, &w);
	if (b && b->size != ULMA_MEM_GHOST) {
		if (b->ticks > ticks)
			return 0; /* stale: of an older block, counted as freed when this one came */
		block_gone(m, b->func, mt->proc, b->size, b->node & ULMA_MEM_NODE_NATIVE, true);
		*b = (struct ulma_mem_block){ULMA_MEM_GHOST, ticks, 1, 0};
		m->nghosts++;
		return 0;
	}
	if (b) { /* freed again: an allocation between the two is still in a ring, or was not seen */
		if (ticks > b->ticks) {
			if (!b->func)
				m->unknown_frees++;
			else
				m->unmatched++;
			*b = (struct ulma_mem_block){ULMA_MEM_GHOST, ticks, 0, 0};
		}
		return 0;
	}
	/* as many ghosts as live blocks are kept, so that a sweep of the table
	 * removes a quarter of it or more (sweeping a large table for a few
	 * ghosts took 10% of the monitor's time on bench/workloads/numeric.py) */
	if (m->nghosts >= ULMA_MEM_GHOSTS_MAX && m->nghosts * 2 >= m->table.used) {
		drop_ghosts(m);
		ulma_mem_table_find(&m->table, mt->proc, addr, &w);
	}
	if (!(b = ulma_mem_table_add(&m->table, &w))) {
		m->unknown_frees++;
		return 0;
	}
	*b = (struct ulma_mem_block){ULMA_MEM_GHOST, ticks, 0, 0};
	m->nghosts++;
	m->unmatched++;
	return 0;
}

/* ---- at the end ---- */

static int by_bytes(const void *a, const void *b)
{
	const struct ulma_mem_leak *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->node < y->node ? -1 : x->node > y->node;
}

/* The live blocks of process index proc (UINT32_MAX: all), grouped by
 * calling context, largest first. */
static int live_by_node(const struct ulma_profile *p, uint32_t proc, struct ulma_mem_leak **out, uint32_t *n)
{
	const struct ulma_profile_memory *m = p->memory;
	*out = NULL;
	*n = 0;
	if (!m)
		return 0;
	struct ulma_mem_leak *by_node = calloc(m->nnodes, sizeof(*by_node));
	if (!by_node)
		return -ENOMEM;
	uint64_t at = 0;
	uint32_t its_proc;
	for (const struct ulma_mem_block *b; (b = ulma_mem_table_next(&m->table, &at, &its_proc));) {
		uint32_t node = b->node & ~ULMA_MEM_NODE_NATIVE;
		if (b->size == ULMA_MEM_GHOST || node >= m->nnodes || (proc != UINT32_MAX && its_proc != proc))
			continue;
		by_node[node].bytes += b->size;
		by_node[node].count++;
		if (b->node & ULMA_MEM_NODE_NATIVE) {
			by_node[node].native_bytes += b->size;
			by_node[node].native_count++;
		}
	}
	uint32_t k = 0;
	for (uint32_t v = 0; v < m->nnodes; v++)
		if (by_node[v].count) {
			by_node[k] = by_node[v];
			by_node[k++].node = v;
		}
	qsort(by_node, k, sizeof(*by_node), by_bytes);
	*out = by_node;
	*n = k;
	return 0;
}

int ulma_profile_memory_leaks(const struct ulma_profile *p, struct ulma_mem_leak **out, uint32_t *n)
{
	return live_by_node(p, UINT32_MAX, out, n);
}

int ulma_profile_memory_live_of(const struct ulma_profile *p, uint32_t pid, struct ulma_mem_leak **out, uint32_t *n)
{
	const struct ulma_profile_memory *m = p->memory;
	uint32_t proc = 0;
	while (m && proc < m->nprocs && m->procs[proc].pid != pid)
		proc++;
	if (!m || proc == m->nprocs) {
		*out = NULL;
		*n = 0;
		return 0;
	}
	return live_by_node(p, proc, out, n);
}

const struct ulma_mem_proc *ulma_profile_memory_peak(const struct ulma_profile *p)
{
	const struct ulma_profile_memory *m = p->memory;
	return m && m->nprocs ? &m->procs[m->peak_proc] : NULL;
}

int ulma_profile_mem_rss(struct ulma_profile *p, uint32_t pid, uint64_t bytes)
{
	if (!p->memory)
		return 0;
	uint32_t proc = proc_of(p->memory, pid);
	if (proc == UINT32_MAX)
		return -ENOMEM;
	struct ulma_mem_proc *pr = &p->memory->procs[proc];
	if (bytes > pr->peak_rss_bytes)
		pr->peak_rss_bytes = bytes;
	return 0;
}

uint64_t ulma_profile_memory_peak_rss(const struct ulma_profile *p)
{
	uint64_t peak = 0;
	for (uint32_t i = 0; p->memory && i < p->memory->nprocs; i++)
		if (p->memory->procs[i].peak_rss_bytes > peak)
			peak = p->memory->procs[i].peak_rss_bytes;
	return peak;
}
