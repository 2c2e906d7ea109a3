/* mem_table.h - the live-block table of `--memory`: one entry per
 * (process, address), laid out by address.
 *
 * A program's allocator hands out neighbouring addresses one after the
 * other (pymalloc carves each 16 KiB pool in order and reuses its freed
 * blocks, glibc splits its top chunk), and frees them in much the same
 * neighbourhoods.  So the table keeps the entries of neighbouring
 * addresses together: the address space is cut into chunks of 1 KiB, 64
 * granules of 16 bytes (every block pymalloc and glibc give on x86-64 is
 * 16-byte aligned), and a chunk holds the entries of its addresses in one
 * array, in address order, with a 64-bit map of the granules that have
 * one: an entry's index is the number of bits set below its own.  The
 * events of a pool then touch a few cache lines of one array instead of a
 * random line of a large hash table each, and the table holds 24 bytes per
 * entry (and a chunk's 32) instead of a hashed table's slack.  Chunks are
 * found by key, (process, address >> 10), in an open-addressing hash table.
 * An address that is not 16-byte aligned (a custom allocator's) goes to a
 * fine chunk, 64 bytes of 1-byte granules, keyed apart: any address has
 * its own entry.
 *
 * Bounds: at most ULMA_MEM_TABLE_ENTRIES_MAX entries and
 * ULMA_MEM_TABLE_CHUNKS_MAX chunks (ulma_mem_table_add then says no).
 * Memory: 24 bytes per entry, in arrays of a power of two entries (at most
 * twice what they hold) carved from 2 MiB regions on huge pages, plus 32
 * to 128 bytes per chunk (its slot in the hash table, kept between 1/4 and
 * 1/2 full).  An array given back is kept for the next of its size, and
 * the regions stay until the table is freed: they hold, for each of the 7
 * sizes, the most arrays of that size ever used at once (at worst 7 times
 * the most the entries took; bench/workloads/numeric.py: 118 MiB of
 * regions for at most 4.7 M entries, 112 MB).  At the bounds, 1.5 GiB of
 * entries and 512 MiB of slots.
 *
 * What an entry holds (struct ulma_mem_block) is the caller's: the table
 * only finds, adds and removes entries.  Single-threaded.  A pointer to an
 * entry, or a struct ulma_mem_where, stays valid until the next
 * ulma_mem_table_add or ulma_mem_table_sweep. */
#ifndef ULMA_MEM_TABLE_H
#define ULMA_MEM_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ULMA_MEM_TABLE_ENTRIES_MAX (UINT64_C(1) << 25) /* 32 Mi entries */
#define ULMA_MEM_TABLE_CHUNKS_MAX (UINT64_C(1) << 23)  /* 8 Mi chunks: a 512 MiB hash table of them */

struct ulma_mem_block {
	uint64_t size;
	uint64_t ticks;
	uint32_t func;
	uint32_t node;
};

struct ulma_mem_chunk {
	uint64_t key;                  /* chunk_key(); 0: an empty slot */
	uint64_t bits;                 /* bit g: granule g has an entry */
	struct ulma_mem_block *blocks; /* popcount(bits) entries, in address order */
	uint32_t cap;                  /* entries blocks has room for (a power of two) */
};

struct ulma_mem_table {
	struct ulma_mem_chunk *chunks; /* open addressing, linear probing, at most half full */
	uint64_t mask;                 /* slots - 1 */
	uint64_t nchunks;
	uint64_t used; /* entries */
	uint64_t max_entries, max_chunks; /* the bounds: ULMA_MEM_TABLE_*_MAX (a test may lower them) */
	/* where the entry arrays come from (mem_table.c) */
	void *free_arrays[7]; /* arrays of 1, 2, 4 ... 64 entries given back, each holding the next */
	char *carve, *carve_end; /* the current region's part not handed out yet */
	void **regions;
	uint32_t nregions, cap_regions;
};

/* Where an address's entry is, or would be added. */
struct ulma_mem_where {
	struct ulma_mem_chunk *chunk; /* its chunk, or the empty slot its chunk would take */
	uint64_t key;
	unsigned bit;
	unsigned at; /* its index in the chunk's entries */
};

static inline uint64_t ulma_mem_mix(uint64_t k)
{
	k ^= k >> 29;
	k *= UINT64_C(0xbf58476d1ce4e5b9);
	k ^= k >> 32;
	return k;
}

/* The bits set in x.  (__builtin_popcountll is a call into libgcc on the
 * x86-64 baseline, which has no popcnt instruction.) */
