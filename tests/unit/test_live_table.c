/* test_live_table.c - the live view's rows (src/monitor/live_table.h): the
 * on-CPU and runnable split of self time, including the still-open frames'
 * share (the top frame from its thread's latest event up to now, off its
 * CPU from when the switch records say) and its clamping at 0; the clear
 * baseline covering the split like calls and times; the percentages of a
 * self time; the GIL waits, by the same rules; sorting by on-CPU time; the
 * hook's cost taken out, open frames included; the per-process totals,
 * over two processes' threads, with open frames and across a clear; the
 * native part of each total time (C functions, native code, a zone as the
 * frame below it), open frames included and across a clear; with
 * --memory, the bytes each function and process holds now, sorted by, and
 * kept across a clear as a state (a function holding memory keeps its
 * row with nothing since the clear, one that freed its blocks does not). */
#include <string.h>

#include "analysis/profile_memory.h"
#include "monitor/live_table.h"
#include "tap.h"
#include "ulma/shm.h"

enum { A, B, C, NF };

static const struct ulma_live_row *row_of(const struct ulma_live_table *t, uint32_t func)
{
	for (uint32_t i = 0; i < t->nrows; i++)
		if (t->rows[i].func == func)
			return &t->rows[i];
	return NULL;
}

static int counts_are(const struct ulma_live_table *t, uint32_t func, uint64_t calls, uint64_t total,
		      uint64_t self, uint64_t cpu, uint64_t wait)
{
	const struct ulma_live_row *r = row_of(t, func);
	if (!r) {
		tap_diag("func %u has no row", func);
		return 0;
	}
	const struct ulma_live_counts *n = &r->n;
	int ok = n->calls == calls && n->total_ticks == total && n->self_ticks == self && n->self_cpu_ns == cpu &&
		 n->self_wait_ns == wait;
	if (!ok)
		tap_diag("func %u: calls %llu total %llu self %llu cpu %llu wait %llu; expected %llu %llu %llu %llu %llu",
			 func, (unsigned long long)n->calls, (unsigned long long)n->total_ticks,
			 (unsigned long long)n->self_ticks, (unsigned long long)n->self_cpu_ns,
			 (unsigned long long)n->self_wait_ns, (unsigned long long)calls, (unsigned long long)total,
			 (unsigned long long)self, (unsigned long long)cpu, (unsigned long long)wait);
	return ok;
}

static void setup(struct ulma_profile *p)
{
	static const char *const names[NF] = {"A", "B", "C"};
	ulma_profile_init(p);
	for (uint32_t f = 0; f < NF; f++)
		ulma_profile_add_func(p, f, ULMA_DEF_PY, names[f], 1, "m.py", 4, f + 1);
	ulma_profile_add_thread(p, 0, 1, 100, 100);
}

/* ticks (1 ns each):
 *   A enters 0
 *     B 10 .. 30, blocked 6 and preempted 2 inside     self 20: cpu 12, wait 2
 *     C enters 40, still open
 *       B 50 .. 60, blocked 4 inside                   self 10: cpu 6
 * so at the last event (60) the thread was off its CPU 10 blocked, 2 runnable. */
static void feed(struct ulma_profile *p)
{
	ulma_profile_enter(p, 0, A, 0);
	ulma_profile_enter(p, 0, B, 10);
	ulma_profile_off(p, 0, 6, 0, 0, 1, 0);
	ulma_profile_off(p, 0, 0, 2, 0, 0, 1);
	ulma_profile_exit(p, 0, 30);
	ulma_profile_enter(p, 0, C, 40);
	ulma_profile_enter(p, 0, B, 50);
	ulma_profile_off(p, 0, 4, 0, 0, 1, 0);
	ulma_profile_exit(p, 0, 60);
}

