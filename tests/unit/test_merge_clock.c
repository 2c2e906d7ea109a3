/* test_merge_clock.c - a rank's ticks on rank 0's clock
 * (merge_rank_ns, src/monitor/merge.h): its own ns from its trace's
 * calibration, less its offset to rank 0 interpolated between the one
 * measured at MPI_Init and the one at MPI_Finalize; corrupt values stay
 * bounded. */
#include "tap.h"

#include <string.h>

#include "monitor/merge.h"

int main(void)
{
	struct merge_rank r;
	memset(&r, 0, sizeof(r));
	r.start_ticks = 1000;
	r.start_ns = 5000000000;
	r.ns_per_tick = 0.5; /* a 2 GHz TSC */
	CHECK_EQ_I64(merge_rank_local_ns(&r, 3000), 5000001000, "ticks to the rank's own ns");

	/* 3 s ahead at MPI_Init (its ns 5e9), 3 s + 2 ms at MPI_Finalize (its ns 7e9): drift */
	r.off0 = 3000000000;
	r.off1 = 3002000000;
	r.at0 = 5000000000;
	r.slope = (double)(r.off1 - r.off0) / 2e9;
	CHECK_EQ_I64(merge_rank_ns(&r, 1000), 2000000000, "at MPI_Init: the init offset");
	CHECK_EQ_I64(merge_rank_ns(&r, 1000 + 4000000000u), 7000000000 - 3002000000, "at MPI_Finalize: the final one");
	CHECK_EQ_I64(merge_rank_ns(&r, 1000 + 2000000000u), 6000000000 - 3001000000, "half way: half of each");
	CHECK(merge_rank_ns(&r, 1000 + 2000000002u) >= merge_rank_ns(&r, 1000 + 2000000000u),
	      "a drifting clock is never made to run back");
	CHECK_EQ_I64(merge_rank_ns(&r, 1000 + 2000002000u) - merge_rank_ns(&r, 1000 + 2000000000u), 999,
		     "1000 of its ns are 999 of rank 0's");

	r.ns_per_tick = 1e12; /* corrupt */
	CHECK_EQ_I64(merge_rank_ns(&r, UINT64_MAX), 1000000000000000000, "a corrupt rate is bounded");
	CHECK_EQ_I64(merge_rank_local_ns(&r, UINT64_MAX), 1000000000000000000, "its own ns too");
	return tap_done();
}
