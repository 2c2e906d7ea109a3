/* test_decimal.c - the exporters' decimal writer (ulma_put_decimal in
 * src/analysis/export_text.h) against snprintf's %llu: every value up to
 * 100,000, each power of ten and its neighbours, every power of two and its
 * neighbours, the largest value, and a pseudo-random spread; nothing is
 * written past the digits.  The running decimal (ulma_put_running_decimal)
 * too, along sequences of steps of every size: none, small ones across a
 * carry into a new digit, steps back, long ones, up to the largest value. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "analysis/export_text.h"
#include "tap.h"

static unsigned failures;

/* Quiet on success: the loops check hundreds of thousands of values. */
static void check(uint64_t v)
{
	char want[32], got[32];
	int n = snprintf(want, sizeof(want), "%" PRIu64, v);
	memset(got, '#', sizeof(got));
	char *end = ulma_put_decimal(got, v);
	if (end - got != n || memcmp(got, want, (size_t)n) != 0 || got[n] != '#' ||
	    ulma_decimal_digits(v) != (unsigned)n) {
		if (failures++ < 10)
			CHECK(0, "%s written as '%.*s'", want, (int)(end - got), got);
	}
}

static unsigned running_failures;

static void check_running(struct ulma_running_decimal *r, uint64_t v)
{
	char want[32], got[48];
	int n = snprintf(want, sizeof(want), "%" PRIu64, v);
	memset(got, '#', sizeof(got));
	char *end = ulma_put_running_decimal(r, got, v);
	if (end - got != n || memcmp(got, want, (size_t)n) != 0) {
		if (running_failures++ < 10)
			CHECK(0, "running: %s written as '%.*s'", want, (int)(end - got), got);
	}
}

static void test_running(void)
{
	struct ulma_running_decimal r = {0};
	check_running(&r, 0);
	check_running(&r, 0);
	for (uint64_t v = 1; v < 200000; v += v % 7) /* steps of 0 to 6 (0 repeats a value), across 9 -> 10 ... */
		check_running(&r, v + 1);
	uint64_t v = 99999990;
	for (int i = 0; i < 30; i++) /* a carry through every digit into a new one */
		check_running(&r, v += 1);
	check_running(&r, 5); /* back */
	check_running(&r, 999999 + 5); /* the longest step added in place */
	check_running(&r, 999999 + 5 + 1000000); /* one past it */
	uint64_t x = UINT64_C(0x9E3779B97F4A7C15), t = 0;
	for (int i = 0; i < 200000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t step = x >> (40 + i % 24); /* up to 2^24: small and long steps */
		t = t > UINT64_MAX - step ? t / 3 : t + step; /* near the largest value, then back */
		check_running(&r, t);
	}
	check_running(&r, UINT64_MAX - 1);
	check_running(&r, UINT64_MAX);
	CHECK(running_failures == 0, "the running decimal writes every value as printf does (%u failures)",
	      running_failures);
}

int main(void)
{
	test_running();
	for (uint64_t v = 0; v <= 100000; v++)
		check(v);
	uint64_t p10 = 1;
	for (int i = 0; i < 20; i++, p10 *= 10) {
		check(p10 - 1);
		check(p10);
		check(p10 + 1);
	}
	for (int i = 0; i < 64; i++) {
		uint64_t p2 = UINT64_C(1) << i;
		check(p2 - 1);
		check(p2);
		check(p2 + 1);
	}
	check(UINT64_MAX);
	check(UINT64_MAX - 1);
	uint64_t x = UINT64_C(0x9E3779B97F4A7C15);
	for (int i = 0; i < 200000; i++) { /* xorshift: values of every length */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		check(x >> (i % 64));
	}
	CHECK(failures == 0, "every value is written as printf writes it (%u failures)", failures);
	return tap_done();
}
