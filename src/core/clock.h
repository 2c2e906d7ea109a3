/* clock.h - the one time source of ulma.
 *
 * The hot path reads the invariant TSC with rdtscp, which also yields the
 * CPU number (Linux puts it in the low 12 bits of TSC_AUX).  Where the CPU
 * has no invariant TSC, or on other architectures, it falls back to
 * CLOCK_MONOTONIC through the vDSO and getcpu.  Ticks become nanoseconds
 * through a calibration made of (tsc, ns) pairs taken by the monitor at the
 * start and end of a session; the traced program never converts.
 */
#ifndef ULMA_CLOCK_H
#define ULMA_CLOCK_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#define ULMA_HAVE_RDTSCP 1
#else
#define ULMA_HAVE_RDTSCP 0
#endif

static inline uint64_t ulma_clock_monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* Read the TSC and the current CPU in one instruction.  Only valid where
 * ulma_clock_tsc_usable() said yes. */
static inline uint64_t ulma_clock_rdtscp(uint32_t *cpu)
{
#if ULMA_HAVE_RDTSCP
	uint32_t lo, hi, aux;
	__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
	*cpu = aux & 0xfffu;
	return ((uint64_t)hi << 32) | lo;
#else
	*cpu = 0;
	return 0;
#endif
}

/* Take one timestamp in the session's clock domain. */
static inline uint64_t ulma_clock_now(bool use_tsc, uint32_t *cpu)
{
	if (__builtin_expect(use_tsc, 1))
		return ulma_clock_rdtscp(cpu);
	int c = sched_getcpu();
	*cpu = c < 0 ? 0u : (uint32_t)c;
	return ulma_clock_monotonic_ns();
}

/* True if the CPU has rdtscp and an invariant (constant, non-stop) TSC.
 * ULMA_CLOCK=monotonic in the environment forces the fallback. */
bool ulma_clock_tsc_usable(void);

/* A simultaneous reading of both clocks. */
struct ulma_clock_pair {
	uint64_t ticks; /* session clock */
	uint64_t ns;    /* CLOCK_MONOTONIC */
};

/* Read both clocks, keeping the tightest of a few bracketed samples so the
 * pair is accurate to tens of nanoseconds. */
void ulma_clock_sample(bool use_tsc, struct ulma_clock_pair *out);

/* Linear map from session ticks to CLOCK_MONOTONIC ns. */
struct ulma_clock_calibration {
	uint64_t ticks0;
	uint64_t ns0;
	double ns_per_tick;
};

/* Ticks per second measured over a 2 ms busy wait (1e9 without TSC). */
uint64_t ulma_clock_measure_hz(bool use_tsc);

/* Build a calibration from a start and an end pair.  With use_tsc false the
 * map is the identity.  If end is NULL or the pairs are under 1 ms apart,
 * the rate fallback_hz (from ulma_clock_measure_hz) is used instead. */
void ulma_clock_calibrate(bool use_tsc, const struct ulma_clock_pair *start,
			  const struct ulma_clock_pair *end, uint64_t fallback_hz,
			  struct ulma_clock_calibration *out);

/* Duration in ns of a tick interval. */
static inline uint64_t ulma_clock_ticks_to_ns(const struct ulma_clock_calibration *cal, uint64_t ticks)
{
	return (uint64_t)((double)ticks * cal->ns_per_tick + 0.5);
}

#endif
