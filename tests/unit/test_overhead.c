/* test_overhead.c - taking the hook's own cost out of measured times
 * (src/analysis/overhead.c and the event counts of src/analysis/profile.c):
 * which events each function's self and total time are charged, recursion
 * included, and the corrected split, clamped to add up. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "analysis/overhead.h"
#include "analysis/profile.h"
#include "analysis/summary.h"
#include "tap.h"
#include "ulma/shm.h"

static void test_counts(void)
{
	struct ulma_profile p;
	ulma_profile_init(&p);
	ulma_profile_add_thread(&p, 0, 1, 1, 1);
	ulma_profile_add_func(&p, 0, ULMA_DEF_PY, "main", 4, "f", 1, 1);
	ulma_profile_add_func(&p, 1, ULMA_DEF_PY, "a", 1, "f", 1, 2);
	ulma_profile_add_func(&p, 2, ULMA_DEF_PY, "b", 1, "f", 1, 3);
	/* main { a { b, b }, a { a } } : a recursive once.  Self ticks: main 30
	 * (3 events), a 60 (6 events), b 60 (2 events) */
	uint64_t t = 0;
	ulma_profile_enter(&p, 0, 0, t += 10);
	ulma_profile_enter(&p, 0, 1, t += 10);
	ulma_profile_enter(&p, 0, 2, t += 10);
	ulma_profile_exit(&p, 0, t += 30);
	ulma_profile_enter(&p, 0, 2, t += 10);
	ulma_profile_exit(&p, 0, t += 30);
	ulma_profile_exit(&p, 0, t += 10);
	ulma_profile_enter(&p, 0, 1, t += 10);
	ulma_profile_enter(&p, 0, 1, t += 10);
	ulma_profile_exit(&p, 0, t += 10);
	ulma_profile_exit(&p, 0, t += 10);
	ulma_profile_exit(&p, 0, t += 10);
	CHECK_EQ_U64(p.funcs[2].self_events, 2, "b: its two exits");
	CHECK_EQ_U64(p.funcs[2].total_events, 2, "b's total: its exits, nothing inside");
	CHECK_EQ_U64(p.funcs[1].self_events, 2 + 1 + 1 + 1 + 1,
		     "a: three exits, and the entries of b, b and the inner a");
	CHECK_EQ_U64(p.funcs[1].total_events, (1 + 4) + (1 + 2),
		     "a's total, outermost frames only: exit plus two events per frame inside");
	CHECK_EQ_U64(p.funcs[0].self_events, 1 + 2, "main: its exit and the entries of both a");
	CHECK_EQ_U64(p.funcs[0].total_events, 1 + 2 * 5, "main's total: every event of the 5 frames inside");
	CHECK_EQ_U64(p.funcs[0].self_events + p.funcs[1].self_events + p.funcs[2].self_events, 12 - 1,
		     "every event but main's own entry is charged to one self time");
	CHECK(p.funcs[0].self_ticks == 30 && p.funcs[1].self_ticks == 60 && p.funcs[2].self_ticks == 60,
	      "self ticks as planned");
	/* at 10 per event: a's 60 were all the hook's, b keeps 40 of its 60 */
	struct ulma_time_split a, b;
	ulma_overhead_split(60, 60, 0, 0, ulma_overhead_cost(p.funcs[1].self_events, 10.0), &a);
	ulma_overhead_split(60, 60, 0, 0, ulma_overhead_cost(p.funcs[2].self_events, 10.0), &b);
	CHECK(a.wall_ns == 0 && b.wall_ns == 40, "corrected: a 0, b 40");
	ulma_profile_free(&p);
}

static void test_split(void)
{
	struct ulma_time_split s;
	ulma_overhead_split(1000, 600, 100, 50, ulma_overhead_cost(4, 0.0), &s);
	CHECK(s.wall_ns == 1000 && s.on_cpu_ns == 600 && s.runnable_ns == 100 && s.blocked_ns == 300 &&
		      s.gil_ns == 50,
	      "no correction: the measured split");
	ulma_overhead_split(1000, 600, 100, 50, ulma_overhead_cost(4, 25.0), &s);
	CHECK(s.wall_ns == 900 && s.on_cpu_ns == 500 && s.runnable_ns == 100 && s.blocked_ns == 300,
	      "4 events at 25 ns: 100 ns less, all of it on-CPU time");
	ulma_overhead_split(1000, 50, 100, 900, ulma_overhead_cost(4, 25.0), &s);
	CHECK(s.wall_ns == 900 && s.on_cpu_ns == 0 && s.runnable_ns == 100 && s.blocked_ns == 800 && s.gil_ns == 800,
	      "more cost than on-CPU time: on-CPU goes to 0, the parts still add up, GIL within blocked");
	ulma_overhead_split(80, 80, 0, 0, ulma_overhead_cost(4, 25.0), &s);
	CHECK(s.wall_ns == 0 && s.on_cpu_ns == 0 && s.blocked_ns == 0, "never below zero");
	ulma_overhead_split(1000, 2000, 2000, 0, ulma_overhead_cost(0, 25.0), &s);
	CHECK(s.on_cpu_ns == 1000 && s.runnable_ns == 0 && s.blocked_ns == 0, "sampled parts clamped to the wall time");
}

/* A corrupt trace may hold times near 2^64: the corrected native share
 * is computed in integers, so nothing overflows or leaves a double out of
 * range (found by fuzz_report; UBSan stops the asan build on it). */
static void test_extreme_times(void)
{
	struct ulma_profile p;
	ulma_profile_init(&p);
	ulma_profile_add_thread(&p, 0, 1, 1, 1);
	ulma_profile_add_func(&p, 0, ULMA_DEF_C, "len", 3, "", 0, 0);
	ulma_profile_enter(&p, 0, 0, 1);
	ulma_profile_exit(&p, 0, UINT64_MAX - 1);
	CHECK_EQ_U64(p.threads[0].native_ticks, UINT64_MAX - 2, "all of it native");
	struct ulma_summary s = {.profile = &p, .cal = {.ns_per_tick = 1.0}, .overhead_ps = 1000, .exit_status = -1};
	char buf[8192];
	FILE *out = fmemopen(buf, sizeof(buf), "w");
	int rc = ulma_summary_json(out, &s);
	fclose(out);
	CHECK(rc == 0 && strstr(buf, "\"total_native_ns\": 184467440737095516") != NULL,
	      "the native time near 2^64, less two events' cost");
	ulma_profile_free(&p);
}

int main(void)
{
	test_counts();
	test_split();
	test_extreme_times();
	return tap_done();
}
