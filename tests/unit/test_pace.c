/* test_pace.c - the monitor loop's naps (src/monitor/pace.h) with known
 * answers: the time the fullest ring takes to fill a quarter at the rate
 * of the last period, less the poll's own time, clamped to 0.25-6 ms and
 * to twice the nap before; none after a ring half full, and the naps
 * doubling back from the shortest after it; 2 ms before any rate is known; the 1-2-4 ms
 * backoff of idle polls, ended by records; 10 ms after an error; a clock
 * that did not move. */
#include "tap.h"

#include "monitor/pace.h"

#define MS 1000000L
#define US 1000L
#define RING 262144u /* records: a quarter is 65536 */

static struct ulma_pace p;

/* A poll from `at` ns lasting `took` ns. */
static long poll_at(long n, uint64_t peak, uint64_t at, uint64_t took)
{
	return ulma_pace_nap_ns(&p, n, peak, RING, at, at + took);
}

int main(void)
{
	CHECK_EQ_I64(poll_at(100, 100, 1000 * MS, 10 * US), 2 * MS, "the first poll: no rate yet, 2 ms");
	/* 16384 records in the 1 ms since the last poll began: a quarter ring in 4 ms */
	CHECK_EQ_I64(poll_at(16384, 16384, 1001 * MS, 0), 4 * MS, "a quarter ring at the last rate");
	CHECK_EQ_I64(poll_at(16384, 16384, 1002 * MS, 300 * US), 4 * MS - 300 * US,
		     "less the poll's own time, during which the ring filled on");
	/* the same records over four threads' rings: the fullest one sets it */
	CHECK_EQ_I64(poll_at(65536, 32768, 1006 * MS, 0), ULMA_PACE_MOST_NS,
		     "the fullest ring, not the sum (8 ms), and no longer than the most");
	CHECK_EQ_I64(poll_at(65536, 32768, 1009 * MS, 0), 6 * MS, "a quarter ring in 6 ms: just the most");
	/* a burst: 120000 records in 0.25 ms */
	CHECK_EQ_I64(poll_at(120000, 120000, 1009 * MS + 250 * US, 0), ULMA_PACE_LEAST_NS,
		     "a burst: the shortest nap (a quarter ring would take 0.14 ms)");
	CHECK_EQ_I64(poll_at(40000, 40000, 1009 * MS + 750 * US, 0), 500000,
		     "40000 records in 0.5 ms (0.82 ms to a quarter): no more than twice the last nap");
	CHECK_EQ_I64(poll_at(40000, 40000, 1010 * MS + 250 * US, 700 * US), ULMA_PACE_LEAST_NS,
		     "a poll nearly as long as the fill (0.12 ms left): the shortest nap");
	/* behind: a ring half full or more when the poll began */
	CHECK_EQ_I64(poll_at(RING, RING, 1011 * MS, 2 * MS), 0, "a full ring: no nap");
	CHECK_EQ_I64(poll_at(RING, RING / 2, 1013 * MS, MS), 0, "a ring half full: no nap");
	CHECK_EQ_I64(poll_at(RING / 2, RING / 2 - 1, 1014 * MS, 0), ULMA_PACE_LEAST_NS,
		     "just under half, after the monitor was behind: the shortest nap, whatever the rate");
	/* a steady rate after that: 16384 records a ms, a quarter ring in 4 ms */
	CHECK_EQ_I64(poll_at(4096, 4096, 1014 * MS + 250 * US, 0), 500000, "the naps double back: 0.5 ms");
	CHECK_EQ_I64(poll_at(8192, 8192, 1014 * MS + 750 * US, 0), 1 * MS, "1 ms");
	CHECK_EQ_I64(poll_at(16384, 16384, 1015 * MS + 750 * US, 0), 2 * MS, "2 ms");
	CHECK_EQ_I64(poll_at(32768, 32768, 1017 * MS + 750 * US, 0), 4 * MS, "4 ms: the rate's");
	CHECK_EQ_I64(poll_at(65536, 65536, 1021 * MS + 750 * US, 0), 4 * MS, "and there it stays");
	CHECK_EQ_I64(poll_at(1, 1, 1025 * MS + 750 * US, 0), ULMA_PACE_MOST_NS, "a trickle: the longest nap");
	/* idle: 1, 2, 4, 4 ms */
	CHECK_EQ_I64(poll_at(0, 0, 1031 * MS, 0), 1 * MS, "idle: 1 ms");
	CHECK_EQ_I64(poll_at(0, 0, 1032 * MS, 0), 2 * MS, "idle again: 2 ms");
	CHECK_EQ_I64(poll_at(0, 0, 1034 * MS, 0), 4 * MS, "idle again: 4 ms");
	CHECK_EQ_I64(poll_at(0, 0, 1038 * MS, 0), 4 * MS, "idle stays at 4 ms");
	CHECK_EQ_I64(poll_at(4096, 4096, 1039 * MS, 0), ULMA_PACE_MOST_NS,
		     "records again end the backoff (the last flowing nap was the longest)");
	CHECK(p.idle == 0, "the backoff is cleared");
	CHECK_EQ_I64(poll_at(0, 0, 1045 * MS, 0), 1 * MS, "the next idle poll starts at 1 ms");
	CHECK_EQ_I64(poll_at(-5, 0, 1046 * MS, 0), ULMA_PACE_ERROR_NS, "an error: 10 ms");
	/* a clock that did not move (or went back): no rate, 2 ms */
	CHECK_EQ_I64(poll_at(10, 10, 1046 * MS, 0), 2 * MS, "no time passed: 2 ms");
	CHECK_EQ_I64(poll_at(10, 10, 900 * MS, 0), 2 * MS, "the clock went back: 2 ms");
	CHECK_EQ_I64(ulma_pace_nap_ns(&p, 10, 10, RING, 901 * MS, 900 * MS), 4 * MS,
		     "an end before the start: the poll took no time (twice the last nap)");
	/* a small ring (--ring of 4096 records): its quarter, 1024 records */
	struct ulma_pace q = {.last_ns = 1, .nap = 2 * MS};
	CHECK_EQ_I64(ulma_pace_nap_ns(&q, 1024, 1024, 4096, 1 + 2 * MS, 1 + 2 * MS), 2 * MS, "a small ring's quarter");
	return tap_done();
}
