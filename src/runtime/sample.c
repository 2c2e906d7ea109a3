/* sample.c - `--memory=sample:BYTES`: which allocations the memory hooks
 * record, and what each stands for (rt.h, docs/memory.md, "Sampling").
 *
 * Poisson sampling by bytes, as tcmalloc's heap profiler and Scalene do:
 * every byte allocated is a sampling point with probability 1/BYTES, so a
 * block of s bytes is sampled with probability p = 1 - exp(-s/BYTES),
 * whatever came before (the distance to the next point is exponential,
 * drawn per thread), and a sampled block is recorded as s / p bytes, an
 * unbiased estimate of the bytes it stands for.  Blocks not sampled cost a
 * subtraction and a branch.
 *
 * A free is recorded only for a sampled block: sampled addresses are kept
 * in one static open-addressing set (no allocation, no lock: a CAS per
 * insertion and removal), taken out before the block is given back, so
 * an address another thread gets at once is not confused with it.  A full
 * neighbourhood leaves the block unsampled.
 */
#include "rt.h"

#include <math.h>
#include <stdatomic.h>

#define SET_SIZE (1u << 18) /* sampled blocks live at once, at most (2 MiB of zero pages until used) */
#define PROBES 32
#define TOMBSTONE ((uintptr_t)1)

ULMA_RT_API uint64_t ulma_rt_sample_bytes;
ULMA_RT_API __thread int64_t ulma_sample_left __attribute__((tls_model("initial-exec")));
ULMA_RT_API _Atomic uint64_t ulma_rt_sampled_live;

static __thread uint64_t rng __attribute__((tls_model("initial-exec")));
static _Atomic uintptr_t sampled[SET_SIZE];

/* An exponential draw of mean ulma_rt_sample_bytes (xorshift64*). */
static int64_t next_gap(void)
{
	if (!rng)
		rng = (uintptr_t)&rng ^ ulma_clock_rdtsc() ^ UINT64_C(0x9e3779b97f4a7c15);
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	double u = (double)(((rng * UINT64_C(0x2545f4914f6cdd1d)) >> 11) + 1) * 0x1p-53; /* (0, 1] */
	return (int64_t)(-log(u) * (double)ulma_rt_sample_bytes) + 1;
}

static inline uint32_t home(uintptr_t addr)
{
	return (uint32_t)((addr >> 4) * UINT64_C(0x9e3779b97f4a7c15) >> 46) & (SET_SIZE - 1);
}

bool ulma_rt_sampled_keep(uintptr_t addr)
{
	uint32_t h = home(addr);
	for (uint32_t k = 0; k < PROBES; k++) {
		_Atomic uintptr_t *e = &sampled[(h + k) & (SET_SIZE - 1)];
		uintptr_t v = atomic_load_explicit(e, memory_order_relaxed);
		if ((v == 0 || v == TOMBSTONE) &&
		    atomic_compare_exchange_strong_explicit(e, &v, addr, memory_order_relaxed, memory_order_relaxed)) {
			atomic_fetch_add_explicit(&ulma_rt_sampled_live, 1, memory_order_relaxed);
			return true;
		}
	}
	return false;
}

bool ulma_rt_sampled_take(uintptr_t addr)
{
	uint32_t h = home(addr);
	for (uint32_t k = 0; k < PROBES; k++) {
		_Atomic uintptr_t *e = &sampled[(h + k) & (SET_SIZE - 1)];
		uintptr_t v = atomic_load_explicit(e, memory_order_relaxed);
		if (v == 0)
			return false;
		if (v == addr &&
		    atomic_compare_exchange_strong_explicit(e, &v, TOMBSTONE, memory_order_relaxed, memory_order_relaxed)) {
			atomic_fetch_sub_explicit(&ulma_rt_sampled_live, 1, memory_order_relaxed);
			return true;
		}
	}
	return false;
}

bool ulma_rt_sample_slow(uintptr_t addr, size_t size, uint64_t *weight)
{
	if (!rng) { /* this thread's first allocation since sampling started: its first gap */
		ulma_sample_left = next_gap() - (int64_t)size;
		if (ulma_sample_left > 0)
			return false;
	}
	ulma_sample_left = next_gap();
	if (!ulma_rt_sampled_keep(addr))
		return false;
	double s = (double)size, p = -expm1(-s / (double)ulma_rt_sample_bytes);
	*weight = p > 0 ? (uint64_t)(s / p + 0.5) : ulma_rt_sample_bytes;
	return true;
}

void ulma_rt_sample_reset(uint64_t bytes)
{
	ulma_rt_sample_bytes = bytes;
	for (uint32_t i = 0; i < SET_SIZE && atomic_load_explicit(&ulma_rt_sampled_live, memory_order_relaxed); i++)
		atomic_store_explicit(&sampled[i], 0, memory_order_relaxed);
	atomic_store_explicit(&ulma_rt_sampled_live, 0, memory_order_relaxed);
}
