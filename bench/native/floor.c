/* floor.c - what a native event cannot cost less than, for bench/native.py:
 * the time per iteration of loops that do only part of a hook's work.
 *
 * `floor N` runs each loop N times in this one process and prints one line
 * per loop, `name ns-per-iteration` (thread CPU time):
 *   rdtsc          read the TSC (what every event does)
 *   rdtscp         read the TSC and the CPU number in one instruction
 *   clock_gettime  CLOCK_MONOTONIC through the vDSO (the fallback clock)
 *   coarse         CLOCK_MONOTONIC_COARSE through the vDSO: cheap, but it
 *                  moves once a kernel tick (4 ms at HZ=250), too coarse to
 *                  time a call; measured to show what exactness costs
 *   store          an 8-byte and an 8-byte store into a ring of 16-byte
 *                  records as large as a session's default ring (4 MiB),
 *                  wrapping: a record's write, with nothing else
 *   rdtsc+store    both, the record holding the time: an event's floor
 * Built without -finstrument-functions: nothing here calls a hook.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING_RECORDS (1u << 18) /* ulma run's default --ring-records */

struct record {
	uint64_t time;
	uint64_t word;
};

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

static inline uint64_t rdtscp(void)
{
	uint32_t lo, hi, cpu;
	__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(cpu));
	return ((uint64_t)hi << 32 | lo) + cpu;
}

/* Loops are timed in thread CPU time: they never block, and on a shared
 * machine the wall clock also counts the time other processes ran. */
static uint64_t cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static void report(const char *name, uint64_t t0, long n)
{
	printf("%s %.3f\n", name, (double)(cpu_ns() - t0) / (double)n);
}

int main(int argc, char **argv)
{
	if (argc != 3 || strcmp(argv[1], "floor") != 0)
		return 2;
	long n = atol(argv[2]);
	struct record *ring = calloc(RING_RECORDS, sizeof(*ring));
	if (!ring || n <= 0)
		return 1;
	volatile uint64_t sink = 0;
	uint64_t acc = 0, t0;

	t0 = cpu_ns();
	for (long i = 0; i < n; i++)
		acc += rdtsc();
	report("rdtsc", t0, n);

	t0 = cpu_ns();
	for (long i = 0; i < n; i++)
		acc += rdtscp();
	report("rdtscp", t0, n);

	t0 = cpu_ns();
	for (long i = 0; i < n; i++)
		acc += now_ns();
	report("clock_gettime", t0, n);

	t0 = cpu_ns();
	for (long i = 0; i < n; i++)
		acc += clock_ns(CLOCK_MONOTONIC_COARSE);
	report("coarse", t0, n);

	t0 = cpu_ns();
	for (long i = 0; i < n; i++) {
		struct record *r = &ring[(uint64_t)i & (RING_RECORDS - 1)];
		__asm__ __volatile__("" ::: "memory"); /* one record per iteration, as a hook writes it */
		r->time = (uint64_t)i;
		r->word = (uint64_t)i | UINT64_C(5) << 48;
	}
	report("store", t0, n);

	t0 = cpu_ns();
	for (long i = 0; i < n; i++) {
		struct record *r = &ring[(uint64_t)i & (RING_RECORDS - 1)];
		__asm__ __volatile__("" ::: "memory");
		r->time = rdtsc();
		r->word = (uint64_t)i | UINT64_C(5) << 48;
	}
	report("rdtsc+store", t0, n);

	sink = acc + ring[n % RING_RECORDS].time;
	(void)sink;
	free(ring);
	return 0;
}