static void test_open_frames(void)
{
	struct ulma_profile p;
	struct ulma_live_table t;
	setup(&p);
	feed(&p);
	ulma_live_table_init(&t);
	if (!CHECK(ulma_live_table_update(&t, &p, 100) == 0 && t.nrows == NF, "snapshot at 100: 3 rows"))
		return;
	CHECK(counts_are(&t, A, 1, 100, 20, 20, 0), "A (open, below C): self 10 + 10, all on a CPU");
	/* C is on top: its self runs to now, on its CPU since its last event */
	CHECK(counts_are(&t, C, 1, 60, 50, 50, 0), "C (open, on top): self 10 + 40 up to now");
	CHECK(counts_are(&t, B, 2, 30, 30, 18, 2), "B (returned twice): cpu 12+6, wait 2");

	ulma_live_table_sort(&t, &p, ULMA_SORT_CPU);
	CHECK(t.rows[0].func == C && t.rows[1].func == A && t.rows[2].func == B, "sorted by on-CPU self time: C A B");

	/* the switch records say the thread has been blocked since 80: C's
	 * open self time stops there (whose the interval is, is known when it
	 * is merged); the thread's row has it */
	p.threads[0].off_now = 1;
	p.threads[0].off_since = 80;
	ulma_live_table_update(&t, &p, 100);
	CHECK(counts_are(&t, C, 1, 60, 30, 30, 0), "C with its thread blocked since 80: self 10 + 20");
	CHECK(t.nprocs == 1 && t.procs[0].n.self_ticks == 100 && t.procs[0].n.self_cpu_ns == 100 - 10 - 2 - 20 &&
		      t.procs[0].n.self_wait_ns == 2,
	      "the process: all 100 ticks, 20 of them off the CPU since 80");
	p.threads[0].off_now = 2; /* preempted instead: runnable */
	ulma_live_table_update(&t, &p, 100);
	CHECK(counts_are(&t, C, 1, 60, 30, 30, 0) && t.procs[0].n.self_wait_ns == 2 + 20,
	      "preempted since 80: 20 more runnable for the process");
	p.threads[0].off_now = 0;

	/* C now returns: nothing is counted twice between the open and the closed frame */
	ulma_profile_off(&p, 0, 20, 0, 0, 1, 0);
	ulma_profile_exit(&p, 0, 100);
	ulma_live_table_update(&t, &p, 110);
	CHECK(counts_are(&t, C, 1, 60, 50, 30, 0), "C returned at 100 after 20 blocked: cpu 30");
	/* A is on top now; the 10 ticks since the thread's latest event are on its CPU */
	CHECK(counts_are(&t, A, 1, 110, 30, 30, 0), "A on top at 110: self 20 + 10");
	ulma_live_table_free(&t);
	ulma_profile_free(&p);
}

static void test_clamped(void)
{
	/* more time off the CPU than the frame lasted (a switch record's
	 * clock a little off): its on-CPU time stays at 0, never wraps */
	struct ulma_profile p;
	struct ulma_live_table t;
	setup(&p);
	ulma_profile_enter(&p, 0, A, 0);
	ulma_profile_off(&p, 0, 50, 0, 0, 1, 0);
	ulma_profile_exit(&p, 0, 10);
	ulma_live_table_init(&t);
	ulma_live_table_update(&t, &p, 20);
	CHECK(counts_are(&t, A, 1, 10, 10, 0, 0), "A off its CPU longer than it lasted: cpu 0");
	ulma_live_table_free(&t);
	ulma_profile_free(&p);
}

static void test_clear(void)
{
	struct ulma_profile p;
	struct ulma_live_table t;
	setup(&p);
	feed(&p);
	ulma_live_table_init(&t);
	ulma_live_table_update(&t, &p, 100);
	CHECK(ulma_live_table_clear(&t, &p, 100) == 0 && t.nrows == 0, "cleared at 100: no rows");
	/* C (open across the clear) calls B again, which is preempted 2 */
	ulma_profile_enter(&p, 0, B, 110);
	ulma_profile_off(&p, 0, 0, 2, 0, 0, 1);
	ulma_profile_exit(&p, 0, 120);
	ulma_live_table_update(&t, &p, 130);
	CHECK(counts_are(&t, B, 1, 10, 10, 8, 2), "B after the clear: its one call");
	CHECK(counts_are(&t, C, 0, 30, 20, 20, 0), "C counts from the clear: self 10 + 10");
	CHECK(counts_are(&t, A, 0, 30, 0, 0, 0), "A, below C all along: total only");
	ulma_live_table_free(&t);
	ulma_profile_free(&p);
}

