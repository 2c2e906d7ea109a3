/* test_clock.c - the session clock (src/core/clock.h): TSC detection and
 * the ULMA_CLOCK override, monotonic readings within a thread, the CPU
 * number, paired sampling, and calibration of ticks to nanoseconds (checked
 * against CLOCK_MONOTONIC over a separate ~50 ms sleep), plus the identity
 * map of the CLOCK_MONOTONIC fallback; the map of other clocks' times
 * (ulma_clock_track) converting through the pair nearest in time, with the
 * ring of pairs wrapped. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "tap.h"

/* no libm: the tests link only against libulma */
static double absd(double x)
{
	return x < 0 ? -x : x;
}

static bool cpu_has_invariant_tsc(void)
{
	/* independent of clock.c: what the kernel reports */
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[16384];
	bool nonstop = false, rdtscp = false;
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		/* nonstop_tsc is CPUID 0x80000007 EDX bit 8, the invariant TSC */
		nonstop = strstr(line, " nonstop_tsc") != NULL;
		rdtscp = strstr(line, " rdtscp") != NULL;
		break;
	}
	fclose(f);
	return nonstop && rdtscp;
}

static void sleep_ns(long ns)
{
	struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static void test_monotonic_within_thread(bool use_tsc, const char *name)
{
	uint32_t cpu = UINT32_MAX;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	uint64_t prev = ulma_clock_now(use_tsc, &cpu);
	uint64_t first = prev;
	unsigned backwards = 0, bad_cpu = 0;
	for (int i = 0; i < 200000; i++) {
		uint64_t t = ulma_clock_now(use_tsc, &cpu);
		if (t < prev)
			backwards++;
		if (ncpu > 0 && cpu >= (uint32_t)ncpu)
			bad_cpu++;
		prev = t;
	}
	CHECK_EQ_U64(backwards, 0, name);
	CHECK(prev > first, "%s: clock advanced over 200000 reads", name);
	CHECK_EQ_U64(bad_cpu, 0, "cpu number below the configured CPU count");
}

static void test_cpu_number(void)
{
	/* ulma_clock_cpu (rseq area or getcpu) agrees with sched_getcpu when no
	 * migration happened around it */
	unsigned agree = 0, stable = 0;
	for (int i = 0; i < 1000; i++) {
		int a = sched_getcpu();
		uint32_t b = ulma_clock_cpu();
		int c = sched_getcpu();
		if (a < 0 || a != c)
			continue;
		stable++;
		if ((int)b == a)
			agree++;
	}
	CHECK(stable > 100 && agree * 10 >= stable * 9,
	      "ulma_clock_cpu matches sched_getcpu (%u of %u stable samples)", agree, stable);
}

static void test_monotonic_fallback(void)
{
	uint32_t cpu;
	uint64_t a = ulma_clock_monotonic_ns();
	uint64_t t = ulma_clock_now(false, &cpu);
	uint64_t b = ulma_clock_monotonic_ns();
	CHECK(a <= t && t <= b, "use_tsc=false reads CLOCK_MONOTONIC ns (%llu in [%llu, %llu])",
	      (unsigned long long)t, (unsigned long long)a, (unsigned long long)b);

	CHECK_EQ_U64(ulma_clock_measure_hz(false), 1000000000u, "measure_hz without TSC is 1e9");

	struct ulma_clock_pair s, e;
	ulma_clock_sample(false, &s);
	CHECK(s.ticks != 0 && s.ns != 0, "monotonic sample is filled in");
	/* ticks and ns are the same clock: the pair is bracketed within a few us */
	uint64_t gap = s.ticks > s.ns ? s.ticks - s.ns : s.ns - s.ticks;
	CHECK(gap < 1000000, "monotonic pair ticks and ns agree (gap %llu ns)", (unsigned long long)gap);
	sleep_ns(5000000);
	ulma_clock_sample(false, &e);

	struct ulma_clock_calibration cal;
	memset(&cal, 0xff, sizeof(cal));
	ulma_clock_calibrate(false, &s, &e, 3000000000u, &cal);
	CHECK(cal.ns_per_tick == 1.0, "fallback calibration is the identity (ns_per_tick %.9f)",
	      cal.ns_per_tick);
	CHECK_EQ_U64(cal.ticks0, s.ticks, "calibration ticks0 is the start pair's ticks");
	CHECK_EQ_U64(cal.ns0, s.ns, "calibration ns0 is the start pair's ns");
	CHECK_EQ_U64(ulma_clock_ticks_to_ns(&cal, 123456789), 123456789, "identity converts ticks unchanged");

	ulma_clock_calibrate(false, &s, NULL, 0, &cal);
	CHECK(cal.ns_per_tick == 1.0, "fallback calibration without end pair is the identity");
}

/* Deterministic arithmetic of ulma_clock_calibrate with made-up pairs. */
static void test_calibrate_synthetic(void)
{
	struct ulma_clock_calibration cal;
	struct ulma_clock_pair s = {1000, 5000000};
	struct ulma_clock_pair e = {1000 + 30000000, 5000000 + 10000000}; /* 3 ticks per ns */
	ulma_clock_calibrate(true, &s, &e, 1, &cal);
	CHECK(absd(cal.ns_per_tick - 1.0 / 3.0) < 1e-12, "two pairs 10 ms apart give their ratio (%.12f)",
	      cal.ns_per_tick);
	CHECK_EQ_U64(ulma_clock_ticks_to_ns(&cal, 3000), 1000, "3000 ticks at 3 GHz are 1000 ns");
	CHECK_EQ_U64(ulma_clock_ticks_to_ns(&cal, 2), 1, "ticks_to_ns rounds to nearest (2 ticks -> 1 ns)");
	CHECK_EQ_U64(cal.ticks0, 1000, "ticks0 from start");
	CHECK_EQ_U64(cal.ns0, 5000000, "ns0 from start");

	/* under 1 ms apart: the fallback rate wins */
	struct ulma_clock_pair near = {1000 + 999, 5000000 + 999999};
	ulma_clock_calibrate(true, &s, &near, 2000000000u, &cal);
	CHECK(cal.ns_per_tick == 0.5, "pairs under 1 ms apart use fallback_hz (ns_per_tick %.9f)",
	      cal.ns_per_tick);
	ulma_clock_calibrate(true, &s, NULL, 4000000000u, &cal);
	CHECK(cal.ns_per_tick == 0.25, "no end pair uses fallback_hz (ns_per_tick %.9f)", cal.ns_per_tick);
	/* end ticks not after start ticks (TSC went backwards): fallback */
	struct ulma_clock_pair back = {500, 5000000 + 20000000};
	ulma_clock_calibrate(true, &s, &back, 1000000000u, &cal);
	CHECK(cal.ns_per_tick == 1.0, "end ticks before start ticks use fallback_hz (ns_per_tick %.9f)",
	      cal.ns_per_tick);
}

/* Twenty pairs 2 ms apart, pair i offset by i * 100 ticks (as a drift
 * would), into the ring of 16: each conversion shows which pair it took,
 * and that must be the kept pair nearest in time. */
static void test_track_nearest_pair(void)
{
	struct ulma_clock_track t;
	struct ulma_clock_pair start = {1000, 0};
	ulma_clock_track_init(&t, true, &start, 1000000000u); /* one tick a ns */
	const unsigned pairs = 20, kept_from = pairs - ULMA_CLOCK_TRACK_PAIRS;
	t.npairs = 0;
	t.next = 0;
	for (unsigned i = 0; i < pairs; i++) {
		uint64_t ns = (uint64_t)i * 2000000u;
		t.pair[t.next] = (struct ulma_clock_pair){1000 + ns + i * 100, ns};
		t.next = (t.next + 1) % ULMA_CLOCK_TRACK_PAIRS;
		if (t.npairs < ULMA_CLOCK_TRACK_PAIRS)
			t.npairs++;
	}
	unsigned wrong_ticks = 0, wrong_ns = 0;
	for (int j = -2; j < (int)pairs + 2; j++) {
		for (int quarter = 0; quarter < 4; quarter++) {
			int64_t v = (int64_t)j * 2000000 + quarter * 450000 + 1;
			if (v < 0)
				continue;
			unsigned want = kept_from; /* the kept pair nearest v, by brute force */
			for (unsigned i = kept_from; i < pairs; i++) {
				int64_t di = v - (int64_t)i * 2000000, dw = v - (int64_t)want * 2000000;
				if ((di < 0 ? -di : di) < (dw < 0 ? -dw : dw))
					want = i;
			}
			uint64_t ticks = ulma_clock_track_ticks(&t, (uint64_t)v);
			wrong_ticks += ticks != 1000 + (uint64_t)v + want * 100;
			wrong_ns += ulma_clock_track_ns(&t, 1000 + (uint64_t)v + want * 100) != (uint64_t)v;
		}
	}
	CHECK(wrong_ticks == 0, "ns to ticks through the nearest kept pair (%u conversions not)", wrong_ticks);
	CHECK(wrong_ns == 0, "ticks to ns through the nearest kept pair (%u conversions not)", wrong_ns);
}

/* Calibrate over one interval, then time a separate ~50 ms sleep in ticks
 * and compare the converted duration with CLOCK_MONOTONIC. */
static void test_tsc_calibration(void)
{
	struct ulma_clock_pair a, b;
	ulma_clock_sample(true, &a);
	CHECK(a.ticks != 0 && a.ns != 0, "TSC sample is filled in");
	sleep_ns(20000000);
	ulma_clock_sample(true, &b);
	CHECK(b.ticks > a.ticks && b.ns > a.ns, "TSC pair advances over 20 ms");

	struct ulma_clock_calibration cal;
	ulma_clock_calibrate(true, &a, &b, 0, &cal);
	CHECK(cal.ns_per_tick > 0.01 && cal.ns_per_tick < 100.0, "plausible ns_per_tick %.6f",
	      cal.ns_per_tick);

	uint32_t cpu;
	for (int attempt = 0; attempt < 3; attempt++) {
		uint64_t ns0 = ulma_clock_monotonic_ns();
		uint64_t t0 = ulma_clock_now(true, &cpu);
		sleep_ns(50000000);
		uint64_t t1 = ulma_clock_now(true, &cpu);
		uint64_t ns1 = ulma_clock_monotonic_ns();
		double mono = (double)(ns1 - ns0);
		double conv = (double)ulma_clock_ticks_to_ns(&cal, t1 - t0);
		double err = absd(conv - mono) / mono;
		if (err < 0.05 || attempt == 2) {
			CHECK(err < 0.05 && mono >= 50000000.0,
			      "50 ms sleep: %.3f ms by calibrated TSC vs %.3f ms by CLOCK_MONOTONIC (%.3f%%)",
			      conv / 1e6, mono / 1e6, err * 100);
			break;
		}
	}

	/* the end-less fallback built from measure_hz is also within 5% */
	uint64_t hz = ulma_clock_measure_hz(true);
	CHECK(hz > 100000000u && hz < 100000000000u, "measure_hz plausible (%llu Hz)", (unsigned long long)hz);
	struct ulma_clock_calibration fcal;
	ulma_clock_calibrate(true, &a, NULL, hz, &fcal);
	double rel = absd(fcal.ns_per_tick - cal.ns_per_tick) / cal.ns_per_tick;
	CHECK(rel < 0.05, "measure_hz rate within 5%% of the paired calibration (%.3f%%)", rel * 100);
}

int main(void)
{
	/* must not be inherited from the caller's environment */
	unsetenv("ULMA_CLOCK");
	bool usable = ulma_clock_tsc_usable();
	bool expect = ULMA_HAVE_RDTSCP && cpu_has_invariant_tsc();
	CHECK(usable == expect, "tsc_usable (%d) matches /proc/cpuinfo invariant TSC + rdtscp (%d)", usable,
	      expect);
	CHECK(ulma_clock_tsc_usable() == usable, "tsc_usable is stable across calls");
	test_track_nearest_pair();

	test_monotonic_within_thread(false, "CLOCK_MONOTONIC readings never go backwards");
	if (usable)
		test_monotonic_within_thread(true, "TSC readings never go backwards within a thread");
	else
		tap_skip("no invariant TSC: TSC monotonic check");
	test_cpu_number();
	test_monotonic_fallback();
	test_calibrate_synthetic();
	if (usable)
		test_tsc_calibration();
	else
		tap_skip("no invariant TSC: calibration check");

	setenv("ULMA_CLOCK", "tsc", 1);
	CHECK(ulma_clock_tsc_usable() == usable, "ULMA_CLOCK=tsc changes nothing");
	setenv("ULMA_CLOCK", "monotonic", 1);
	CHECK(!ulma_clock_tsc_usable(), "ULMA_CLOCK=monotonic forces tsc_usable false");
	unsetenv("ULMA_CLOCK");
	CHECK(ulma_clock_tsc_usable() == usable, "unsetting ULMA_CLOCK restores detection");
	return tap_done();
}
