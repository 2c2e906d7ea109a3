/* test_profile_memory.c - allocations per function, leaks and the peak
 * (src/analysis/profile_memory.c) and their summary (summary_memory.c),
 * with known answers: self counts the top frame's blocks and the frees of
 * those blocks wherever they happen; total counts a recursive function
 * once; leaks group live blocks by their calling context; the peak and its
 * holders; threads drained out of order (a free seen before its
 * allocation, an address reused before the old block's free is seen)
 * count each block once; processes' addresses are apart; memory off
 * leaves a profile as it was. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/profile.h"
#include "analysis/profile_memory.h"
#include "analysis/summary.h"
#include "tap.h"
#include "ulma/shm.h"

enum { F_MAIN, F_WORK, F_FIB, F_LEAF, NFUNCS };

static void setup(struct ulma_profile *p, uint32_t threads)
{
	ulma_profile_init(p);
	for (uint32_t i = 0; i < threads; i++)
		ulma_profile_add_thread(p, i, i + 1, i < 2 ? 100 : 200, 100 + i); /* threads 0, 1: pid 100 */
	const char *names[NFUNCS] = {"main", "work", "fib", "leaf"};
	for (uint32_t f = 0; f < NFUNCS; f++)
		ulma_profile_add_func(p, f, ULMA_DEF_PY, names[f], strlen(names[f]), "/m.py", 5, f + 1);
	ulma_profile_memory_enable(p);
}

static void test_self_total_leaks(void)
{
	struct ulma_profile p;
	setup(&p, 1);
	uint64_t t = 10;
	/* main -> work: allocates A (100) and B (50), frees A
	 *      -> fib -> fib -> leaf: leaf allocates C (30); the inner fib D (7)
	 * main frees B, allocates E (1000) */
	ulma_profile_enter(&p, 0, F_MAIN, t++);
	ulma_profile_enter(&p, 0, F_WORK, t++);
	ulma_profile_mem_alloc(&p, 0, 0xa000, 100, ULMA_MEM_OBJ, t++);
	ulma_profile_mem_alloc(&p, 0, 0xb000, 50, ULMA_MEM_OBJ, t++);
	ulma_profile_mem_free(&p, 0, 0xa000, t++);
	ulma_profile_exit(&p, 0, t++);
	ulma_profile_enter(&p, 0, F_FIB, t++);
	ulma_profile_enter(&p, 0, F_FIB, t++);
	ulma_profile_enter(&p, 0, F_LEAF, t++);
	ulma_profile_mem_alloc(&p, 0, 0xc000, 30, ULMA_MEM_OBJ, t++);
	ulma_profile_exit(&p, 0, t++);
	ulma_profile_mem_alloc(&p, 0, 0xd000, 7, ULMA_MEM_OBJ, t++);
	ulma_profile_exit(&p, 0, t++);
	ulma_profile_exit(&p, 0, t++);
	ulma_profile_mem_free(&p, 0, 0xb000, t++);
	ulma_profile_mem_alloc(&p, 0, 0xe000, 1000, ULMA_MEM_OBJ, t++);
	ulma_profile_finish(&p, t++);

	struct ulma_mem_func m = ulma_profile_memory_func(&p, F_MAIN), w = ulma_profile_memory_func(&p, F_WORK),
			     fib = ulma_profile_memory_func(&p, F_FIB), leaf = ulma_profile_memory_func(&p, F_LEAF);
	CHECK(w.alloc_count == 2 && w.alloc_bytes == 150, "work: self 2 blocks, 150 bytes");
	CHECK(w.free_count == 2 && w.free_bytes == 150, "work: both its blocks freed (B by main)");
	CHECK(m.alloc_count == 1 && m.free_count == 0, "main: its own block, and B's free is work's");
	CHECK_EQ_U64(m.total_alloc_count, 5, "main: every block below it");
	CHECK_EQ_U64(m.total_alloc_bytes, 1187, "main: every byte below it");
	CHECK(fib.alloc_count == 1 && fib.total_alloc_count == 2 && fib.total_alloc_bytes == 37,
	      "fib: recursion counted once in total");
	CHECK(leaf.total_alloc_bytes == 30 && w.total_alloc_bytes == 150, "leaf and work totals");
	CHECK_EQ_U64(m.live_bytes + fib.live_bytes + leaf.live_bytes + w.live_bytes, 1037, "live at the end");

	struct ulma_mem_leak *leaks;
	uint32_t n;
	CHECK_EQ_I64(ulma_profile_memory_leaks(&p, &leaks, &n), 0, "leaks");
	if (CHECK_EQ_U64(n, 3, "three stacks hold blocks")) {
		uint32_t s[8];
		CHECK(leaks[0].bytes == 1000 && leaks[0].count == 1, "largest first: main's");
		CHECK(ulma_profile_memory_stack(&p, leaks[0].node, s, 8) == 1 && s[0] == F_MAIN, "its stack: main");
		CHECK(leaks[1].bytes == 30, "then leaf's");
		uint32_t k = ulma_profile_memory_stack(&p, leaks[1].node, s, 8);
		CHECK(k == 4 && s[0] == F_MAIN && s[1] == F_FIB && s[2] == F_FIB && s[3] == F_LEAF,
		      "main > fib > fib > leaf, outermost first");
		CHECK(ulma_profile_memory_stack(&p, leaks[1].node, s, 2) == 2 && s[0] == F_FIB && s[1] == F_LEAF,
		      "a cut stack keeps the innermost frames");
		CHECK(leaks[2].bytes == 7, "then the inner fib's");
	}
	free(leaks);
	const struct ulma_mem_proc *pk = ulma_profile_memory_peak(&p);
	CHECK(pk && pk->peak_bytes == 1037 && pk->pid == 100, "peak: the end, 1037 bytes");
	CHECK_EQ_U64(p.memory->unknown_frees + p.memory->unmatched, 0, "every free matched");
	ulma_profile_free(&p);
}

