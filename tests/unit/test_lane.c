/* test_lane.c - CPU lanes (src/analysis/lane.c): intervals charged to the
 * CPU of their first event, on/off-CPU rendering, bins that coarsen as
 * the session outgrows them, and times up to 2^64 - 1 without a wrap. */
#include <string.h>
#include <unistd.h>

#include "analysis/lane.h"
#include "tap.h"

int main(void)
{
	struct ulma_lane l;
	char out[9];

	/* ticks are ns (ns_per_tick 1); bins of 10 ns */
	ulma_lane_init(&l, 0, 10);
	ulma_lane_event(&l, 0, 1, 0, 1.0);
	ulma_lane_event(&l, 40, 1, 40, 1.0);  /* [0,40): on CPU 1 all the time */
	ulma_lane_event(&l, 80, 2, 40, 1.0);  /* [40,80): off a CPU */
	ulma_lane_event(&l, 160, 2, 120, 1.0); /* [80,160): on CPU 2 */
	ulma_lane_render(&l, 0, 160, out, 8);  /* 8 columns of 20 ns */
	CHECK(strcmp(out, "11..2222") == 0, "lane reads 11..2222, got '%s'", out);

	ulma_lane_render(&l, 0, 320, out, 8);
	CHECK(strcmp(out, "1.22    ") == 0, "after the last event the lane is blank: got '%s'", out);

	/* a long session: 128 bins of 10 ns cover 1280 ns; 5000 ns forces coarsening */
	ulma_lane_init(&l, 0, 10);
	ulma_lane_event(&l, 0, 3, 0, 1.0);
	ulma_lane_event(&l, 2500, 3, 2500, 1.0); /* on CPU 3 for the first half */
	ulma_lane_event(&l, 5000, 3, 2500, 1.0); /* off for the second */
	CHECK(l.width >= 40, "bins widened to cover the session (width %llu)", (unsigned long long)l.width);
	ulma_lane_render(&l, 0, 5000, out, 8);
	CHECK(strcmp(out, "3333....") == 0, "coarse lane reads 3333...., got '%s'", out);

	/* a fifth on a CPU is enough for a digit: two GIL threads alternate */
	ulma_lane_init(&l, 0, 10);
	for (uint64_t t = 0; t < 800; t += 20) {
		ulma_lane_event(&l, t, 0, t / 2, 1.0);
		ulma_lane_event(&l, t + 10, 0, t / 2 + 10, 1.0);
	}
	ulma_lane_render(&l, 0, 800, out, 8);
	CHECK(strcmp(out, "00000000") == 0, "half the time on CPU 0 shows as CPU 0: got '%s'", out);

	/* times near 2^64 (a trace's ticks are whatever its file says): the bin
	 * arithmetic must not wrap, or charging never ends; alarm() turns such
	 * a hang into a failure */
	alarm(10);
	const uint64_t top = UINT64_MAX;
	ulma_lane_init(&l, 0, 1000000);
	ulma_lane_event(&l, top - 40, 5, 0, 1.0);
	ulma_lane_event(&l, top, 5, 40, 1.0); /* the last 40 ticks of time, on CPU 5 */
	CHECK(l.used == (top - 40) / l.width + 1, "the charge lands in the bin of 2^64 - 41 (used %u)", l.used);
	ulma_lane_render(&l, 0, top, out, 8);
	CHECK(strcmp(out, "       5") == 0, "the end of time renders in the last column: got '%s'", out);
	ulma_lane_init(&l, top - 1000, 10);
	ulma_lane_event(&l, top - 1000, 1, 0, 1.0);
	ulma_lane_event(&l, top, 1, 1000, 1.0); /* a session that ends at 2^64 - 1 */
	ulma_lane_render(&l, top - 1000, top, out, 8);
	CHECK(strcmp(out, "11111111") == 0, "a session ending at 2^64 - 1 renders whole: got '%s'", out);
	alarm(0);
	return tap_done();
}