static int split_is(uint64_t self, uint64_t cpu, uint64_t wait, uint64_t gil, double ecpu, double erun,
		    double eblk, double egil)
{
	struct ulma_live_split s = ulma_live_split_of(self, cpu, wait, gil);
	int ok = s.cpu == ecpu && s.run == erun && s.blk == eblk && s.gil == egil;
	if (!ok)
		tap_diag("split_of(%llu, %llu, %llu, %llu) = %g %g %g %g; expected %g %g %g %g",
			 (unsigned long long)self, (unsigned long long)cpu, (unsigned long long)wait,
			 (unsigned long long)gil, s.cpu, s.run, s.blk, s.gil, ecpu, erun, eblk, egil);
	return ok;
}

static void test_split(void)
{
	CHECK(split_is(200, 60, 40, 0, 30, 20, 50, 0), "cpu 30%%, runnable 20%%, blocked the rest");
	CHECK(split_is(100, 0, 0, 0, 0, 0, 100, 0), "no cpu nor wait: all blocked");
	CHECK(split_is(100, 120, 10, 0, 100, 0, 0, 0), "cpu beyond the self time is cut to it");
	CHECK(split_is(100, 60, 70, 0, 60, 40, 0, 0), "runnable is cut to what cpu leaves");
	CHECK(split_is(200, 60, 40, 30, 30, 20, 50, 15), "the GIL: 15%% of the self time, within blocked");
	CHECK(split_is(100, 60, 30, 25, 60, 30, 10, 10), "GIL waits beyond the blocked part are cut to it");
}

static uint64_t gil_of(const struct ulma_live_table *t, uint32_t func)
{
	const struct ulma_live_row *r = row_of(t, func);
	return r ? r->n.self_gil_ns : UINT64_MAX;
}

/* GIL waits are blocked intervals, charged like the rest. */
static void test_gil(void)
{
	struct ulma_profile p;
	struct ulma_live_table t;
	setup(&p);
	ulma_profile_enter(&p, 0, A, 0);
	ulma_profile_enter(&p, 0, B, 10);
	ulma_profile_off(&p, 0, 7, 0, 7, 1, 0);
	ulma_profile_exit(&p, 0, 30);
	ulma_profile_off(&p, 0, 2, 0, 2, 1, 0);
	ulma_profile_enter(&p, 0, C, 40);
	ulma_profile_enter(&p, 0, B, 50);
	ulma_profile_off(&p, 0, 4, 0, 4, 1, 0);
	ulma_profile_exit(&p, 0, 60);
	ulma_live_table_init(&t);
	if (!CHECK(ulma_live_table_update(&t, &p, 100) == 0, "snapshot at 100"))
		return;
	CHECK(gil_of(&t, B) == 11, "B, returned twice: 7 + 4");
	CHECK(gil_of(&t, A) == 2, "A: the wait while it was on top");
	CHECK(gil_of(&t, C) == 0, "C: none");
	CHECK(t.nprocs == 1 && t.procs[0].n.self_gil_ns == 13, "the process: the thread's 13");

	ulma_live_table_clear(&t, &p, 100);
	ulma_profile_enter(&p, 0, B, 110);
	ulma_profile_off(&p, 0, 3, 0, 3, 1, 0);
	ulma_profile_exit(&p, 0, 120);
	ulma_live_table_update(&t, &p, 130);
	CHECK(gil_of(&t, B) == 3, "B after the clear: 3");
	CHECK(t.nprocs == 1 && t.procs[0].n.self_gil_ns == 3, "the process after the clear: 3");
	ulma_live_table_free(&t);
	ulma_profile_free(&p);
}

static const struct ulma_live_proc *proc_of(const struct ulma_live_table *t, uint32_t pid)
{
	for (uint32_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].pid == pid)
			return &t->procs[i];
	return NULL;
}

