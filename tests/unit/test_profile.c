/* test_profile.c - per-function aggregation (src/analysis/profile.h): self,
 * total and calls on a hand-built nested stream; recursion counted once in
 * total; finish closing open frames; lost counts; the self-time
 * conservation law (a thread always inside a frame has self ticks summing
 * to its wall span) on a long pseudo-random stream; sorting; the cursor's
 * batches against the event-by-event calls. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/profile.h"
#include "tap.h"
#include "ulma/shm.h"

static void add_funcs(struct ulma_profile *p, int n)
{
	static const char *const names[] = {"A", "B", "C", "D", "E", "F", "G", "H"};
	for (int i = 0; i < n; i++)
		ulma_profile_add_func(p, (uint32_t)i, ULMA_DEF_PY, names[i], 1, "m.py", 4, (uint32_t)(10 * i));
}

static int row_is(const struct ulma_profile *p, uint32_t f, uint64_t calls, uint64_t total, uint64_t self)
{
	const struct ulma_func_row *r = &p->funcs[f];
	int ok = r->calls == calls && r->total_ticks == total && r->self_ticks == self;
	if (!ok)
		tap_diag("func %u (%s): calls %llu total %llu self %llu; expected %llu %llu %llu", f, r->name,
			 (unsigned long long)r->calls, (unsigned long long)r->total_ticks,
			 (unsigned long long)r->self_ticks, (unsigned long long)calls, (unsigned long long)total,
			 (unsigned long long)self);
	return ok;
}

static void test_nested(void)
{
	struct ulma_profile p;
	ulma_profile_init(&p);
	add_funcs(&p, 3);
	CHECK(p.nfuncs == 3 && strcmp(p.funcs[1].name, "B") == 0 && strcmp(p.funcs[1].file, "m.py") == 0 &&
		      p.funcs[2].line == 20 && p.funcs[0].kind == ULMA_DEF_PY,
	      "functions stored with name, file, line, kind");
	ulma_profile_add_thread(&p, 0, 5, 100, 101);
	CHECK(p.nthreads == 1 && p.threads[0].serial == 5 && p.threads[0].pid == 100 && p.threads[0].tid == 101,
	      "thread stored");

	/* A [0,100): B [10,50): C [20,35); then C [60,70) */
	ulma_profile_enter(&p, 0, 0, 0);
	ulma_profile_enter(&p, 0, 1, 10);
	ulma_profile_enter(&p, 0, 2, 20);
	ulma_profile_exit(&p, 0, 35);
	ulma_profile_exit(&p, 0, 50);
	ulma_profile_enter(&p, 0, 2, 60);
	ulma_profile_exit(&p, 0, 70);
	ulma_profile_exit(&p, 0, 100);
	CHECK(row_is(&p, 0, 1, 100, 50), "A: 1 call, total 100, self 50");
	CHECK(row_is(&p, 1, 1, 40, 25), "B: 1 call, total 40, self 25");
	CHECK(row_is(&p, 2, 2, 25, 25), "C: 2 calls, total 25, self 25");
	const struct ulma_thread_row *t = &p.threads[0];
	CHECK(t->depth == 0 && t->events == 8 && t->first_ticks == 0 && t->last_ticks == 100 && t->self_ticks == 100,
	      "thread: stack empty, 8 events, span [0,100], self 100");
	uint64_t first, last;
	ulma_profile_span(&p, &first, &last);
	CHECK(ulma_profile_events(&p) == 8 && first == 0 && last == 100, "profile: 8 events over [0,100]");
	/* the hook's events: A has its exit and B's and C's entries; B its exit and C's entry */
	CHECK(p.funcs[0].self_events == 3 && p.funcs[1].self_events == 2 && p.funcs[2].self_events == 2,
	      "events charged to self: each frame's exit and its children's entries");
	CHECK(p.funcs[0].total_events == 7 && p.funcs[1].total_events == 3 && p.funcs[2].total_events == 2,
	      "events inside each total, and the frame's exit");

	/* an exit with no open frame is ignored */
	ulma_profile_exit(&p, 0, 200);
	ulma_profile_span(&p, &first, &last);
	CHECK(ulma_profile_events(&p) == 8 && last == 100 && row_is(&p, 0, 1, 100, 50), "stray exit changes nothing");

	uint64_t self[3] = {p.funcs[0].self_ticks, p.funcs[1].self_ticks, p.funcs[2].self_ticks};
	uint32_t *order = ulma_profile_sorted_by_key(&p, self);
	/* self: A 50, B 25, C 25 (C has more calls, so before B) */
	CHECK(order && order[0] == 0 && order[1] == 2 && order[2] == 1,
	      "sorted by self, ties broken by calls: A, C, B");
	free(order);
	ulma_profile_free(&p);
	CHECK(p.funcs == NULL && p.threads == NULL && p.nfuncs == 0, "free resets the profile");
}

