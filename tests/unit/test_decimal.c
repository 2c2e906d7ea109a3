/* test_decimal.c - the exporters' decimal writer (ulma_put_decimal in
 * src/analysis/export_text.h) against snprintf's %llu: every value up to
 * 100,000, each power of ten and its neighbours, every power of two and its
 * neighbours, the largest value, and a pseudo-random spread; nothing is
 * written past the digits. */
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

int main(void)
{
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