static void test_cost_taken_out(void)
{
	/* at 100, as in test_open_frames: A (open, below C) has 5 events
	 * inside (B in and out, C in, B in and out), 2 charged to its self time
	 * (the entries of B and C); C (open, on top) has B's 2 inside, 1 its
	 * own (B's entry); B its 2 exits.  At 1 tick (and 1 ns) per event,
	 * taken from on-CPU time first: */
	struct ulma_profile p;
	struct ulma_live_table t;
	setup(&p);
	feed(&p);
	ulma_live_table_init(&t);
	ulma_live_table_set_cost(&t, 1.0, 1.0);
	if (!CHECK(ulma_live_table_update(&t, &p, 100) == 0, "snapshot at 100"))
		return;
	CHECK(counts_are(&t, A, 1, 95, 18, 18, 0), "A: self 20-2, cpu 20-2, total 100-5");
	CHECK(counts_are(&t, C, 1, 58, 49, 49, 0), "C: self 50-1, cpu 50-1, total 60-2");
	CHECK(counts_are(&t, B, 2, 28, 28, 16, 2), "B: self 30-2, cpu 18-2, total cut to its self");
	CHECK(proc_of(&t, 100) && proc_of(&t, 100)->n.self_ticks == 94 && proc_of(&t, 100)->n.self_cpu_ns == 82,
	      "the process: self 100-6, cpu 88-6 for its 6 events");
	ulma_live_table_set_cost(&t, 0, 0);
	ulma_live_table_update(&t, &p, 100);
	CHECK(counts_are(&t, A, 1, 100, 20, 20, 0), "cost 0: raw times again");
	ulma_live_table_free(&t);
	ulma_profile_free(&p);
}

static int proc_is(const struct ulma_live_table *t, uint32_t pid, uint32_t threads, uint64_t events,
		   uint64_t self, uint64_t cpu, uint64_t wait, uint64_t first, uint64_t last)
{
	const struct ulma_live_proc *pr = proc_of(t, pid);
	if (!pr) {
		tap_diag("pid %u has no row", pid);
		return 0;
	}
	int ok = pr->threads == threads && pr->n.events == events && pr->n.self_ticks == self &&
		 pr->n.self_cpu_ns == cpu && pr->n.self_wait_ns == wait && pr->first_ticks == first &&
		 pr->last_ticks == last;
	if (!ok)
		tap_diag("pid %u: threads %u events %llu self %llu cpu %llu wait %llu first %llu last %llu", pid,
			 pr->threads, (unsigned long long)pr->n.events, (unsigned long long)pr->n.self_ticks,
			 (unsigned long long)pr->n.self_cpu_ns, (unsigned long long)pr->n.self_wait_ns,
			 (unsigned long long)pr->first_ticks, (unsigned long long)pr->last_ticks);
	return ok;
}

