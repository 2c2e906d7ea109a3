/* test_mem_table.c - the live-block table laid out by address
 * (src/analysis/mem_table.c) against a reference model: an array indexed
 * by a universe of (process, address) pairs, the addresses drawn as a
 * program's are (16-byte blocks carved from pools, large blocks far apart,
 * 8-aligned and odd addresses of a custom allocator, the same addresses in
 * three processes).  Random finds, adds, changes and sweeps; after each
 * sweep every entry is found where the model has it (probe chains stay
 * whole across erased chunks), the iteration shows each entry once, and
 * the counts agree.  Then the bounds: a full table adds nothing and
 * changes nothing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/mem_table.h"
#include "tap.h"

#define POOLS 24
#define POOL_BLOCKS 512 /* 16 KiB pools of 32-byte blocks */
#define LARGE 2000      /* blocks 4 KiB apart and more */
#define ODD 3000        /* addresses not 16-byte aligned */
#define PER_PROC (POOLS * POOL_BLOCKS + LARGE + ODD)
#define PROCS 3
#define UNIVERSE (PER_PROC * PROCS)

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t addrs[PER_PROC];

struct model {
	bool present;
	struct ulma_mem_block b;
};
static struct model model[UNIVERSE];

static void make_addresses(void)
{
	uint32_t n = 0;
	for (uint32_t p = 0; p < POOLS; p++) { /* pools at random places, apart */
		uint64_t base = 0x7f0000000000ull + (p * 37 + next_rand() % 30) * 16384;
		for (uint32_t i = 0; i < POOL_BLOCKS; i++)
			addrs[n++] = base + i * 32;
	}
	for (uint32_t i = 0; i < LARGE; i++) /* 4 KiB to 40 KiB apart */
		addrs[n++] = 0x550000000000ull + (uint64_t)i * 20480 + (i % 5) * 4096;
	for (uint32_t i = 0; i < ODD; i++) /* 8 apart, and odd */
		addrs[n++] = 0x600000000000ull + (uint64_t)(i / 2) * 24 + (i & 1 ? 8 : 3);
}

static uint32_t proc_of(uint32_t id)
{
	return id / PER_PROC;
}

static uint64_t addr_of(uint32_t id)
{
	return addrs[id % PER_PROC];
}

static bool same(const struct ulma_mem_block *a, const struct ulma_mem_block *b)
{
	return a->size == b->size && a->ticks == b->ticks && a->func == b->func && a->node == b->node;
}

/* Drop the entries whose size is a multiple of `modulus`, from both. */
static bool drop_multiple(void *ctx, uint32_t proc, const struct ulma_mem_block *b)
{
	(void)proc;
	return b->size % *(uint64_t *)ctx == 0;
}

/* Every model entry is found with its contents, the others are not; the
 * iteration shows each entry once; the counts agree. */
static bool agrees(struct ulma_mem_table *t)
{
	uint64_t present = 0;
	for (uint32_t id = 0; id < UNIVERSE; id++) {
		struct ulma_mem_where w;
		const struct ulma_mem_block *b = ulma_mem_table_find(t, proc_of(id), addr_of(id), &w);
		if (!model[id].present ? b != NULL : !b || !same(b, &model[id].b)) {
			tap_diag("id %u (proc %u, address %#llx): %s", id, proc_of(id), (unsigned long long)addr_of(id),
				 model[id].present ? "missing or wrong" : "there but should not be");
			return false;
		}
		present += model[id].present;
	}
	uint64_t at = 0, seen = 0;
	uint32_t proc;
	for (const struct ulma_mem_block *b; (b = ulma_mem_table_next(t, &at, &proc));) {
		uint32_t id = (uint32_t)b->ticks; /* each entry's ticks is its id */
		if (id >= UNIVERSE || !model[id].present || proc_of(id) != proc) {
			tap_diag("iteration: an entry the model does not have (%u)", id);
			return false;
		}
		seen++;
	}
	if (seen != present || t->used != present) {
		tap_diag("iteration saw %llu, used %llu, the model has %llu", (unsigned long long)seen,
			 (unsigned long long)t->used, (unsigned long long)present);
		return false;
	}
	return true;
}