static void test_recursion(void)
{
	struct ulma_profile p;
	ulma_profile_init(&p);
	add_funcs(&p, 2);
	ulma_profile_add_thread(&p, 0, 0, 1, 1);
	/* A [0,50): A [10,40): A [20,30) */
	ulma_profile_enter(&p, 0, 0, 0);
	ulma_profile_enter(&p, 0, 0, 10);
	ulma_profile_enter(&p, 0, 0, 20);
	ulma_profile_exit(&p, 0, 30);
	ulma_profile_exit(&p, 0, 40);
	ulma_profile_exit(&p, 0, 50);
	CHECK(row_is(&p, 0, 3, 50, 50), "A->A->A: 3 calls, total 50 (outermost only), self 50");

	/* mutual recursion A [100,200): B [110,190): A [120,180): B [130,170) */
	ulma_profile_enter(&p, 0, 0, 100);
	ulma_profile_enter(&p, 0, 1, 110);
	ulma_profile_enter(&p, 0, 0, 120);
	ulma_profile_enter(&p, 0, 1, 130);
	ulma_profile_exit(&p, 0, 170);
	ulma_profile_exit(&p, 0, 180);
	ulma_profile_exit(&p, 0, 190);
	ulma_profile_exit(&p, 0, 200);
	/* A: self [100,110)+[190,200) + [120,130)+[170,180) = 40; B: [110,120)+[180,190) + 40 = 60 */
	CHECK(row_is(&p, 0, 5, 150, 90), "A after mutual recursion: 5 calls, total 50+100, self 50+40");
	CHECK(row_is(&p, 1, 2, 80, 60), "B in mutual recursion: 2 calls, total 80 (outermost), self 60");

	/* recursion on two threads at once: each thread's outermost frame counts */
	ulma_profile_add_thread(&p, 1, 1, 1, 2);
	ulma_profile_enter(&p, 0, 1, 300);
	ulma_profile_enter(&p, 1, 1, 305);
	ulma_profile_enter(&p, 0, 1, 310);
	ulma_profile_enter(&p, 1, 1, 315);
	ulma_profile_exit(&p, 0, 320);
	ulma_profile_exit(&p, 1, 325);
	ulma_profile_exit(&p, 0, 330);
	ulma_profile_exit(&p, 1, 335);
	CHECK(row_is(&p, 1, 6, 80 + 30 + 30, 60 + 60), "B recursing on two threads: total counts each thread's outermost frame");
	ulma_profile_free(&p);
}

static void test_finish(void)
{
	struct ulma_profile p;
	ulma_profile_init(&p);
	add_funcs(&p, 2);
	ulma_profile_add_thread(&p, 0, 0, 1, 1);
	ulma_profile_add_thread(&p, 1, 1, 1, 2);
	ulma_profile_add_thread(&p, 2, 2, 1, 3); /* never sees an event */
	/* thread 0: A [0, open): B [10, open) */
	ulma_profile_enter(&p, 0, 0, 0);
	ulma_profile_enter(&p, 0, 1, 10);
	/* thread 1: A [50, open), last event at 150 (> finish time) */
	ulma_profile_enter(&p, 1, 0, 50);
	ulma_profile_lost(&p, 1, 150, 7);
	ulma_profile_finish(&p, 100);
	/* thread 0 closes at 100: B 90, A total 100 self 10.  Thread 1 closes
	 * at its last event 150: A total 100 self 100. */
	CHECK(row_is(&p, 1, 1, 90, 90), "finish closes B at 100: total 90, self 90");
	CHECK(row_is(&p, 0, 2, 200, 110), "finish closes both A frames (one at 100, one at its thread's last event 150)");
	CHECK(p.threads[0].depth == 0 && p.threads[1].depth == 0, "no frame left open");
	CHECK(p.threads[0].last_ticks == 100 && p.threads[1].last_ticks == 150, "threads end at 100 and 150");
	CHECK(p.threads[0].self_ticks == 100 && p.threads[1].self_ticks == 100, "thread self sums equal their spans");
	CHECK(p.threads[1].lost == 7 && p.lost == 7 && p.threads[0].lost == 0, "lost counted per thread and in total");
	CHECK(p.threads[2].seen == 0 && p.threads[2].events == 0 && p.threads[2].self_ticks == 0,
	      "an idle thread stays empty");
	uint64_t first, last;
	ulma_profile_span(&p, &first, &last);
	CHECK(last == 150 && first == 0, "profile spans [0, 150]");
	/* finish is idempotent */
	ulma_profile_finish(&p, 500);
	CHECK(row_is(&p, 0, 2, 200, 110) && p.threads[0].last_ticks == 100, "a second finish changes nothing");
	ulma_profile_free(&p);
}