/* The peak and who held it: work holds 1 MiB, frees it; leaf then holds
 * 100 KiB.  The peak is work's, within the copy's 1/64. */
static void test_peak(void)
{
	struct ulma_profile p;
	setup(&p, 1);
	uint64_t t = 1000;
	ulma_profile_enter(&p, 0, F_MAIN, t++);
	ulma_profile_enter(&p, 0, F_WORK, t++);
	for (uint64_t i = 0; i < 1024; i++)
		ulma_profile_mem_alloc(&p, 0, 0x100000 + i * 1024, 1024, ULMA_MEM_OBJ, t++);
	uint64_t peak_at = t - 1;
	for (uint64_t i = 0; i < 1024; i++)
		ulma_profile_mem_free(&p, 0, 0x100000 + i * 1024, t++);
	ulma_profile_exit(&p, 0, t++);
	ulma_profile_enter(&p, 0, F_LEAF, t++);
	for (uint64_t i = 0; i < 100; i++)
		ulma_profile_mem_alloc(&p, 0, 0x900000 + i * 1024, 1024, ULMA_MEM_OBJ, t++);
	ulma_profile_finish(&p, t);
	const struct ulma_mem_proc *pk = ulma_profile_memory_peak(&p);
	CHECK(pk && pk->peak_bytes == 1024 * 1024 && pk->peak_ticks == peak_at, "peak: 1 MiB at the last allocation");
	struct ulma_mem_func w = ulma_profile_memory_func(&p, F_WORK), l = ulma_profile_memory_func(&p, F_LEAF);
	CHECK(w.peak_bytes >= 1024 * 1024 - 1024 * 1024 / 64 && w.peak_bytes <= 1024 * 1024,
	      "work held the peak (within 1/64)");
	CHECK_EQ_U64(l.peak_bytes, 0, "leaf held none of it");
	CHECK(w.live_bytes == 0 && l.live_bytes == 100 * 1024, "live now: leaf's");
	ulma_profile_free(&p);
}

/* Two threads drained out of order: thread 1's free of a block thread 0
 * allocated arrives before the allocation; thread 1 takes an address
 * thread 0 freed before that free is seen. */
