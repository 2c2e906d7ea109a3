/* test_profile_memory_order.c - the live-block table's answers do not
 * depend on the order threads are drained in (src/analysis/profile_memory.c,
 * mem_table.c).  Random histories of a few hundred addresses, neighbouring
 * and misaligned ones among them, allocated and freed by four threads of
 * two processes (a block freed by another thread than its own, blocks
 * from before tracing freed), are applied in time order (the reference:
 * what happened) and in random interleavings that keep each thread's own
 * order, in bursts as rings publish them.  Every function's allocations,
 * frees and live bytes, each process's live blocks and bytes, and the
 * leaks by calling context must be the reference's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/profile.h"
#include "analysis/profile_memory.h"
#include "tap.h"
#include "ulma/shm.h"

enum { THREADS = 4, FUNCS = 4, ADDRS = 400, STEPS = 3000 };

struct event {
	uint32_t thread;
	bool alloc;
	uint64_t addr, size, ticks;
};

static uint64_t rng;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Threads 0-2 in process 100, thread 3 in process 200; thread i runs
 * function i, entered at time 1. */
static void setup(struct ulma_profile *p)
{
	ulma_profile_init(p);
	for (uint32_t i = 0; i < THREADS; i++)
		ulma_profile_add_thread(p, i, i + 1, i < 3 ? 100 : 200, 100 + i);
	static const char *const names[FUNCS] = {"a", "b", "c", "d"};
	for (uint32_t f = 0; f < FUNCS; f++)
		ulma_profile_add_func(p, f, ULMA_DEF_PY, names[f], 1, "/m.py", 5, f + 1);
	ulma_profile_memory_enable(p);
	for (uint32_t i = 0; i < THREADS; i++)
		ulma_profile_enter(p, i, i, 1);
}

/* A history: each step takes an address and allocates it if it is free,
 * frees it if not, by a random thread of its process (so blocks often
 * cross threads).  Some addresses hold a block from before tracing. */
static uint32_t make_history(struct event *ev)
{
	uint64_t addr[ADDRS];
	bool live[ADDRS];
	for (uint32_t i = 0; i < ADDRS; i++) {
		uint32_t kind = i % 4;
		addr[i] = kind == 0   ? 0x7f0000001000ull + i * 16          /* neighbours in a pool */
			  : kind == 1 ? 0x7f0000100000ull + i * 48          /* a pool of 48-byte blocks */
			  : kind == 2 ? 0x550000000000ull + (uint64_t)i * 4096 /* far apart */
				      : 0x600000000000ull + i * 8 + (i & 1); /* misaligned */
		live[i] = next_rand() % 8 == 0; /* allocated before tracing */
	}
	uint32_t n = 0;
	for (uint32_t s = 0; s < STEPS; s++) {
		uint32_t i = (uint32_t)(next_rand() % ADDRS);
		bool other_proc = i % 5 == 0; /* the same addresses in process 200 */
		uint32_t thread = other_proc ? 3 : (uint32_t)(next_rand() % 3);
		/* process 200 has its own copy of the address: keep separate state */
		static bool live200[ADDRS];
		if (s == 0)
			memset(live200, 0, sizeof(live200));
		bool *l = other_proc ? &live200[i] : &live[i];
		ev[n++] = (struct event){thread, !*l, addr[i], 1 + next_rand() % 2000, 10 + s};
		*l = !*l;
	}
	return n;
}

static void apply(struct ulma_profile *p, const struct event *e)
{
	if (e->alloc)
		ulma_profile_mem_alloc(p, e->thread, e->addr, e->size, ULMA_MEM_OBJ, e->ticks);
	else
		ulma_profile_mem_free(p, e->thread, e->addr, e->ticks);
}

/* Apply the history's events thread by thread in random bursts of 1 to
 * 40 (each thread's own order kept). */
