/* series.h - a time series in bounded memory that keeps its extremes.
 *
 * The timeline exports' object counts and the HTML report's memory chart
 * take values as they come (a counter's, in the order the walk delivers
 * them) and must draw them in a bounded number of points without losing
 * what matters on such a chart: the peak, the lowest point and the last
 * value.  A series holds at most `cap` buckets of consecutive values,
 * each bucket its lowest and highest point; when the buckets are full,
 * neighbours merge two by two and each bucket takes twice as many values
 * from then on.  So the points drawn (at most 2 * cap + 1) include the
 * series' maximum and minimum exactly, its last value, and the shape at
 * a resolution of 1/cap of the values.  A value's time is kept, never
 * moved: the caller gives times in order (a time earlier than the
 * previous one is taken as the previous one's).
 *
 * The series owns its buckets (ulma_series_free).  Single-threaded.
 */
#ifndef ULMA_SERIES_H
#define ULMA_SERIES_H

#include <stdint.h>

struct ulma_series_point {
	uint64_t at; /* ns since the trace start */
	double v;
};

struct ulma_series_bucket {
	struct ulma_series_point lo, hi;
};

struct ulma_series {
	struct ulma_series_bucket *b; /* cap of them, allocated at the first value */
	uint32_t cap, nb;
	uint64_t per;     /* values a bucket takes */
	uint64_t values;  /* values added */
	struct ulma_series_point last;
	double min, max;
};

/* An empty series of at most cap buckets (cap even, at least 2). */
void ulma_series_init(struct ulma_series *s, uint32_t cap);
void ulma_series_free(struct ulma_series *s);

/* Add value v at time `at` (ns).  0 or -ENOMEM (the value is then lost). */
int ulma_series_add(struct ulma_series *s, uint64_t at, double v);

/* The points to draw, in time order, into out (room for 2 * cap + 1):
 * each bucket's lowest and highest point (once if they are the same) and
 * the last value.  Returns how many. */
uint32_t ulma_series_points(const struct ulma_series *s, struct ulma_series_point *out);

#endif