/* xorshift64*: deterministic pseudo-random stream */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

static void test_conservation(void)
{
	enum { NT = 3, NF = 8, STEPS = 200000 };
	struct ulma_profile p;
	uint64_t seed = 0x9E3779B97F4A7C15u;
	uint64_t now[NT], start[NT], calls[NF] = {0};
	uint32_t depth[NT] = {0};
	ulma_profile_init(&p);
	add_funcs(&p, NF);
	for (int t = 0; t < NT; t++) {
		ulma_profile_add_thread(&p, (uint32_t)t, (uint64_t)t, 1, (uint32_t)t);
		start[t] = now[t] = 1000 * (uint64_t)(t + 1);
		/* each thread always stays inside its root frame */
		ulma_profile_enter(&p, (uint32_t)t, 0, now[t]);
		calls[0]++;
		depth[t] = 1;
	}
	for (int i = 0; i < STEPS; i++) {
		uint64_t r = rng_next(&seed);
		uint32_t t = (uint32_t)(r % NT);
		now[t] += (r >> 8) % 50; /* zero deltas included */
		bool go_in = depth[t] == 1 || ((r >> 20) % 100 < 50 && depth[t] < 40);
		if (go_in) {
			uint32_t f = (uint32_t)((r >> 32) % NF);
			ulma_profile_enter(&p, t, f, now[t]);
			calls[f]++;
			depth[t]++;
		} else {
			ulma_profile_exit(&p, t, now[t]);
			depth[t]--;
		}
	}
	/* leave some frames open; finish closes them at each thread's clock */
	uint64_t end = 0;
	for (int t = 0; t < NT; t++) {
		now[t] += 13;
		ulma_profile_lost(&p, (uint32_t)t, now[t], 1);
		if (now[t] > end)
			end = now[t];
	}
	ulma_profile_finish(&p, 0); /* 0: every thread closes at its own last event */
	int ok = 1;
	uint64_t self_sum = 0, span_sum = 0, call_bad = 0, total_bad = 0;
	for (int t = 0; t < NT; t++) {
		const struct ulma_thread_row *tr = &p.threads[t];
		if (tr->self_ticks != now[t] - start[t] || tr->depth != 0 || tr->first_ticks != start[t] ||
		    tr->last_ticks != now[t]) {
			ok = 0;
			tap_diag("thread %d: self %llu span %llu", t, (unsigned long long)tr->self_ticks,
				 (unsigned long long)(now[t] - start[t]));
		}
		span_sum += now[t] - start[t];
	}
	for (int f = 0; f < NF; f++) {
		self_sum += p.funcs[f].self_ticks;
		if (p.funcs[f].calls != calls[f])
			call_bad++;
		if (p.funcs[f].total_ticks < p.funcs[f].self_ticks)
			total_bad++;
	}
	CHECK(ok, "each thread's self ticks equal its wall span (%d threads, %d steps)", NT, STEPS);
	CHECK_EQ_U64(self_sum, span_sum, "sum of self over functions equals the sum of thread spans");
	CHECK_EQ_U64(call_bad, 0, "calls per function equal the enters fed");
	CHECK_EQ_U64(total_bad, 0, "total >= self for every function");
	/* the root function A's total is exactly the sum of the spans: every
	 * thread's outermost frame is an A that lasts the whole span */
	CHECK_EQ_U64(p.funcs[0].total_ticks, span_sum, "root function total equals the summed spans");
	uint64_t first, last;
	ulma_profile_span(&p, &first, &last);
	CHECK(last == end && p.lost == NT, "profile end and lost totals");
	ulma_profile_free(&p);
}

/* Time off the CPU is charged to the frame on top, whole; totals take the
 * growth of the thread's off-CPU clocks over each outermost frame. */
