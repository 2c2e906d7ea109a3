/* mem_table.c - the live-block table of `--memory`, laid out by address
 * (see mem_table.h).
 *
 * Its memory is its own: chunks' entry arrays are carved from regions of
 * REGION_BYTES, and the slots, once that large, mapped apart, all marked
 * for transparent huge pages.  A large table is read at random by the
 * frees of blocks allocated long before; on 4 KiB pages each such lookup
 * also misses the TLB (numeric's events replayed into the real drain
 * loop: 60 ns of monitor CPU per event on 4 KiB pages, 51 on huge pages,
 * malloc's arrays 61).  An array given back (grown, shrunk, its chunk
 * swept away) goes to the free list of its size, for the next of that
 * size: the regions are kept until the table is freed. */
#include "mem_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../core/array.h"

#define SLOTS_MIN 256u                       /* chunk slots of a new table */
#define REGION_BYTES (UINT64_C(2) << 20)     /* one huge page */

/* Anonymous zeroed memory of `bytes` (a multiple of REGION_BYTES), aligned
 * to REGION_BYTES and marked for huge pages (a hint: without them, plain
 * pages).  NULL if none. */
static void *map_huge(uint64_t bytes)
{
	char *p = mmap(NULL, bytes + REGION_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uint64_t head = (REGION_BYTES - ((uintptr_t)p & (REGION_BYTES - 1))) & (REGION_BYTES - 1);
	if (head)
		munmap(p, head);
	munmap(p + head + bytes, REGION_BYTES - head);
	madvise(p + head, bytes, MADV_HUGEPAGE);
	return p + head;
}

/* The slots: small ones from malloc, large ones mapped on huge pages. */
static uint64_t slots_bytes(uint64_t slots)
{
	uint64_t bytes = slots * sizeof(struct ulma_mem_chunk);
	return bytes < REGION_BYTES ? bytes : (bytes + REGION_BYTES - 1) & ~(REGION_BYTES - 1);
}

static struct ulma_mem_chunk *slots_new(uint64_t slots)
{
	uint64_t bytes = slots_bytes(slots);
	return bytes < REGION_BYTES ? calloc(1, bytes) : map_huge(bytes);
}

static void slots_free(struct ulma_mem_chunk *chunks, uint64_t slots)
{
	uint64_t bytes = slots_bytes(slots);
	if (bytes < REGION_BYTES)
		free(chunks);
	else if (chunks)
		munmap(chunks, bytes);
}

/* An array of 1 << cls entries: a freed one of that size, or carved from
 * the current region (a new region when it has too little left).  NULL if
 * out of memory. */
static struct ulma_mem_block *array_get(struct ulma_mem_table *t, unsigned cls)
{
	void *p = t->free_arrays[cls];
	if (p) {
		memcpy(&t->free_arrays[cls], p, sizeof(p)); /* the next, kept in its first word */
		return p;
	}
	uint64_t bytes = ((uint64_t)1 << cls) * sizeof(struct ulma_mem_block);
	if ((uint64_t)(t->carve_end - t->carve) < bytes) {
		if (ulma_array_grow((void **)&t->regions, &t->cap_regions, t->nregions, sizeof(*t->regions)))
			return NULL;
		char *region = map_huge(REGION_BYTES);
		if (!region)
			return NULL;
		t->regions[t->nregions++] = region;
		t->carve = region; /* what the last one had left (less than an array) is not used */
		t->carve_end = region + REGION_BYTES;
	}
	p = t->carve;
	t->carve += bytes;
	return p;
}

static void array_put(struct ulma_mem_table *t, unsigned cls, struct ulma_mem_block *a)
{
	memcpy(a, &t->free_arrays[cls], sizeof(void *));
	t->free_arrays[cls] = a;
}

/* The size class of an array of cap entries (a power of two). */
static unsigned class_of(uint32_t cap)
{
	return (unsigned)__builtin_ctz(cap);
}

int ulma_mem_table_init(struct ulma_mem_table *t)
{
	*t = (struct ulma_mem_table){0};
	t->chunks = slots_new(SLOTS_MIN);
	if (!t->chunks)
		return -ENOMEM;
	t->mask = SLOTS_MIN - 1;
	t->max_entries = ULMA_MEM_TABLE_ENTRIES_MAX;
	t->max_chunks = ULMA_MEM_TABLE_CHUNKS_MAX;
	return 0;
}

void ulma_mem_table_free(struct ulma_mem_table *t)
{
	slots_free(t->chunks, t->mask + 1);
	for (uint32_t i = 0; i < t->nregions; i++)
		munmap(t->regions[i], REGION_BYTES);
	free(t->regions);
	*t = (struct ulma_mem_table){0};
}

/* The empty slot where a chunk of key goes (the key is not in the table). */
static struct ulma_mem_chunk *free_slot(struct ulma_mem_table *t, uint64_t key)
{
	uint64_t h = ulma_mem_mix(key) & t->mask;
	while (t->chunks[h].key)
		h = (h + 1) & t->mask;
	return &t->chunks[h];
}

static int grow_slots(struct ulma_mem_table *t)
{
	uint64_t old_slots = t->mask + 1;
	struct ulma_mem_chunk *old = t->chunks, *grown = slots_new(old_slots * 2);
	if (!grown)
		return -ENOMEM;
	t->chunks = grown;
	t->mask = old_slots * 2 - 1;
	for (uint64_t i = 0; i < old_slots; i++)
		if (old[i].key)
			*free_slot(t, old[i].key) = old[i];
	slots_free(old, old_slots);
	return 0;
}

/* ulma_mem_table_add's other cases: a new chunk, an entry between
 * others, a full array. */
struct ulma_mem_block *ulma_mem_table_add_slow(struct ulma_mem_table *t, const struct ulma_mem_where *w)
{
	struct ulma_mem_chunk *c = w->chunk;
	if (t->used >= t->max_entries)
		return NULL;
	if (!c->key) { /* the chunk's first entry */
		if (t->nchunks >= t->max_chunks)
			return NULL;
		struct ulma_mem_block *b = array_get(t, 0);
		if (!b)
			return NULL;
		if ((t->nchunks + 1) * 2 > t->mask + 1) {
			if (grow_slots(t)) {
				array_put(t, 0, b);
				return NULL;
			}
			c = free_slot(t, w->key);
		}
		*c = (struct ulma_mem_chunk){w->key, UINT64_C(1) << w->bit, b, 1};
		t->nchunks++;
		t->used++;
		return b;
	}
	uint32_t at = w->at, n = ulma_mem_table_count(c->bits);
	if (n == c->cap) { /* into an array twice the size, with a gap at `at` */
		struct ulma_mem_block *grown = array_get(t, class_of(c->cap) + 1);
		if (!grown)
			return NULL;
		memcpy(grown, c->blocks, at * sizeof(*grown));
		memcpy(&grown[at + 1], &c->blocks[at], (n - at) * sizeof(*grown));
		array_put(t, class_of(c->cap), c->blocks);
		c->blocks = grown;
		c->cap *= 2;
	} else if (at < n) {
		memmove(&c->blocks[at + 1], &c->blocks[at], (n - at) * sizeof(*c->blocks));
	}
	c->bits |= UINT64_C(1) << w->bit;
	t->used++;
	return &c->blocks[at];
}

/* Remove the chunk at slot i (backward-shift deletion keeps every probe
 * chain whole: a later chunk of the chain may move into i). */
static void erase(struct ulma_mem_table *t, uint64_t i)
{
	array_put(t, class_of(t->chunks[i].cap), t->chunks[i].blocks);
	t->nchunks--;
	for (uint64_t j = (i + 1) & t->mask;; j = (j + 1) & t->mask) {
		if (!t->chunks[j].key)
			break;
		uint64_t home = ulma_mem_mix(t->chunks[j].key) & t->mask;
		/* j's chunk may fill the hole at i if its home is not in (i, j] */
		if (((j - home) & t->mask) >= ((j - i) & t->mask)) {
			t->chunks[i] = t->chunks[j];
			i = j;
		}
	}
	t->chunks[i] = (struct ulma_mem_chunk){0};
}

static uint32_t proc_of_key(uint64_t key)
{
	return (uint32_t)(key >> 48) - 1;
}

/* Drop chunk c's entries that drop() says; true if it is left empty. */
static bool sweep_chunk(struct ulma_mem_table *t, struct ulma_mem_chunk *c,
			bool (*drop)(void *ctx, uint32_t proc, const struct ulma_mem_block *b), void *ctx)
{
	uint64_t bits = c->bits, kept = 0;
	uint32_t n = 0, k = 0, proc = proc_of_key(c->key);
	for (; bits; bits &= bits - 1, n++) {
		if (drop(ctx, proc, &c->blocks[n]))
			continue;
		c->blocks[k++] = c->blocks[n];
		kept |= bits & -bits;
	}
	t->used -= n - k;
	c->bits = kept;
	if (k && k <= c->cap / 4) { /* give back what the entries no longer need */
		uint32_t cap = c->cap;
		while (cap / 2 >= k)
			cap /= 2;
		struct ulma_mem_block *less = array_get(t, class_of(cap));
		if (less) {
			memcpy(less, c->blocks, k * sizeof(*less));
			array_put(t, class_of(c->cap), c->blocks);
			c->blocks = less;
			c->cap = cap;
		}
	}
	return k == 0;
}

void ulma_mem_table_sweep(struct ulma_mem_table *t, bool (*drop)(void *ctx, uint32_t proc, const struct ulma_mem_block *b),
			  void *ctx)
{
	/* Start after an empty slot: a chain then never wraps past the start,
	 * and a chunk moved back by an erase comes from a slot not seen yet. */
	uint64_t start = 0;
	while (t->chunks[start].key)
		start++; /* the table is at most half full */
	for (uint64_t i = (start + 1) & t->mask; i != start;) {
		struct ulma_mem_chunk *c = &t->chunks[i];
		__builtin_prefetch(t->chunks[(i + 4) & t->mask].blocks); /* each chunk's entries are elsewhere */
		if (c->key && sweep_chunk(t, c, drop, ctx))
			erase(t, i); /* a later chunk of the chain may be at i now: look again */
		else
			i = (i + 1) & t->mask;
	}
}

const struct ulma_mem_block *ulma_mem_table_next(const struct ulma_mem_table *t, uint64_t *at, uint32_t *proc)
{
	for (uint64_t slot = *at >> 6, i = *at & 63; slot <= t->mask; slot++, i = 0) {
		const struct ulma_mem_chunk *c = &t->chunks[slot];
		if (i < ulma_mem_table_count(c->bits)) {
			*at = (slot << 6) + i + 1; /* the 64th entry's next is the next slot's first */
			*proc = proc_of_key(c->key);
			return &c->blocks[i];
		}
	}
	*at = (t->mask + 1) << 6;
	return NULL;
}