static void test_out_of_order(void)
{
	struct ulma_profile p;
	setup(&p, 2);
	ulma_profile_enter(&p, 0, F_WORK, 1);
	ulma_profile_enter(&p, 1, F_LEAF, 1);
	/* block X: allocated by 0 at 10, freed by 1 at 20; seen free first */
	ulma_profile_mem_free(&p, 1, 0x5000, 20);
	ulma_profile_mem_alloc(&p, 0, 0x5000, 64, ULMA_MEM_OBJ, 10);
	/* block Y at 0x6000: 0 allocates at 30 and frees at 40; 1 allocates it again
	 * at 50, seen before 0's free */
	ulma_profile_mem_alloc(&p, 0, 0x6000, 32, ULMA_MEM_OBJ, 30);
	ulma_profile_mem_alloc(&p, 1, 0x6000, 48, ULMA_MEM_OBJ, 50);
	ulma_profile_mem_free(&p, 0, 0x6000, 40); /* stale: must not free 1's block */
	/* block Z at 0x7000: 1's allocation at 70 is seen before 0's older
	 * allocation (60) and free (65) */
	ulma_profile_mem_alloc(&p, 1, 0x7000, 16, ULMA_MEM_OBJ, 70);
	ulma_profile_mem_alloc(&p, 0, 0x7000, 8, ULMA_MEM_OBJ, 60);
	ulma_profile_mem_free(&p, 0, 0x7000, 65);
	ulma_profile_finish(&p, 100);
	struct ulma_mem_func w = ulma_profile_memory_func(&p, F_WORK), l = ulma_profile_memory_func(&p, F_LEAF);
	CHECK(w.alloc_count == 3 && w.free_count == 3 && w.live_bytes == 0, "work: 3 blocks, all freed, none live");
	CHECK(l.alloc_count == 2 && l.free_count == 0 && l.live_bytes == 64, "leaf: 2 blocks live (48 + 16)");
	CHECK_EQ_U64(p.memory->procs[0].live_bytes, 64, "the process holds 64 bytes");
	CHECK_EQ_U64(p.memory->procs[0].live_blocks, 2, "in 2 blocks");
	CHECK_EQ_U64(p.memory->unknown_frees + p.memory->unmatched, 0, "no free left unmatched");
	ulma_profile_free(&p);
}

/* One address's history across two threads, applied in every order the
 * two rings allow: A allocates (10), B frees (20), B allocates (30), A
 * frees (40), B allocates (50, live).  Every order gives the same counts
 * (but for frees of unknown blocks, a diagnostic, which may count one). */
static void test_every_order(void)
{
	struct step {
		uint32_t thread;
		bool alloc;
		uint64_t ticks;
	};
	static const struct step a[] = {{0, true, 10}, {0, false, 40}};
	static const struct step b[] = {{1, false, 20}, {1, true, 30}, {1, true, 50}};
	int orders = 0, good = 0;
	for (unsigned mask = 0; mask < 32; mask++) { /* bit set: take A's next */
		if (__builtin_popcount(mask) != 2)
			continue;
		struct ulma_profile p;
		setup(&p, 2);
		ulma_profile_enter(&p, 0, F_WORK, 1);
		ulma_profile_enter(&p, 1, F_LEAF, 1);
		for (unsigned i = 0, ia = 0, ib = 0; i < 5; i++) {
			const struct step *s = mask >> i & 1 ? &a[ia++] : &b[ib++];
			if (s->alloc)
				ulma_profile_mem_alloc(&p, s->thread, 0x4000, s->thread ? 24 : 8, ULMA_MEM_OBJ, s->ticks);
			else
				ulma_profile_mem_free(&p, s->thread, 0x4000, s->ticks);
		}
		struct ulma_mem_func w = ulma_profile_memory_func(&p, F_WORK), l = ulma_profile_memory_func(&p, F_LEAF);
		orders++;
		good += w.alloc_count == 1 && w.free_count == 1 && w.live_bytes == 0 && l.alloc_count == 2 &&
			l.free_count == 1 && l.live_bytes == 24 && p.memory->procs[0].live_blocks == 1 &&
			/* B's free at 20, seen before A's allocation at 10 and before B's
			 * at 30 took the address, is taken for a block from before tracing */
			p.memory->unknown_frees + p.memory->unmatched <= 1;
		ulma_profile_free(&p);
	}
	CHECK_EQ_U64(orders, 10, "ten orders of the two rings");
	CHECK_EQ_U64(good, 10, "each gives the history's counts");
}