static void test_off_cpu(void)
{
	struct ulma_profile p;
	ulma_profile_init(&p);
	add_funcs(&p, 3);
	ulma_profile_add_thread(&p, 0, 0, 1, 1);
	/* A [0,100): B [10,60) blocked 30 (of which GIL 10) inside; then A preempted 5; C [70,80) */
	ulma_profile_enter(&p, 0, 0, 0);
	ulma_profile_enter(&p, 0, 1, 10);
	ulma_profile_off(&p, 0, 30, 0, 10, 1, 0);
	ulma_profile_exit(&p, 0, 60);
	ulma_profile_off(&p, 0, 0, 5, 0, 0, 1);
	ulma_profile_enter(&p, 0, 2, 70);
	ulma_profile_exit(&p, 0, 80);
	ulma_profile_exit(&p, 0, 100);
	const struct ulma_func_row *a = &p.funcs[0], *b = &p.funcs[1], *c = &p.funcs[2];
	CHECK(b->self_blocked_ns == 30 && b->self_gil_ns == 10 && b->self_runnable_ns == 0 && b->voluntary == 1 &&
		      b->involuntary == 0,
	      "B: its blocked time and the GIL's part of it, one voluntary switch");
	CHECK(a->self_blocked_ns == 0 && a->self_runnable_ns == 5 && a->involuntary == 1 && a->voluntary == 0,
	      "A: the preemption while it was on top");
	CHECK(a->total_blocked_ns == 30 && a->total_runnable_ns == 5 && a->total_gil_ns == 10 &&
		      a->total_voluntary == 1 && a->total_involuntary == 1,
	      "A's total holds everything under it");
	CHECK(b->total_blocked_ns == 30 && c->total_blocked_ns == 0 && c->total_runnable_ns == 0,
	      "C, entered after the intervals, has none");
	const struct ulma_thread_row *t = &p.threads[0];
	CHECK(t->now.blocked_ns == 30 && t->now.runnable_ns == 5 && t->self_blocked_ns == 30 &&
		      t->self_runnable_ns == 5 && t->now.voluntary == 1 && t->now.involuntary == 1,
	      "the thread's clocks and its frames' sums");
	/* off the CPU outside any frame: the thread's, no function's */
	ulma_profile_off(&p, 0, 7, 0, 0, 1, 0);
	CHECK(t->now.blocked_ns == 37 && t->self_blocked_ns == 30 && a->self_blocked_ns == 0,
	      "an interval between frames counts for the thread only");
	ulma_profile_free(&p);
}

/* The cursor (ulma_profile_cursor_*: a batch's loop with the thread in
 * locals) gives the figures of ulma_profile_enter and ulma_profile_exit
 * event by event: on a long random stream of two threads over Python, C
 * and zone functions, with recursion, times that go back, exits with no
 * frame open, stacks growing past their room, and time off the CPU
 * between the batches (the frames' clocks at entry); and leaf calls taken
 * without a frame (ulma_profile_cursor_call and _leaf: the monitor's and
 * the reader's step). */
static uint64_t rng_state = 0x2545f4914f6cdd1du;
static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1du) >> 33) % n;
}

