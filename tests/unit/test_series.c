/* test_series.c - the bounded time series (src/analysis/series.h): while
 * the values fit every one is a point; past that the points stay bounded
 * and still hold the exact maximum, minimum and last value, in time order;
 * a time earlier than the previous one is taken as the previous one. */
#include "../../src/analysis/series.h"
#include "tap.h"

static void test_few_values_kept_as_they_are(void)
{
	struct ulma_series s;
	struct ulma_series_point pts[2 * 8 + 1];
	ulma_series_init(&s, 8);
	for (int i = 0; i < 5; i++)
		ulma_series_add(&s, (uint64_t)i * 10, i * 1.5);
	uint32_t n = ulma_series_points(&s, pts);
	CHECK_EQ_U64(n, 5, "five values, five points");
	for (uint32_t i = 0; i < n; i++)
		CHECK(pts[i].at == i * 10 && pts[i].v == i * 1.5, "point %u is the value given", i);
	ulma_series_free(&s);
}

static void test_many_values_keep_extremes(void)
{
	struct ulma_series s;
	enum { CAP = 16, N = 100000 };
	struct ulma_series_point pts[2 * CAP + 1];
	ulma_series_init(&s, CAP);
	double maxv = -1e300, minv = 1e300;
	uint64_t max_at = 0, min_at = 0;
	for (int i = 0; i < N; i++) {
		double v = (double)(i % 2000 < 1000 ? i % 2000 : 2000 - i % 2000) + (i == 77777 ? 5000 : 0) - (i == 12345 ? 5000 : 0);
		if (v > maxv) {
			maxv = v;
			max_at = (uint64_t)i;
		}
		if (v < minv) {
			minv = v;
			min_at = (uint64_t)i;
		}
		ulma_series_add(&s, (uint64_t)i, v);
	}
	ulma_series_add(&s, 5, 42.0); /* earlier than the last: taken at the last time */
	uint32_t n = ulma_series_points(&s, pts);
	CHECK(n <= 2 * CAP + 1 && n >= CAP, "bounded: %u points", n);
	int has_max = 0, has_min = 0, ordered = 1;
	for (uint32_t i = 0; i < n; i++) {
		has_max |= pts[i].v == maxv && pts[i].at == max_at;
		has_min |= pts[i].v == minv && pts[i].at == min_at;
		if (i && pts[i].at < pts[i - 1].at)
			ordered = 0;
	}
	CHECK(has_max, "the maximum is a point, at its time");
	CHECK(has_min, "the minimum is a point, at its time");
	CHECK(ordered, "points in time order");
	CHECK(pts[n - 1].v == 42.0 && pts[n - 1].at == N - 1, "the last value last, at the previous time");
	CHECK(s.max == maxv && s.min == minv, "max and min");
	ulma_series_free(&s);
}

int main(void)
{
	test_few_values_kept_as_they_are();
	test_many_values_keep_extremes();
	return tap_done();
}