static void apply_shuffled(struct ulma_profile *p, const struct event *ev, uint32_t n)
{
	uint32_t next[THREADS] = {0};
	uint32_t left = n;
	while (left) {
		uint32_t t = (uint32_t)(next_rand() % THREADS), burst = 1 + (uint32_t)(next_rand() % 40);
		for (; burst && next[t] < n; next[t]++) {
			if (ev[next[t]].thread != t)
				continue;
			apply(p, &ev[next[t]]);
			left--;
			burst--;
		}
	}
}

static bool same_leaks(const struct ulma_profile *a, const struct ulma_profile *b)
{
	struct ulma_mem_leak *la, *lb;
	uint32_t na, nb;
	if (ulma_profile_memory_leaks(a, &la, &na) || ulma_profile_memory_leaks(b, &lb, &nb))
		return false;
	bool same = na == nb;
	for (uint32_t i = 0; same && i < na; i++) {
		uint32_t sa[8], sb[8];
		uint32_t ka = ulma_profile_memory_stack(a, la[i].node, sa, 8), kb = ulma_profile_memory_stack(b, lb[i].node, sb, 8);
		same = la[i].bytes == lb[i].bytes && la[i].count == lb[i].count && ka == kb &&
		       memcmp(sa, sb, ka * sizeof(*sa)) == 0;
	}
	free(la);
	free(lb);
	return same;
}

static bool same_counts(const struct ulma_profile *a, const struct ulma_profile *b)
{
	for (uint32_t f = 0; f < FUNCS; f++) {
		struct ulma_mem_func x = ulma_profile_memory_func(a, f), y = ulma_profile_memory_func(b, f);
		if (x.alloc_count != y.alloc_count || x.alloc_bytes != y.alloc_bytes || x.free_count != y.free_count ||
		    x.free_bytes != y.free_bytes || x.live_bytes != y.live_bytes)
			return false;
	}
	if (a->memory->nprocs != b->memory->nprocs)
		return false;
	for (uint32_t i = 0; i < a->memory->nprocs; i++) { /* numbered as first seen: find each by pid */
		const struct ulma_mem_proc *x = &a->memory->procs[i], *y = b->memory->procs;
		while (y < b->memory->procs + b->memory->nprocs && y->pid != x->pid)
			y++;
		if (y == b->memory->procs + b->memory->nprocs || x->live_bytes != y->live_bytes ||
		    x->live_blocks != y->live_blocks)
			return false;
	}
	return a->memory->alloc_count == b->memory->alloc_count && a->memory->free_count == b->memory->free_count;
}

static void test_any_order(void)
{
	static struct event ev[STEPS];
	uint32_t trials = 200, counts = 0, leaks = 0, freed = 0;
	uint64_t live_blocks = 0, crossed = 0;
	for (uint32_t trial = 0; trial < trials; trial++) {
		rng = 0x9e3779b97f4a7c15ull * (trial + 1);
		uint32_t n = make_history(ev);
		struct ulma_profile ref, shuffled;
		setup(&ref);
		setup(&shuffled);
		for (uint32_t i = 0; i < n; i++)
			apply(&ref, &ev[i]);
		apply_shuffled(&shuffled, ev, n);
		counts += same_counts(&ref, &shuffled);
		leaks += same_leaks(&ref, &shuffled);
		freed += ref.memory->free_count > 0;
		for (uint32_t i = 0; i < ref.memory->nprocs; i++)
			live_blocks += ref.memory->procs[i].live_blocks;
		for (uint32_t i = 1; i < n; i++)
			crossed += ev[i].thread != ev[i - 1].thread;
		ulma_profile_free(&ref);
		ulma_profile_free(&shuffled);
	}
	CHECK(counts == trials, "every function's and process's counts as in time order (%u of %u)", counts, trials);
	CHECK(leaks == trials, "the leaks as in time order (%u of %u)", leaks, trials);
	CHECK(freed == trials && live_blocks > trials * 50 && crossed > trials * 1000,
	      "histories that free, keep blocks and cross threads");
}

int main(void)
{
	test_any_order();
	return tap_done();
}