static void test_random_against_model(void)
{
	struct ulma_mem_table t;
	if (!CHECK_EQ_I64(ulma_mem_table_init(&t), 0, "init"))
		return;
	memset(model, 0, sizeof(model));
	uint32_t rounds_ok = 0, rounds = 0, sweeps = 0;
	uint64_t adds = 0, changes = 0, max_chunks = 0;
	for (uint32_t round = 0; round < 12; round++) {
		/* a burst of allocations in pools (in order, as pymalloc carves
		 * them) and scattered elsewhere, then changes */
		for (uint32_t op = 0; op < 60000; op++) {
			uint32_t id;
			if (op % 3 == 0) { /* in order through a pool */
				uint32_t pool = (uint32_t)(next_rand() % POOLS), first = (uint32_t)(next_rand() % POOL_BLOCKS);
				id = proc_of((uint32_t)(next_rand() % UNIVERSE)) * PER_PROC + pool * POOL_BLOCKS +
				     (first + op / 3 % 64) % POOL_BLOCKS;
			} else {
				id = (uint32_t)(next_rand() % UNIVERSE);
			}
			struct ulma_mem_where w;
			struct ulma_mem_block *b = ulma_mem_table_find(&t, proc_of(id), addr_of(id), &w);
			if ((b != NULL) != model[id].present) {
				tap_diag("find of %u disagrees with the model", id);
				break;
			}
			struct ulma_mem_block v = {1 + next_rand() % 1000, id, (uint32_t)next_rand(), (uint32_t)next_rand()};
			if (!b) {
				b = ulma_mem_table_add(&t, &w);
				if (!b)
					break;
				adds++;
			} else {
				changes++;
			}
			*b = v;
			model[id] = (struct model){true, v};
		}
		if (t.nchunks > max_chunks)
			max_chunks = t.nchunks;
		uint64_t modulus = 2 + round % 3; /* drop half, a third or a quarter */
		if (round == 11)
			modulus = 1; /* the last: everything */
		ulma_mem_table_sweep(&t, drop_multiple, &modulus);
		sweeps++;
		for (uint32_t id = 0; id < UNIVERSE; id++)
			if (model[id].present && model[id].b.size % modulus == 0)
				model[id].present = false;
		rounds++;
		rounds_ok += agrees(&t);
	}
	CHECK(rounds_ok == rounds, "after each of %u sweeps, the table is the model (%u agreed)", sweeps, rounds_ok);
	CHECK(adds > 100000 && changes > 100000, "many adds (%llu) and changes (%llu)", (unsigned long long)adds,
	      (unsigned long long)changes);
	CHECK(max_chunks > 1000, "chunks enough to collide and grow the slots (%llu, %llu slots)",
	      (unsigned long long)max_chunks, (unsigned long long)t.mask + 1);
	CHECK(t.used == 0 && t.nchunks == 0, "everything swept: no entry, no chunk");
	uint64_t empty = 0;
	for (uint64_t i = 0; i <= t.mask; i++)
		empty += t.chunks[i].key == 0 && t.chunks[i].blocks == NULL;
	CHECK_EQ_U64(empty, t.mask + 1, "every slot empty, its entries freed");
	ulma_mem_table_free(&t);
}

/* Neighbouring addresses share a chunk; the same address in two
 * processes, and an address 8 bytes off, do not. */
