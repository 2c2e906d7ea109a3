/* clock.h - the one time source of ulma.
 *
 * The hot path reads the invariant TSC with rdtsc and the CPU number from
 * the thread's rseq area, which the kernel keeps current (glibc registers
 * it).  On the machines we measured that pair costs 11 ns where rdtscp,
 * which returns both in one instruction, costs 23 ns (docs/hooks.md);
 * without rseq, sched_getcpu (vDSO, ~4 ns) gives the CPU.  Where the CPU
 * has no invariant TSC, or on other architectures, time falls back to
 * CLOCK_MONOTONIC through the vDSO.  Ticks become nanoseconds
 * through a calibration made of (tsc, ns) pairs taken by the monitor at the
 * start and end of a session; the traced program never converts.
 */
#ifndef ULMA_CLOCK_H
#define ULMA_CLOCK_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
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

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#include <sys/rseq.h>
#define ULMA_HAVE_RSEQ 1
#else
#define ULMA_HAVE_RSEQ 0
#endif

/* The CPU this thread runs on: one load from the rseq area when glibc
 * registered one, else the vDSO getcpu. */
static inline uint32_t ulma_clock_cpu(void)
{
#if ULMA_HAVE_RSEQ
	if (__builtin_expect(__rseq_size > 0, 1)) {
		const struct rseq *rs = (const struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
		return *(const volatile uint32_t *)&rs->cpu_id;
	}
#endif
	int c = sched_getcpu();
	return c < 0 ? 0u : (uint32_t)c;
}

/* Read the TSC.  Only valid where ulma_clock_tsc_usable() said yes. */
static inline uint64_t ulma_clock_rdtsc(void)
{
#if ULMA_HAVE_RDTSCP
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#else
	return 0;
#endif
}

/* Take one timestamp in the session's clock domain, and the CPU. */
static inline uint64_t ulma_clock_now(bool use_tsc, uint32_t *cpu)
{
	*cpu = ulma_clock_cpu();
	if (__builtin_expect(use_tsc, 1))
		return ulma_clock_rdtsc();
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

/* Times from other CLOCK_MONOTONIC sources (the kernel's switch records)
 * in session ticks, and back: the map keeps recent (ticks, ns) pairs and
 * converts through the pair nearest in time, at the rate measured since
 * the start, so the error stays in tens of ns however the two clocks
 * drift apart (NTP slews CLOCK_MONOTONIC, never the TSC). */
#define ULMA_CLOCK_TRACK_PAIRS 16
#define ULMA_CLOCK_TRACK_EVERY_NS 2000000u /* a new pair at most this often */
struct ulma_clock_track {
	bool use_tsc;
	struct ulma_clock_pair start;
	struct ulma_clock_pair pair[ULMA_CLOCK_TRACK_PAIRS];
	unsigned npairs, next;
	double ticks_per_ns;
};

void ulma_clock_track_init(struct ulma_clock_track *t, bool use_tsc, const struct ulma_clock_pair *start,
			   uint64_t hz);
/* Take a fresh pair if the last is ULMA_CLOCK_TRACK_EVERY_NS old (a
 * microsecond's work; call as often as convenient). */
void ulma_clock_track_update(struct ulma_clock_track *t);
uint64_t ulma_clock_track_ticks(const struct ulma_clock_track *t, uint64_t ns);
uint64_t ulma_clock_track_ns(const struct ulma_clock_track *t, uint64_t ticks);

/* A double as u64, saturating: converting an out-of-range double is
 * undefined behaviour, and a damaged trace can hold any tick value. */
static inline uint64_t ulma_u64_from_double(double x)
{
	if (!(x > 0.0))
		return 0; /* also NaN */
	if (x >= 18446744073709551616.0)
		return UINT64_MAX;
	return (uint64_t)x;
}

/* Duration in ns of a tick interval. */
static inline uint64_t ulma_clock_ticks_to_ns(const struct ulma_clock_calibration *cal, uint64_t ticks)
{
	return ulma_u64_from_double((double)ticks * cal->ns_per_tick + 0.5);
}

#endif
