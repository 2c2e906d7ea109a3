/* test_schedline.c - interpolation of sampled CPU and run-queue time
 * (src/analysis/schedline.c): exact values between samples, clamping
 * outside them, rejection of samples that go back, and bounded memory. */
#include <stdint.h>

#include "analysis/schedline.h"
#include "tap.h"

static void at(struct ulma_schedline *l, uint64_t t, uint64_t *cpu, uint64_t *wait)
{
	struct ulma_sched_clocks c;
	ulma_schedline_at(l, t, &c);
	*cpu = c.cpu_ns;
	*wait = c.wait_ns;
}

int main(void)
{
	struct ulma_schedline l = {0};
	uint64_t cpu, wait;

	at(&l, 5, &cpu, &wait);
	CHECK(cpu == 0 && wait == 0, "an empty schedline gives zeros");

	struct ulma_trace_sched a = {1000, 100, 10, 0, true}, b = {2000, 600, 10, 0, true},
				c = {3000, 600, 510, 300, true};
	CHECK(ulma_schedline_add(&l, &a) == 0 && ulma_schedline_add(&l, &b) == 0 &&
		      ulma_schedline_add(&l, &c) == 0,
	      "three samples added");
	CHECK_EQ_U64(ulma_schedline_last_ticks(&l), 3000, "newest sample's time");

	at(&l, 500, &cpu, &wait);
	CHECK(cpu == 100 && wait == 10, "before the first sample: clamped to it");
	at(&l, 1000, &cpu, &wait);
	CHECK(cpu == 100 && wait == 10, "at a sample: its values");
	at(&l, 1500, &cpu, &wait);
	CHECK_EQ_U64(cpu, 350, "halfway between a and b: half of b's 500 ns of cpu");
	CHECK_EQ_U64(wait, 10, "no wait between a and b");
	at(&l, 2500, &cpu, &wait);
	CHECK(cpu == 600 && wait == 260, "halfway between b and c: half of c's 500 ns of wait");
	struct ulma_sched_clocks clocks;
	ulma_schedline_at(&l, 2750, &clocks);
	CHECK_EQ_U64(clocks.gil_ns, 225, "the GIL clock interpolates too: three quarters of c's 300 ns");
	CHECK_EQ_U64(clocks.wait_ns, 385, "with the others at the same point");
	at(&l, 9999, &cpu, &wait);
	CHECK(cpu == 600 && wait == 510, "after the last sample: clamped to it");

	struct ulma_trace_sched back = {2500, 700, 600, 400, true};
	CHECK(ulma_schedline_add(&l, &back) == 0, "an older sample is accepted as a no-op");
	CHECK_EQ_U64(ulma_schedline_last_ticks(&l), 3000, "and ignored");

	/* a long run keeps only what later queries need */
	for (uint64_t i = 1; i <= 100000; i++) {
		struct ulma_trace_sched s = {3000 + i * 10, 600 + i * 5, 510 + i, 300, true};
		ulma_schedline_add(&l, &s);
		at(&l, 3000 + i * 10 - 5, &cpu, &wait);
	}
	CHECK(l.cap <= 64, "memory stays bounded over 100000 samples");
	CHECK_EQ_U64(cpu, 600 + 100000 * 5 - 2, "still exact after sliding (half of the last 5 ns step)");
	ulma_schedline_free(&l);
	return tap_done();
}
