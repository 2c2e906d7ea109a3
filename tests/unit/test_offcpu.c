/* test_offcpu.c - switch records merged into off-CPU intervals
 * (src/monitor/offcpu.h), with the session clock in ns so times read
 * plainly: a switch-out and the next switch-in make one interval, blocked
 * or runnable; records from two CPUs' buffers are put in time order; an
 * event the thread wrote itself ends an interval whose switch-in is
 * stamped after it (clock skew), one written on its behalf does not, and
 * the end of its frames ends one in progress; a thread whose first record
 * is a switch-in was off its CPU since it was claimed; the records of a
 * thread no ring claims are kept to a bound, and forgotten at its exit;
 * GIL waits are told apart by the probe's verdict; each interval names the
 * CPU of its switch-out (where the thread ran since it last came back,
 * events or not); a claimed thread's exit is kept with its time (the
 * kernel records no switch-out after it); a process forked is known by
 * its parent until it execs. */
#include <string.h>

#include "monitor/offcpu.h"
#include "tap.h"
#include "ulma/trace_format.h"

static struct ulma_offcpu o;

static void rec(uint32_t tid, uint64_t ns, enum ulma_switch_kind kind)
{
	struct ulma_switch_record r = {ns, 1, tid, 0, (uint8_t)kind};
	ulma_offcpu_take(&o, &r);
}

/* The intervals that end by an event at ticks; returns how many, fills out. */
static int until(struct ulma_offcpu_thread *t, uint64_t ticks, enum ulma_offcpu_at at,
		 struct ulma_offcpu_interval *out, int cap)
{
	int n = 0;
	struct ulma_offcpu_interval iv;
	while (ulma_offcpu_until(t, ticks, at, &iv, &o.clock))
		if (n < cap)
			out[n++] = iv;
	return n;
}

static int is(const struct ulma_offcpu_interval *iv, uint64_t ticks, uint64_t ns, unsigned state)
{
	int ok = iv->ticks == ticks && iv->ns == ns && iv->state == state;
	if (!ok)
		tap_diag("interval at %llu for %llu ns, state %u; expected %llu, %llu, %u", (unsigned long long)iv->ticks,
			 (unsigned long long)iv->ns, iv->state, (unsigned long long)ticks, (unsigned long long)ns, state);
	return ok;
}

static void setup(void)
{
	struct ulma_clock_pair start = {0, 0};
	ulma_offcpu_init(&o, false, &start, 1000000000u);
}

static void test_intervals(void)
{
	setup();
	struct ulma_offcpu_thread *t = ulma_offcpu_claim(&o, 1, 100, 0, 0, 0);
	struct ulma_offcpu_interval iv[4];
	rec(100, 10, ULMA_SWITCH_OUT);
	rec(100, 40, ULMA_SWITCH_IN);
	rec(100, 50, ULMA_SWITCH_PREEMPT);
	rec(100, 55, ULMA_SWITCH_IN);
	CHECK(t->wake_at == 10, "the thread has work at its first record's time");
	CHECK_EQ_I64(until(t, 5, ULMA_OFFCPU_RUNNING, iv, 4), 0, "an event at 5: nothing yet");
	int n = until(t, 60, ULMA_OFFCPU_RUNNING, iv, 4);
	CHECK(n == 2 && is(&iv[0], 10, 30, ULMA_OFF_BLOCKED) && is(&iv[1], 50, 5, ULMA_OFF_RUNNABLE),
	      "by an event at 60: blocked [10,40) and runnable [50,55)");
	CHECK(t->wake_at == UINT64_MAX && !t->off, "nothing left");
	ulma_offcpu_free(&o);
}

static void test_order_and_causality(void)
{
	setup();
	struct ulma_offcpu_thread *t = ulma_offcpu_claim(&o, 1, 100, 0, 0, 0);
	struct ulma_offcpu_interval iv[4];
	/* CPU 1's buffer is read before CPU 0's: the switch-in comes first */
	rec(100, 120, ULMA_SWITCH_IN);
	rec(100, 100, ULMA_SWITCH_OUT);
	CHECK(t->len == 2 && t->q[t->head].ns == 100, "queued in time order");
	/* the switch-in is stamped 120, but the thread wrote an event at 115:
	 * it was on its CPU by then */
	int n = until(t, 115, ULMA_OFFCPU_RUNNING, iv, 4);
	CHECK(n == 1 && iv[0].ticks == 100 && iv[0].state == ULMA_OFF_BLOCKED, "an event of its own ends the interval");
	/* off again; a record written on its behalf (its STOP, its open
	 * frames) at 210 says nothing; the end of its frames at 250 ends it */
	rec(100, 200, ULMA_SWITCH_OUT);
	CHECK_EQ_I64(until(t, 210, ULMA_OFFCPU_SAYS_NOTHING, iv, 4), 0, "a record written for it: still off");
	CHECK(t->off, "off since 200");
	n = until(t, 250, ULMA_OFFCPU_ENDS, iv, 4);
	CHECK(n == 1 && is(&iv[0], 200, 50, ULMA_OFF_BLOCKED), "its frames' end at 250 ends the interval");
	ulma_offcpu_free(&o);
}