/* The same address in two processes is two blocks; a free of a block
 * allocated before tracing is counted once, as unknown. */
static void test_processes_and_unknown(void)
{
	struct ulma_profile p;
	setup(&p, 3); /* thread 2: pid 200 */
	ulma_profile_enter(&p, 0, F_MAIN, 1);
	ulma_profile_enter(&p, 2, F_MAIN, 1);
	ulma_profile_mem_alloc(&p, 0, 0x8000, 10, ULMA_MEM_OBJ, 5);
	ulma_profile_mem_alloc(&p, 2, 0x8000, 20, ULMA_MEM_OBJ, 6); /* a forked child's block at the same address */
	ulma_profile_mem_free(&p, 2, 0x8000, 7);
	ulma_profile_mem_free(&p, 0, 0x9999, 8); /* allocated before tracing */
	ulma_profile_mem_alloc(&p, 0, 0x9999, 4, ULMA_MEM_OBJ, 9); /* the address reused: a new block */
	ulma_profile_finish(&p, 10);
	CHECK_EQ_U64(p.memory->procs[0].live_bytes, 14, "parent: both its blocks live");
	CHECK_EQ_U64(p.memory->procs[1].live_bytes, 0, "child: its block freed");
	CHECK_EQ_U64(p.memory->unknown_frees + p.memory->unmatched, 1, "one free of an unknown block");
	CHECK_EQ_U64(p.memory->alloc_count, 3, "three allocations");
	ulma_profile_free(&p);
}

/* Many frees of unknown blocks stay bounded. */
static void test_ghosts_bounded(void)
{
	struct ulma_profile p;
	setup(&p, 1);
	ulma_profile_enter(&p, 0, F_MAIN, 1);
	uint64_t n = ULMA_MEM_GHOSTS_MAX * 3 + 5;
	for (uint64_t i = 0; i < n; i++)
		ulma_profile_mem_free(&p, 0, 0x10000 + i * 16, 2 + i);
	CHECK(p.memory->nghosts <= ULMA_MEM_GHOSTS_MAX, "ghosts bounded (no live blocks)");
	CHECK_EQ_U64(p.memory->unknown_frees + p.memory->unmatched, n, "every unknown free counted once");
	CHECK(p.memory->table.used == p.memory->nghosts, "the table holds only them");
	ulma_profile_free(&p);
}