static void test_processes(void)
{
	/* pid 100: thread 0 as in feed() (6 events; self at 100: A 20 + C 50 + B 30,
	 *          off its CPU 10 blocked and 2 runnable)
	 *          and thread 1, one closed call of A (ticks 5-25, 6 blocked, 4 runnable)
	 * pid 200: thread 2, A open since 70 */
	struct ulma_profile p;
	struct ulma_live_table t;
	setup(&p);
	feed(&p);
	ulma_profile_add_thread(&p, 1, 2, 100, 101);
	ulma_profile_add_thread(&p, 2, 3, 200, 200);
	ulma_profile_enter(&p, 1, A, 5);
	ulma_profile_off(&p, 1, 6, 4, 0, 1, 1);
	ulma_profile_exit(&p, 1, 25);
	ulma_profile_enter(&p, 2, A, 70);
	ulma_live_table_init(&t);
	if (!CHECK(ulma_live_table_update(&t, &p, 100) == 0 && t.nprocs == 2, "two processes"))
		return;
	CHECK(t.procs[0].pid == 100 && t.procs[1].pid == 200, "in order of appearance");
	CHECK(proc_is(&t, 100, 2, 8, 100 + 20, 88 + 10, 2 + 4, 0, 60),
	      "pid 100: both threads' events and self time, the open frames' included");
	CHECK(proc_is(&t, 200, 1, 1, 30, 30, 0, 70, 70), "pid 200: its open frame's 30 ticks, on its CPU");

	ulma_live_table_sort(&t, &p, ULMA_SORT_CPU);
	CHECK(t.procs[0].pid == 100, "sorted by on-CPU time: pid 100 first");
	ulma_live_table_sort(&t, &p, ULMA_SORT_NAME);
	CHECK(t.procs[0].pid == 100 && t.procs[1].pid == 200, "sorted by pid");

	CHECK(ulma_live_table_clear(&t, &p, 100) == 0 && t.nprocs == 0, "cleared at 100: no process rows");
	ulma_profile_off(&p, 2, 3, 1, 0, 1, 1);
	ulma_profile_enter(&p, 2, B, 110);
	ulma_live_table_update(&t, &p, 120);
	/* pid 200 since the clear: one event, A's 10 ticks (100-110, of which
	 * 3 blocked and 1 runnable), B's 10 open ticks.  pid 100 had no event,
	 * but thread 0 is still in C (open, on top): 20 ticks on its CPU; its
	 * thread 1 had nothing and is not counted */
	CHECK(t.nprocs == 2, "both processes have something since the clear");
	CHECK(proc_is(&t, 200, 1, 1, 20, 16, 1, 100, 110), "pid 200 from the clear on, first event cut to the clear");
	CHECK(proc_is(&t, 100, 1, 0, 20, 20, 0, 100, 60), "pid 100: only its open frame's time since the clear");
	ulma_live_table_free(&t);
	ulma_profile_free(&p);
}

/* ---- Python against native ---- */

enum { P, Q, N, Z, NNF };

static void setup_native(struct ulma_profile *p)
{
	ulma_profile_init(p);
	ulma_profile_add_func(p, P, ULMA_DEF_PY, "P", 1, "m.py", 4, 1);
	ulma_profile_add_func(p, Q, ULMA_DEF_PY, "Q", 1, "m.py", 4, 2);
	ulma_profile_add_func(p, N, ULMA_DEF_C, "N", 1, "~", 1, 0);
	ulma_profile_add_func(p, Z, ULMA_DEF_ZONE, "Z", 1, "m.c", 3, 3);
	ulma_profile_add_thread(p, 0, 1, 100, 100);
}

static int native_is(const struct ulma_live_table *t, uint32_t func, uint64_t calls, uint64_t total,
		     uint64_t native)
{
	const struct ulma_live_row *r = row_of(t, func);
	if (!r) {
		tap_diag("func %u has no row", func);
		return 0;
	}
	int ok = r->n.calls == calls && r->n.total_ticks == total && r->n.total_native_ticks == native;
	if (!ok)
		tap_diag("func %u: calls %llu total %llu native %llu; expected %llu %llu %llu", func,
			 (unsigned long long)r->n.calls, (unsigned long long)r->n.total_ticks,
			 (unsigned long long)r->n.total_native_ticks, (unsigned long long)calls,
			 (unsigned long long)total, (unsigned long long)native);
	return ok;
}

/* ticks:
 *   P enters 0                                  Python
 *     N 10 .. 40, a C function                  native 10-20 and 25-40: 25
 *       Q 20 .. 25, a Python callback from it   Python
 *     Z 50 .. 55, a zone under P                Python, as P
 *     N enters 60, still open                   native
 *       Z enters 70, still open, a zone under N native, as N
 * so at the last event (70) the thread's native clock is 25 + 10 = 35. */
static void feed_native(struct ulma_profile *p)
{
	ulma_profile_enter(p, 0, P, 0);
	ulma_profile_enter(p, 0, N, 10);
	ulma_profile_enter(p, 0, Q, 20);
	ulma_profile_exit(p, 0, 25);
	ulma_profile_exit(p, 0, 40);
	ulma_profile_enter(p, 0, Z, 50);
	ulma_profile_exit(p, 0, 55);
	ulma_profile_enter(p, 0, N, 60);
	ulma_profile_enter(p, 0, Z, 70);
}