static void test_first_record_is_a_switch_in(void)
{
	setup();
	struct ulma_offcpu_interval iv[2];
	/* records before any ring claims the thread (attaching to a running
	 * program): it slept since before they began, and woke at 300 */
	rec(7, 300, ULMA_SWITCH_IN);
	struct ulma_offcpu_thread *t = ulma_offcpu_claim(&o, 1, 7, 0, 0, 100);
	CHECK(t->off && t->off_ticks == 100, "off its CPU since the claim at 100");
	int n = until(t, 310, ULMA_OFFCPU_RUNNING, iv, 2);
	CHECK(n == 1 && is(&iv[0], 100, 200, ULMA_OFF_BLOCKED), "blocked [100, 300)");
	ulma_offcpu_free(&o);
}

static void test_unclaimed_threads(void)
{
	setup();
	for (int i = 0; i < 500; i++) /* a thread of a program with no ring: gcc, a shell */
		rec(9, 1000 + 10 * (uint64_t)i, i & 1 ? ULMA_SWITCH_IN : ULMA_SWITCH_OUT);
	uint32_t k;
	CHECK(ulma_idmap_get(&o.by_tid, 9, &k) && k && o.threads[k - 1]->len <= 64, "its records are kept to 64");
	rec(9, 9000, ULMA_SWITCH_EXIT);
	CHECK(!ulma_idmap_get(&o.by_tid, 9, &k) || k == 0, "forgotten when it exits");
	ulma_offcpu_free(&o);
}

static void test_gil_probe(void)
{
	setup();
	struct ulma_offcpu_thread *t = ulma_offcpu_claim(&o, 1, 100, 0, 0, 0);
	struct ulma_offcpu_interval iv[2];
	rec(100, 10, ULMA_SWITCH_OUT);
	t->q[t->head].probe = ULMA_BLOCK_GIL; /* what a probe of /proc/.../syscall found while it lasted */
	rec(100, 20, ULMA_SWITCH_IN);
	int n = until(t, 25, ULMA_OFFCPU_RUNNING, iv, 2);
	CHECK(n == 1 && is(&iv[0], 10, 10, ULMA_OFF_GIL), "a wait seen on the GIL is a GIL wait");
	rec(100, 30, ULMA_SWITCH_PREEMPT);
	rec(100, 31, ULMA_SWITCH_IN);
	n = until(t, 35, ULMA_OFFCPU_RUNNING, iv, 2);
	CHECK(n == 1 && is(&iv[0], 30, 1, ULMA_OFF_RUNNABLE), "a preemption is runnable, never the GIL");
	ulma_offcpu_free(&o);
}

static void on_cpu(uint32_t tid, uint64_t ns, enum ulma_switch_kind kind, uint32_t cpu)
{
	struct ulma_switch_record r = {ns, 1, tid, cpu, (uint8_t)kind};
	ulma_offcpu_take(&o, &r);
}

static void test_cpus_and_exit(void)
{
	setup();
	struct ulma_offcpu_thread *t = ulma_offcpu_claim(&o, 1, 100, 0, 0, 0);
	struct ulma_offcpu_interval iv[3];
	/* it runs on CPU 0, sleeps, wakes on CPU 1 and sleeps again without an
	 * event there (a GIL waiter's timed wake-up), then wakes on CPU 0 */
	on_cpu(100, 10, ULMA_SWITCH_OUT, 0);
	on_cpu(100, 20, ULMA_SWITCH_IN, 1);
	on_cpu(100, 25, ULMA_SWITCH_OUT, 1);
	on_cpu(100, 40, ULMA_SWITCH_IN, 0);
	int n = until(t, 45, ULMA_OFFCPU_RUNNING, iv, 3);
	CHECK(n == 2 && is(&iv[0], 10, 10, ULMA_OFF_BLOCKED) && iv[0].cpu == 0 && is(&iv[1], 25, 15, ULMA_OFF_BLOCKED) &&
		      iv[1].cpu == 1,
	      "each interval on the CPU it left: 0, then 1 (%u, %u)", n > 0 ? iv[0].cpu : 99, n > 1 ? iv[1].cpu : 99);
	on_cpu(100, 90, ULMA_SWITCH_EXIT, 0);
	CHECK(t->exited && t->exit_ticks == 90, "its exit at 90, kept while claimed");
	ulma_offcpu_release(&o, t);
	uint32_t k;
	CHECK(!ulma_idmap_get(&o.by_tid, 100, &k) || k == 0, "forgotten once released");
	ulma_offcpu_free(&o);
}

int main(void)
{
	test_cpus_and_exit();
	test_intervals();
	test_order_and_causality();
	test_first_record_is_a_switch_in();
	test_unclaimed_threads();
	test_gil_probe();
	return tap_done();
}
