/* test_pace.c - the monitor loop's naps (src/monitor/pace.h) with known
 * answers: the time the fullest ring takes to fill a quarter at the rate
 * of the last period, clamped to 0.25-6 ms; 2 ms before any rate is known;
 * the 1-2-4 ms backoff of idle polls, ended by records; 10 ms after an
 * error; a clock that did not move. */
#include "tap.h"

#include "monitor/pace.h"

#define MS 1000000L
#define RING 262144u /* records: a quarter is 65536 */

int main(void)
{
	struct ulma_pace p = {0};
	CHECK_EQ_I64(ulma_pace_nap_ns(&p, 100, 100, RING, 1000 * MS), 2 * MS, "the first poll: no rate yet, 2 ms");
	/* 16384 records in 1 ms: a quarter ring (65536) in 4 ms */
	CHECK_EQ_I64(ulma_pace_nap_ns(&p, 16384, 16384, RING, 1001 * MS), 4 * MS, "a quarter ring at the last rate");
	/* the same records over four threads' rings: the fullest one sets it */
	CHECK_EQ_I64(ulma_pace_nap_ns(&p, 65536, 32768, RING, 1005 * MS), 8 * MS > ULMA_PACE_MOST_NS ? ULMA_PACE_MOST_NS : 8 * MS,
		     "the fullest ring, not the sum, and no longer than the most");
	/* a burst: a whole ring in 0.5 ms */
	CHECK_EQ_I64(ulma_pace_nap_ns(&p, RING, RING, RING, 1005 * MS + 500000), ULMA_PACE_LEAST_NS,
		     "a burst: the shortest nap (a quarter ring would take 0.125 ms)");
	CHECK_EQ_I64(ulma_pace_nap_ns(&p, 40000, 40000, RING, 1006 * MS), 819200,
		     "40000 records in 0.5 ms: 0.82 ms to a quarter ring");
	CHECK_EQ_I64(ulma_pace_nap_ns(&p, 1, 1, RING, 1007 * MS), ULMA_PACE_MOST_NS, "a trickle: the longest nap");
	/* idle: 1, 2, 4, 4 ms */
	CHECK_EQ_I64(ulma_pace_nap_ns(&p, 0, 0, RING, 1010 * MS), 1 * MS, "idle: 1 ms");
	CHECK_EQ_I64(ulma_pace_nap_ns(&p, 0, 0, RING, 1011 * MS), 2 * MS, "idle again: 2 ms");
	CHECK_EQ_I64(ulma_pace_nap_ns(&p, 0, 0, RING, 1013 * MS), 4 * MS, "idle again: 4 ms");
	CHECK_EQ_I64(ulma_pace_nap_ns(&p, 0, 0, RING, 1017 * MS), 4 * MS, "idle stays at 4 ms");
	CHECK_EQ_I64(ulma_pace_nap_ns(&p, 4096, 4096, RING, 1018 * MS), 16 * MS > ULMA_PACE_MOST_NS ? ULMA_PACE_MOST_NS : 16 * MS,
		     "records again end the backoff");
	CHECK(p.idle == 0, "the backoff is cleared");
	CHECK_EQ_I64(ulma_pace_nap_ns(&p, 0, 0, RING, 1019 * MS), 1 * MS, "the next idle poll starts at 1 ms");
	CHECK_EQ_I64(ulma_pace_nap_ns(&p, -5, 0, RING, 1020 * MS), ULMA_PACE_ERROR_NS, "an error: 10 ms");
	/* a clock that did not move (or went back): no rate, 2 ms */
	CHECK_EQ_I64(ulma_pace_nap_ns(&p, 10, 10, RING, 1020 * MS), 2 * MS, "no time passed: 2 ms");
	CHECK_EQ_I64(ulma_pace_nap_ns(&p, 10, 10, RING, 900 * MS), 2 * MS, "the clock went back: 2 ms");
	/* a small ring (--ring of 4096 records): its quarter, 1024 records */
	struct ulma_pace q = {.last_ns = 1};
	CHECK_EQ_I64(ulma_pace_nap_ns(&q, 1024, 1024, 4096, 1 + 2 * MS), 2 * MS, "a small ring's quarter");
	return tap_done();
}
