/* mem_table.c - the live-block table of `--memory`, laid out by address
 * (see mem_table.h). */
#include "mem_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS_MIN 256u /* chunk slots of a new table */

int ulma_mem_table_init(struct ulma_mem_table *t)
{
	*t = (struct ulma_mem_table){0};
	t->chunks = calloc(SLOTS_MIN, sizeof(*t->chunks));
	if (!t->chunks)
		return -ENOMEM;
	t->mask = SLOTS_MIN - 1;
	t->max_entries = ULMA_MEM_TABLE_ENTRIES_MAX;
	t->max_chunks = ULMA_MEM_TABLE_CHUNKS_MAX;
	return 0;
}

void ulma_mem_table_free(struct ulma_mem_table *t)
{
	for (uint64_t i = 0; t->chunks && i <= t->mask; i++)
		free(t->chunks[i].blocks);
	free(t->chunks);
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
	struct ulma_mem_chunk *old = t->chunks, *grown = calloc(old_slots * 2, sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	t->chunks = grown;
	t->mask = old_slots * 2 - 1;
	for (uint64_t i = 0; i < old_slots; i++)
		if (old[i].key)
			*free_slot(t, old[i].key) = old[i];
	free(old);
	return 0;
}

struct ulma_mem_block *ulma_mem_table_add(struct ulma_mem_table *t, const struct ulma_mem_where *w)
{
	struct ulma_mem_chunk *c = w->chunk;
	if (t->used >= t->max_entries)
		return NULL;
	if (!c->key) { /* the chunk's first entry */
		if (t->nchunks >= t->max_chunks)
			return NULL;
		struct ulma_mem_block *b = malloc(sizeof(*b));
		if (!b)
			return NULL;
		if ((t->nchunks + 1) * 2 > t->mask + 1) {
			if (grow_slots(t)) {
				free(b);
				return NULL;
			}
			c = free_slot(t, w->key);
		}
		*c = (struct ulma_mem_chunk){w->key, UINT64_C(1) << w->bit, b, 1};
		t->nchunks++;
		t->used++;
		return b;
	}
	uint32_t n = ulma_mem_table_count(c->bits);
	uint32_t at = ulma_mem_table_count(c->bits & ((UINT64_C(1) << w->bit) - 1));
	if (n == c->cap) {
		struct ulma_mem_block *grown = realloc(c->blocks, (size_t)c->cap * 2 * sizeof(*grown));
		if (!grown)
			return NULL;
		c->blocks = grown;
		c->cap *= 2;
	}
	memmove(&c->blocks[at + 1], &c->blocks[at], (n - at) * sizeof(*c->blocks));
	c->bits |= UINT64_C(1) << w->bit;
	t->used++;
	return &c->blocks[at];
}

/* Remove the chunk at slot i (backward-shift deletion keeps every probe
 * chain whole: a later chunk of the chain may move into i). */
static void erase(struct ulma_mem_table *t, uint64_t i)
{
	free(t->chunks[i].blocks);
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
		struct ulma_mem_block *less = realloc(c->blocks, (size_t)cap * sizeof(*less));
		if (less) {
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