/* The JSON keys, with memory and without. */
static void test_summary(void)
{
	struct ulma_profile p;
	setup(&p, 1);
	ulma_profile_enter(&p, 0, F_MAIN, 1);
	ulma_profile_mem_alloc(&p, 0, 0xa0, 24, ULMA_MEM_OBJ, 2);
	ulma_profile_mem_alloc(&p, 0, 0xb0, 100, ULMA_MEM_NATIVE, 2);
	ulma_profile_mem_alloc(&p, 0, 0xc0, 1000, ULMA_MEM_NATIVE, 2);
	ulma_profile_mem_free(&p, 0, 0xc0, 3);
	ulma_profile_finish(&p, 3);
	struct ulma_summary s = {.profile = &p, .exit_status = 0, .complete = true};
	s.cal.ns_per_tick = 1.0;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ulma_summary_json(f, &s);
	fclose(f);
	CHECK(strstr(buf, "\"memory\": true, \"peak_bytes\": 1124, \"peak_time_ns\": 2,") != NULL,
	      "top level: memory, peak");
	CHECK(strstr(buf, "\"native_alloc_count\": 2, \"native_alloc_bytes\": 1100, \"live_bytes\": 124,") != NULL,
	      "top level: native allocations");
	CHECK(strstr(buf, "\"alloc_count\": 3, \"alloc_bytes\": 1124, \"free_count\": 1, \"net_bytes\": 124, "
			  "\"total_alloc_count\": 3, \"total_alloc_bytes\": 1124, \"peak_held_bytes\": 1124, "
			  "\"native_alloc_count\": 2, \"native_alloc_bytes\": 1100, \"native_net_bytes\": 100") != NULL,
	      "main's memory keys, Python's and native");
	CHECK(strstr(buf, "\"leaks\": [\n  {\"stack\": [\"main\"], \"bytes\": 124, \"count\": 2, "
			  "\"native_bytes\": 100, \"native_count\": 1}\n]") != NULL,
	      "the leak, its native part");
	free(buf);
	ulma_profile_free(&p);

	ulma_profile_init(&p);
	ulma_profile_add_thread(&p, 0, 1, 1, 1);
	ulma_profile_add_func(&p, 0, ULMA_DEF_PY, "f", 1, "/m.py", 5, 1);
	ulma_profile_enter(&p, 0, 0, 1);
	ulma_profile_finish(&p, 2);
	CHECK(p.threads[0].mem == NULL && p.memory == NULL, "memory off: no memory state");
	f = open_memstream(&buf, &len);
	ulma_summary_json(f, &s);
	fclose(f);
	CHECK(strstr(buf, "\"memory\": false,") != NULL && strstr(buf, "alloc_count") == NULL,
	      "memory off: \"memory\": false and no memory keys");
	free(buf);
	ulma_profile_free(&p);
}

/* Objects per (function, type) and per type, with and without a frame. */
static void test_objects(void)
{
	struct ulma_profile p;
	setup(&p, 1);
	ulma_profile_add_func(&p, 5, ULMA_DEF_TYPE, "list", 4, "~", 1, 0);
	ulma_profile_add_func(&p, 6, ULMA_DEF_TYPE, "dict", 4, "~", 1, 0);
	ulma_profile_object(&p, 0, 6, true); /* no frame */
	ulma_profile_enter(&p, 0, F_MAIN, 1);
	for (int i = 0; i < 3; i++)
		ulma_profile_object(&p, 0, 5, true);
	ulma_profile_object(&p, 0, 6, true);
	ulma_profile_object(&p, 0, 6, false);
	ulma_profile_object(&p, 0, 6, false);
	ulma_profile_finish(&p, 3);
	struct ulma_obj_count *types, *rows;
	uint32_t ntypes, nrows, count;
	CHECK(ulma_profile_objects_by_type(&p, &types, &ntypes) == 0 && ntypes == 2, "two types");
	CHECK(types[0].type == 5 && types[0].created == 3 && types[0].destroyed == 0 && types[1].type == 6 &&
		      types[1].created == 2 && types[1].destroyed == 2,
	      "most left first: 3 lists, then dicts made and gone");
	CHECK(ulma_profile_objects_by_func(&p, &rows, &nrows) == 0 && nrows == 3, "three (function, type) rows");
	uint32_t first = ulma_obj_rows_of(rows, nrows, F_MAIN, &count);
	CHECK(count == 2 && rows[first].type == 5 && rows[first].created == 3 && rows[first + 1].type == 6 &&
		      rows[first + 1].created == 1 && rows[first + 1].destroyed == 2,
	      "main's: its lists, then its dict and the two destroyed while it ran");
	first = ulma_obj_rows_of(rows, nrows, ULMA_OBJ_NO_FUNC, &count);
	CHECK(count == 1 && rows[first].type == 6 && rows[first].created == 1, "one dict with no frame");
	ulma_obj_rows_of(rows, nrows, 4, &count);
	CHECK(count == 0, "none for a function without objects");
	CHECK(p.memory->objects_recorded && p.memory->objects.created == 5 && p.memory->objects.destroyed == 2, "totals");
	free(types);
	free(rows);
	ulma_profile_free(&p);
}

int main(void)
{
	test_objects();
	test_self_total_leaks();
	test_peak();
	test_out_of_order();
	test_every_order();
	test_processes_and_unknown();
	test_ghosts_bounded();
	test_summary();
	return tap_done();
}