static inline unsigned ulma_mem_table_count(uint64_t x)
{
	x -= (x >> 1) & UINT64_C(0x5555555555555555);
	x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
	x = (x + (x >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
	return (unsigned)((x * UINT64_C(0x0101010101010101)) >> 56);
}

/* The key of the chunk of address addr (its low 48 bits) in process index
 * proc (below 65535), and the address's granule in it. */
static inline uint64_t ulma_mem_table_key(uint32_t proc, uint64_t addr, unsigned *bit)
{
	uint64_t a = addr & ((UINT64_C(1) << 48) - 1), key = (uint64_t)(proc + 1) << 48;
	if (__builtin_expect((a & 15) == 0, 1)) {
		*bit = (unsigned)(a >> 4) & 63;
		return key | a >> 10;
	}
	*bit = (unsigned)a & 63; /* a fine chunk */
	return key | UINT64_C(1) << 47 | a >> 6;
}

/* An empty table.  0 or -ENOMEM. */
int ulma_mem_table_init(struct ulma_mem_table *t);
/* Free its memory (a zeroed or half-made table too). */
void ulma_mem_table_free(struct ulma_mem_table *t);

/* The entry of addr in process proc, or NULL; *w says where it is or would go. */
static inline struct ulma_mem_block *ulma_mem_table_find(struct ulma_mem_table *t, uint32_t proc, uint64_t addr,
							 struct ulma_mem_where *w)
{
	uint64_t key = ulma_mem_table_key(proc, addr, &w->bit);
	uint64_t h = ulma_mem_mix(key) & t->mask;
	while (t->chunks[h].key && t->chunks[h].key != key)
		h = (h + 1) & t->mask;
	struct ulma_mem_chunk *c = &t->chunks[h];
	w->chunk = c;
	w->key = key;
	w->at = ulma_mem_table_count(c->bits & ((UINT64_C(1) << w->bit) - 1)); /* an empty slot's bits are 0 */
	return c->bits >> w->bit & 1 ? &c->blocks[w->at] : NULL;
}

struct ulma_mem_block *ulma_mem_table_add_slow(struct ulma_mem_table *t, const struct ulma_mem_where *w);

/* Add the entry ulma_mem_table_find said was missing at *w (nothing was
 * added or swept since), its contents unset.  NULL if the table is at its
 * bounds or out of memory (nothing changed).  Inline: the common case,
 * the address above every other of an existing chunk with room (pymalloc
 * carving a pool), is a bit set. */
static inline struct ulma_mem_block *ulma_mem_table_add(struct ulma_mem_table *t, const struct ulma_mem_where *w)
{
	struct ulma_mem_chunk *c = w->chunk;
	if (__builtin_expect(c->key && !(c->bits >> w->bit) && w->at < c->cap && t->used < t->max_entries, 1)) {
		c->bits |= UINT64_C(1) << w->bit;
		t->used++;
		return &c->blocks[w->at];
	}
	return ulma_mem_table_add_slow(t, w);
}

/* Hints for an address ahead: bring the line of its chunk's slot into
 * the cache, and a few records later, once that line is there, the line
 * of its entry.  Always inlined: GCC 12 finds a helper holding only a
 * prefetch free of side effects and drops the call. */
static inline __attribute__((always_inline)) void ulma_mem_table_prefetch(const struct ulma_mem_table *t, uint32_t proc,
									  uint64_t addr)
{
	unsigned bit;
	__builtin_prefetch(&t->chunks[ulma_mem_mix(ulma_mem_table_key(proc, addr, &bit)) & t->mask]);
}

static inline __attribute__((always_inline)) void ulma_mem_table_prefetch_entry(const struct ulma_mem_table *t,
										uint32_t proc, uint64_t addr)
{
	unsigned bit;
	uint64_t key = ulma_mem_table_key(proc, addr, &bit);
	const struct ulma_mem_chunk *c = &t->chunks[ulma_mem_mix(key) & t->mask];
	if (c->key == key) /* at its home slot, as most are */
		__builtin_prefetch(&c->blocks[ulma_mem_table_count(c->bits & ((UINT64_C(1) << bit) - 1))]);
}

/* Remove the entries for which drop(ctx, proc, entry) is true; each entry
 * is shown once.  Chunks left empty are freed. */
void ulma_mem_table_sweep(struct ulma_mem_table *t, bool (*drop)(void *ctx, uint32_t proc, const struct ulma_mem_block *b),
			  void *ctx);

/* Every entry, in no useful order: start with *at = 0 and call until NULL;
 * *proc is the entry's process.  Nothing may be added or swept meanwhile. */
const struct ulma_mem_block *ulma_mem_table_next(const struct ulma_mem_table *t, uint64_t *at, uint32_t *proc);

#endif