static void test_native(void)
{
	struct ulma_profile p;
	struct ulma_live_table t;
	setup_native(&p);
	feed_native(&p);
	ulma_live_table_init(&t);
	if (!CHECK(ulma_live_table_update(&t, &p, 100) == 0 && t.nrows == NNF, "snapshot at 100: 4 rows"))
		return;
	/* Z, native, is on top: the 30 ticks since the thread's latest event
	 * are native too, for every open frame (native clock now 65) */
	CHECK(native_is(&t, P, 1, 100, 65), "P (open): native 25 in N, then 10 + 30 in N and Z");
	CHECK(native_is(&t, N, 2, 30 + 40, 25 + 40), "N: 25 of its closed 30, all 40 of its open frame");
	CHECK(native_is(&t, Z, 2, 5 + 30, 0 + 30), "Z: Python under P (closed), native under N (open)");
	CHECK(native_is(&t, Q, 1, 5, 0), "Q, the Python callback: none");
	CHECK(t.nprocs == 1 && t.procs[0].n.self_ticks == 100 && t.procs[0].n.native_ticks == 65,
	      "the process: 65 of its 100 ticks native");

	/* blocked since 80: the total still runs to now, and so does its native part */
	p.threads[0].off_now = 1;
	p.threads[0].off_since = 80;
	ulma_live_table_update(&t, &p, 100);
	CHECK(native_is(&t, P, 1, 100, 65) && native_is(&t, Z, 2, 35, 30), "blocked since 80: the same");
	p.threads[0].off_now = 0;

	/* Z and N return; P is on top again, and Python: nothing is counted
	 * twice between the open and the closed frames, nor after the return */
	ulma_profile_exit(&p, 0, 90);
	ulma_profile_exit(&p, 0, 95);
	ulma_live_table_update(&t, &p, 100);
	CHECK(native_is(&t, P, 1, 100, 60), "P at 100: its last 5 ticks Python");
	CHECK(native_is(&t, N, 2, 30 + 35, 25 + 35), "N returned at 95: native 25 + 35");
	CHECK(native_is(&t, Z, 2, 5 + 20, 20), "Z returned at 90: native 20");
	CHECK(t.procs[0].n.native_ticks == 60, "the process: 60 native");

	/* the clear: N called from P after it, open at a second clear, returned since */
	CHECK(ulma_live_table_clear(&t, &p, 100) == 0 && t.nrows == 0, "cleared at 100: no rows");
	ulma_profile_enter(&p, 0, N, 110);
	ulma_live_table_update(&t, &p, 120);
	CHECK(native_is(&t, N, 1, 10, 10), "N open since 110: 10 native");
	CHECK(native_is(&t, P, 0, 20, 10), "P from the clear: 20, of which N's 10");
	CHECK(row_of(&t, Z) == NULL && row_of(&t, Q) == NULL, "Z and Q: nothing since the clear");
	CHECK(t.procs[0].n.self_ticks == 20 && t.procs[0].n.native_ticks == 10, "the process: 10 of 20 native");
	CHECK(ulma_live_table_clear(&t, &p, 120) == 0, "cleared at 120, N open and on top");
	ulma_profile_exit(&p, 0, 130);
	ulma_live_table_update(&t, &p, 140);
	CHECK(native_is(&t, N, 0, 10, 10), "N counts from the clear: its last 10, native");
	CHECK(native_is(&t, P, 0, 20, 10), "P from the clear: 20, of which N's 10");
	CHECK(t.procs[0].n.self_ticks == 20 && t.procs[0].n.native_ticks == 10, "the process: 10 of 20 native");
	ulma_live_table_free(&t);
	ulma_profile_free(&p);
}