static void test_layout(void)
{
	struct ulma_mem_table t;
	if (!CHECK_EQ_I64(ulma_mem_table_init(&t), 0, "init"))
		return;
	struct ulma_mem_where w;
	for (uint64_t i = 0; i < 64; i++) { /* one KiB: 64 granules, added backwards */
		uint64_t a = 0x10000 + (63 - i) * 16;
		if (!ulma_mem_table_find(&t, 0, a, &w))
			*ulma_mem_table_add(&t, &w) = (struct ulma_mem_block){a, 0, 0, 0};
	}
	CHECK_EQ_U64(t.nchunks, 1, "one KiB of 16-byte blocks: one chunk");
	bool ordered = true;
	struct ulma_mem_chunk *c = ulma_mem_table_find(&t, 0, 0x10000, &w) ? w.chunk : NULL;
	for (uint32_t i = 0; c && i < 64; i++)
		ordered &= c->blocks[i].size == 0x10000 + i * 16;
	CHECK(c && ordered && c->bits == UINT64_MAX, "its entries in address order, every granule's bit set");
	uint64_t before = t.nchunks;
	*ulma_mem_table_add(&t, (ulma_mem_table_find(&t, 1, 0x10000, &w), &w)) = (struct ulma_mem_block){1, 0, 0, 0};
	*ulma_mem_table_add(&t, (ulma_mem_table_find(&t, 0, 0x10008, &w), &w)) = (struct ulma_mem_block){2, 0, 0, 0};
	*ulma_mem_table_add(&t, (ulma_mem_table_find(&t, 0, 0x10009, &w), &w)) = (struct ulma_mem_block){3, 0, 0, 0};
	CHECK_EQ_U64(t.nchunks, before + 2, "another process's chunk, and one fine chunk for the two misaligned");
	const struct ulma_mem_block *b0 = ulma_mem_table_find(&t, 0, 0x10000, &w),
				    *b1 = ulma_mem_table_find(&t, 1, 0x10000, &w),
				    *b8 = ulma_mem_table_find(&t, 0, 0x10008, &w),
				    *b9 = ulma_mem_table_find(&t, 0, 0x10009, &w);
	CHECK(b0 && b1 && b8 && b9 && b0->size == 0x10000 && b1->size == 1 && b8->size == 2 && b9->size == 3,
	      "each its own entry");
	CHECK(ulma_mem_table_find(&t, 2, 0x10000, &w) == NULL && ulma_mem_table_find(&t, 0, 0x1000a, &w) == NULL,
	      "an address no one added is not found");
	ulma_mem_table_free(&t);
}

/* Add addr in process 0 if it is not there; the entry, or NULL. */
static struct ulma_mem_block *put(struct ulma_mem_table *t, uint64_t addr)
{
	struct ulma_mem_where w;
	struct ulma_mem_block *b = ulma_mem_table_find(t, 0, addr, &w);
	if (!b && (b = ulma_mem_table_add(t, &w)))
		*b = (struct ulma_mem_block){addr, 0, 0, 0};
	return b;
}

/* At its bounds the table adds nothing and changes nothing. */
static void test_bounds(void)
{
	struct ulma_mem_table t;
	if (!CHECK_EQ_I64(ulma_mem_table_init(&t), 0, "init"))
		return;
	t.max_entries = 100;
	t.max_chunks = 10;
	uint32_t added = 0;
	for (uint64_t k = 0; k < 10; k++) /* ten chunks of one entry each */
		added += put(&t, 0x100000 + k * 1024) != NULL;
	CHECK(added == 10 && t.nchunks == 10, "ten chunks");
	CHECK(put(&t, 0x900000) == NULL && t.nchunks == 10 && t.used == 10, "an eleventh chunk: refused, nothing changed");
	for (uint64_t i = 0; i < 200; i++) /* fill the ten: 640 granules, 100 entries at most */
		added += put(&t, 0x100000 + (i % 10) * 1024 + (1 + i / 10) * 16) != NULL;
	CHECK_EQ_U64(added, 100, "entries stop at their bound");
	CHECK(t.used == 100 && t.nchunks == 10, "the counts agree");
	uint64_t at = 0, seen = 0;
	uint32_t proc;
	for (const struct ulma_mem_block *b; (b = ulma_mem_table_next(&t, &at, &proc));) {
		struct ulma_mem_where w;
		seen += ulma_mem_table_find(&t, 0, b->size, &w) == b;
	}
	CHECK_EQ_U64(seen, 100, "each entry found at its address, the refused left nothing behind");
	ulma_mem_table_free(&t);
}

int main(void)
{
	make_addresses();
	test_random_against_model();
	test_layout();
	test_bounds();
	return tap_done();
}