static void test_cursor_same(void)
{
	struct ulma_profile a, b;
	static const uint8_t kinds[] = {ULMA_DEF_PY, ULMA_DEF_PY, ULMA_DEF_C, ULMA_DEF_ZONE, ULMA_DEF_PY, ULMA_DEF_NATIVE};
	ulma_profile_init(&a);
	ulma_profile_init(&b);
	for (uint32_t f = 0; f < 6; f++) {
		ulma_profile_add_func(&a, f, kinds[f], "f", 1, "m.py", 4, f);
		ulma_profile_add_func(&b, f, kinds[f], "f", 1, "m.py", 4, f);
	}
	for (uint32_t t = 0; t < 2; t++) {
		ulma_profile_add_thread(&a, t, t, 1, 1 + t);
		ulma_profile_add_thread(&b, t, t, 1, 1 + t);
	}
	uint64_t now[2] = {100, 100};
	uint32_t depth[2] = {0, 0};
	uint64_t leaves = 0;
	int err = 0;
	for (int batch = 0; batch < 400 && !err; batch++) {
		uint32_t t = rnd(2), n = 1 + rnd(300);
		struct ulma_profile_cursor c;
		ulma_profile_cursor_load(&b, t, &c);
		for (uint32_t i = 0; i < n && !err; i++) {
			now[t] = now[t] + rnd(20) - (rnd(8) == 0 ? 12 : 0); /* now and then back */
			bool enter = depth[t] == 0 ? rnd(8) != 0 : depth[t] < 200 && rnd(2);
			if (enter && rnd(3) == 0) { /* a leaf call: the monitor's step with no frame */
				uint32_t f = rnd(6);
				uint64_t at = now[t];
				now[t] = now[t] + rnd(20) - (rnd(8) == 0 ? 12 : 0);
				err = ulma_profile_enter(&a, t, f, at);
				ulma_profile_exit(&a, t, now[t]);
				leaves += c.fast && c.depth < c.cap && f < c.nactive; /* its leaf step */
				err = err || ulma_profile_cursor_call(&b, t, &c, f, at, now[t]);
			} else if (enter) {
				uint32_t f = rnd(6);
				err = ulma_profile_enter(&a, t, f, now[t]) || ulma_profile_cursor_enter(&b, t, &c, f, now[t]);
				depth[t]++;
			} else { /* at depth 0 an exit with no frame, ignored */
				ulma_profile_exit(&a, t, now[t]);
				ulma_profile_cursor_exit(&b, t, &c, now[t]);
				depth[t] -= depth[t] > 0;
			}
		}
		ulma_profile_cursor_store(&c);
		if (rnd(3) == 0) { /* off the CPU before the thread's next event */
			uint64_t blocked = rnd(50), runnable = rnd(50), gil = rnd(2) ? blocked / 2 : 0;
			uint32_t voluntary = rnd(2), involuntary = rnd(2);
			ulma_profile_off(&a, t, blocked, runnable, gil, voluntary, involuntary);
			ulma_profile_off(&b, t, blocked, runnable, gil, voluntary, involuntary);
		}
	}
	ulma_profile_finish(&a, now[0] > now[1] ? now[0] : now[1]);
	ulma_profile_finish(&b, now[0] > now[1] ? now[0] : now[1]);
	uint32_t differ = 0;
	uint64_t calls = 0, total_off = 0;
	for (uint32_t f = 0; f < 6; f++) {
		const struct ulma_func_row *x = &a.funcs[f], *y = &b.funcs[f];
		calls += x->calls;
		total_off += x->total_blocked_ns;
		if (x->calls != y->calls || x->self_ticks != y->self_ticks || x->self_events != y->self_events ||
		    x->total_ticks != y->total_ticks || x->total_events != y->total_events ||
		    x->total_native_ticks != y->total_native_ticks || x->self_blocked_ns != y->self_blocked_ns ||
		    x->self_runnable_ns != y->self_runnable_ns || x->self_gil_ns != y->self_gil_ns ||
		    x->total_blocked_ns != y->total_blocked_ns || x->total_runnable_ns != y->total_runnable_ns ||
		    x->total_gil_ns != y->total_gil_ns || x->voluntary != y->voluntary || x->involuntary != y->involuntary ||
		    x->total_voluntary != y->total_voluntary || x->total_involuntary != y->total_involuntary) {
			differ++;
			tap_diag("function %u: calls %llu/%llu self %llu/%llu total %llu/%llu native %llu/%llu blocked %llu/%llu", f,
				 (unsigned long long)x->calls, (unsigned long long)y->calls, (unsigned long long)x->self_ticks,
				 (unsigned long long)y->self_ticks, (unsigned long long)x->total_ticks,
				 (unsigned long long)y->total_ticks, (unsigned long long)x->total_native_ticks,
				 (unsigned long long)y->total_native_ticks, (unsigned long long)x->total_blocked_ns,
				 (unsigned long long)y->total_blocked_ns);
		}
	}
	for (uint32_t t = 0; t < 2; t++) {
		const struct ulma_thread_row *x = &a.threads[t], *y = &b.threads[t];
		differ += x->events != y->events || x->self_ticks != y->self_ticks || x->native_ticks != y->native_ticks ||
			  x->last_ticks != y->last_ticks || x->first_ticks != y->first_ticks || x->depth != y->depth ||
			  x->self_blocked_ns != y->self_blocked_ns;
	}
	CHECK(err == 0 && differ == 0 && calls > 10000 && total_off > 0 && leaves > 1000,
	      "the cursor's figures are enter's and exit's: %llu calls (%llu leaves without a frame), %u rows differ",
	      (unsigned long long)calls, (unsigned long long)leaves, differ);
	ulma_profile_free(&a);
	ulma_profile_free(&b);
}

int main(void)
{
	test_cursor_same();
	test_nested();
	test_recursion();
	test_finish();
	test_conservation();
	test_off_cpu();
	return tap_done();
}