static void test_native_cost(void)
{
	/* N 10 .. 12 under P (open), at 1 tick per event: N's self 2 loses
	 * its exit's cost, 1; its total, 2 with the exit inside, loses it
	 * too; its native part is cut to the 1 left, as in the summary.  P's
	 * total 12 loses the 2 events inside it (N in and out): its native
	 * part, 2, fits.  The process's self 12 loses its 3 events: 9, of
	 * which 2 native. */
	struct ulma_profile p;
	struct ulma_live_table t;
	setup_native(&p);
	ulma_profile_enter(&p, 0, P, 0);
	ulma_profile_enter(&p, 0, N, 10);
	ulma_profile_exit(&p, 0, 12);
	ulma_live_table_init(&t);
	ulma_live_table_set_cost(&t, 1.0, 1.0);
	if (!CHECK(ulma_live_table_update(&t, &p, 12) == 0, "snapshot at 12"))
		return;
	CHECK(native_is(&t, N, 1, 1, 1), "N: total 2-1, native cut to it");
	CHECK(native_is(&t, P, 1, 10, 2), "P: total 12-2, native 2");
	CHECK(t.procs[0].n.self_ticks == 9 && t.procs[0].n.native_ticks == 2, "the process: self 12-3, native 2");
	ulma_live_table_free(&t);
	ulma_profile_free(&p);
}

/* A keeps 100 bytes, B 300 (of 400 allocated: 100 freed), C allocates and frees. */
static void test_memory(void)
{
	struct ulma_profile p;
	struct ulma_live_table t;
	setup(&p);
	ulma_profile_memory_enable(&p);
	ulma_profile_enter(&p, 0, A, 0);
	ulma_profile_mem_alloc(&p, 0, 0x1000, 100, ULMA_MEM_OBJ, 1);
	ulma_profile_enter(&p, 0, B, 2);
	ulma_profile_mem_alloc(&p, 0, 0x2000, 300, ULMA_MEM_OBJ, 3);
	ulma_profile_mem_alloc(&p, 0, 0x3000, 100, ULMA_MEM_OBJ, 4);
	ulma_profile_mem_free(&p, 0, 0x3000, 5);
	ulma_profile_exit(&p, 0, 6);
	ulma_profile_enter(&p, 0, C, 7);
	ulma_profile_mem_alloc(&p, 0, 0x4000, 50, ULMA_MEM_OBJ, 8);
	ulma_profile_mem_free(&p, 0, 0x4000, 9);
	ulma_profile_exit(&p, 0, 10);
	ulma_profile_exit(&p, 0, 11);
	ulma_live_table_init(&t);
	ulma_live_table_update(&t, &p, 20);
	ulma_live_table_sort(&t, &p, ULMA_SORT_MEM);
	CHECK(t.nrows == 3 && t.rows[0].func == B && t.rows[0].mem_bytes == 300 && t.rows[1].func == A &&
	      t.rows[1].mem_bytes == 100 && t.rows[2].func == C && t.rows[2].mem_bytes == 0, "by bytes held: B, A, C");
	CHECK(t.nprocs == 1 && t.procs[0].mem_bytes == 400 && t.procs[0].threads == 1, "the process holds 400");
	ulma_live_table_clear(&t, &p, 20);
	ulma_live_table_sort(&t, &p, ULMA_SORT_MEM);
	CHECK(t.nrows == 2 && t.rows[0].func == B && t.rows[1].func == A, "after a clear: B and A, which hold memory");
	CHECK(counts_are(&t, B, 0, 0, 0, 0, 0) && counts_are(&t, A, 0, 0, 0, 0, 0), "with no calls nor time since");
	CHECK(t.nprocs == 1 && t.procs[0].mem_bytes == 400 && t.procs[0].threads == 0 && t.procs[0].n.events == 0,
	      "the process keeps its row: 400 bytes, no thread with anything since");
	ulma_profile_mem_free(&p, 0, 0x1000, 21);
	ulma_live_table_update(&t, &p, 22);
	CHECK(t.nrows == 1 && t.rows[0].func == B && t.procs[0].mem_bytes == 300, "A freed its block: its row goes");
	ulma_live_table_free(&t);
	ulma_profile_free(&p);
}

int main(void)
{
	test_open_frames();
	test_clamped();
	test_clear();
	test_split();
	test_gil();
	test_processes();
	test_cost_taken_out();
	test_native();
	test_native_cost();
	test_memory();
	return tap_done();
}
