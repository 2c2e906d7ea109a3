/* live_table.c - snapshots of the profile for the live view (see live_table.h). */
#include "live_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/overhead.h"
#include "../analysis/profile_memory.h"
#include "../core/clock.h"

void ulma_live_table_init(struct ulma_live_table *t)
{
	memset(t, 0, sizeof(*t));
	t->ns_per_tick = 1.0;
}

void ulma_live_table_set_clock(struct ulma_live_table *t, double ns_per_tick)
{
	t->ns_per_tick = ns_per_tick > 0 ? ns_per_tick : 1.0;
}

void ulma_live_table_free(struct ulma_live_table *t)
{
	free(t->base);
	free(t->cur);
	free(t->stamp);
	free(t->rows);
	free(t->thread_base);
	free(t->thread_cur);
	free(t->procs);
	memset(t, 0, sizeof(*t));
}

/* Resize the array at *array to cap elements of size bytes; on failure
 * it is left as it was. */
static int grow(void *array, uint32_t cap, size_t size)
{
	void *p = realloc(*(void **)array, (size_t)cap * size);
	if (!p)
		return -ENOMEM;
	*(void **)array = p;
	return 0;
}

/* Room for this many elements, doubling from `first`. */
static uint32_t capacity_for(uint32_t n, uint32_t cap, uint32_t first)
{
	cap = cap ? cap : first;
	while (cap < n)
		cap *= 2;
	return cap;
}

static int reserve(struct ulma_live_table *t, uint32_t nfuncs)
{
	if (nfuncs <= t->cap)
		return 0;
	uint32_t cap = capacity_for(nfuncs, t->cap, 256);
	if (grow(&t->cur, cap, sizeof(*t->cur)) || grow(&t->stamp, cap, sizeof(*t->stamp)) ||
	    grow(&t->rows, cap, sizeof(*t->rows)))
		return -ENOMEM;
	memset(t->stamp + t->cap, 0, (cap - t->cap) * sizeof(*t->stamp));
	t->cap = t->cap_rows = cap;
	return 0;
}

static int reserve_threads(struct ulma_live_table *t, uint32_t nthreads)
{
	if (nthreads <= t->cap_threads)
		return 0;
	uint32_t cap = capacity_for(nthreads, t->cap_threads, 64);
	if (grow(&t->thread_cur, cap, sizeof(*t->thread_cur)) || grow(&t->procs, cap, sizeof(*t->procs)))
		return -ENOMEM;
	t->cap_threads = cap;
	return 0;
}

/* Fresh mark for "this function has an open frame lower in this stack". */
static uint32_t next_generation(struct ulma_live_table *t)
{
	if (++t->generation == 0) {
		memset(t->stamp, 0, t->cap * sizeof(*t->stamp));
		t->generation = 1;
	}
	return t->generation;
}

static uint64_t minus(uint64_t a, uint64_t b)
{
	/* never negative: a frame open at the clear may return with an earlier
	 * time than the clock read then (its record was still in the ring) */
	return a > b ? a - b : 0;
}

static uint64_t to_ns(const struct ulma_live_table *t, uint64_t ticks)
{
	return ulma_u64_from_double((double)ticks * t->ns_per_tick + 0.5);
}

/* The on-CPU part of a self time, the rest being off a CPU. */
static uint64_t on_cpu(const struct ulma_live_table *t, uint64_t self_ticks, uint64_t blocked_ns, uint64_t runnable_ns)
{
	return minus(to_ns(t, self_ticks), blocked_ns + runnable_ns);
}

/* cur = the profile's completed frames plus its open frames up to now.
 * The profile charges self time at every event, so an open frame lacks
 * only the time since its thread's last event, and its total.  If the
 * switch records say the thread is off its CPU since off_since, the top
 * frame gets the time up to then: which function was on top when it left
 * is known only once its last events are published (they go in batches),
 * so the interval itself counts for the thread until it is merged. */
static void measure(struct ulma_live_table *t, const struct ulma_profile *p, uint64_t now)
{
	for (uint32_t f = 0; f < p->nfuncs; f++) {
		const struct ulma_func_row *r = &p->funcs[f];
		t->cur[f] = (struct ulma_live_counts){r->calls,
						      r->total_ticks,
						      r->self_ticks,
						      on_cpu(t, r->self_ticks, r->self_blocked_ns, r->self_runnable_ns),
						      r->self_runnable_ns,
						      r->self_gil_ns,
						      r->self_events,
						      r->total_events,
						      r->total_native_ticks};
	}
	for (uint32_t i = 0; i < p->nthreads; i++) {
		const struct ulma_thread_row *th = &p->threads[i];
		struct ulma_live_thread_counts *tc = &t->thread_cur[i];
		*tc = (struct ulma_live_thread_counts){
			th->events, th->lost, th->self_ticks,
			on_cpu(t, th->self_ticks, th->self_blocked_ns, th->self_runnable_ns), th->self_runnable_ns,
			th->self_gil_ns, th->native_ticks};
		if (th->depth == 0)
			continue;
		uint64_t end = now > th->last_ticks ? now : th->last_ticks, until = end;
		if (th->off_now && th->off_since < end)
			until = th->off_since > th->last_ticks ? th->off_since : th->last_ticks;
		uint64_t on = until - th->last_ticks, off = end - until;
		struct ulma_live_counts *top = &t->cur[th->stack[th->depth - 1].func];
		top->self_ticks += on;
		top->self_cpu_ns += to_ns(t, on);
		tc->self_ticks += on + off;
		tc->self_cpu_ns += to_ns(t, on);
		if (th->off_now == 2)
			tc->self_wait_ns += to_ns(t, off);
		/* the native clock as the next event will have it: the time up to
		 * then goes to the top frame, off its CPU or not */
		uint64_t native = th->native_ticks + ((end - th->last_ticks) & th->top_native);
		tc->native_ticks = native;
		uint32_t gen = next_generation(t);
		for (uint32_t d = 0; d < th->depth; d++) {
			const struct ulma_frame *fr = &th->stack[d];
			if (t->stamp[fr->func] == gen)
				continue;
			t->stamp[fr->func] = gen; /* outermost frame of this function */
			struct ulma_live_counts *c = &t->cur[fr->func];
			c->total_ticks += minus(end, fr->start);
			c->total_events += th->events - fr->events0;
			c->total_native_ticks += minus(native, fr->native0);
		}
	}
}

static void thread_minus(struct ulma_live_thread_counts *a, const struct ulma_live_thread_counts *b)
{
	a->events = minus(a->events, b->events);
	a->lost = minus(a->lost, b->lost);
	a->self_ticks = minus(a->self_ticks, b->self_ticks);
	a->self_cpu_ns = minus(a->self_cpu_ns, b->self_cpu_ns);
	a->self_wait_ns = minus(a->self_wait_ns, b->self_wait_ns);
	a->self_gil_ns = minus(a->self_gil_ns, b->self_gil_ns);
	a->native_ticks = minus(a->native_ticks, b->native_ticks);
}

/* A self time less `events` events' cost (never below 0); the ns removed
 * come out of *cpu_ns, which the cost was spent on. */
static uint64_t self_less_cost(const struct ulma_live_table *t, uint64_t self_ticks, uint64_t events,
			       uint64_t *cpu_ns)
{
	uint64_t self = minus(self_ticks, ulma_overhead_cost(events, t->cost_ticks));
	*cpu_ns = minus(*cpu_ns, ulma_u64_from_double((double)(self_ticks - self) * t->cost_ns / t->cost_ticks + 0.5));
	return self;
}

/* The bytes process pid's blocks hold now (0 without --memory). */
static uint64_t process_memory(const struct ulma_profile *p, uint32_t pid)
{
	const struct ulma_profile_memory *m = p->memory;
	for (uint32_t i = 0; m && i < m->nprocs; i++)
		if (m->procs[i].pid == pid)
			return m->procs[i].live_bytes;
	return 0;
}

/* Sum the threads (less their baselines) into one row per process; a
 * process that holds memory has a row even with nothing since the clear. */
static void total_processes(struct ulma_live_table *t, const struct ulma_profile *p)
{
	t->nprocs = 0;
	for (uint32_t i = 0; i < p->nthreads; i++) {
		const struct ulma_thread_row *th = &p->threads[i];
		struct ulma_live_thread_counts n = t->thread_cur[i];
		if (i < t->nthread_base)
			thread_minus(&n, &t->thread_base[i]);
		bool quiet = n.events == 0 && n.lost == 0 && n.self_ticks == 0;
		if (quiet && !process_memory(p, th->pid))
			continue;
		if (t->cost_ticks > 0) /* every event's cost is in some frame's self time */
			n.self_ticks = self_less_cost(t, n.self_ticks, n.events, &n.self_cpu_ns);
		if (n.native_ticks > n.self_ticks)
			n.native_ticks = n.self_ticks;
		uint32_t k = 0;
		while (k < t->nprocs && t->procs[k].pid != th->pid)
			k++;
		struct ulma_live_proc *pr = &t->procs[k];
		uint64_t first = th->first_ticks > t->clear_ticks ? th->first_ticks : t->clear_ticks;
		if (k == t->nprocs) {
			t->nprocs++;
			*pr = (struct ulma_live_proc){.pid = th->pid, .first_ticks = first, .last_ticks = th->last_ticks,
						      .mem_bytes = process_memory(p, th->pid)};
		}
		if (quiet)
			continue;
		pr->threads++;
		pr->n.events += n.events;
		pr->n.lost += n.lost;
		pr->n.self_ticks += n.self_ticks;
		pr->n.self_cpu_ns += n.self_cpu_ns;
		pr->n.self_wait_ns += n.self_wait_ns;
		pr->n.self_gil_ns += n.self_gil_ns;
		pr->n.native_ticks += n.native_ticks;
		if (first < pr->first_ticks)
			pr->first_ticks = first;
		if (th->last_ticks > pr->last_ticks)
			pr->last_ticks = th->last_ticks;
	}
}

void ulma_live_table_set_cost(struct ulma_live_table *t, double ticks_per_event, double ns_per_event)
{
	t->cost_ticks = ticks_per_event > 0 && ns_per_event > 0 ? ticks_per_event : 0;
	t->cost_ns = t->cost_ticks > 0 ? ns_per_event : 0;
}

/* The summary's rule (overhead.h), in ticks for the times: self loses its
 * events' cost, on-CPU ns first; total loses its own, down to the new self;
 * the native part is cut to the total left. */
static void take_out_cost(const struct ulma_live_table *t, struct ulma_live_counts *n)
{
	n->self_ticks = self_less_cost(t, n->self_ticks, n->self_events, &n->self_cpu_ns);
	uint64_t room = minus(n->total_ticks, n->self_ticks);
	uint64_t total_cost = ulma_overhead_cost(n->total_events, t->cost_ticks);
	n->total_ticks -= total_cost < room ? total_cost : room;
	if (n->total_native_ticks > n->total_ticks) /* as the summary: never more than the total shown */
		n->total_native_ticks = n->total_ticks;
}

int ulma_live_table_update(struct ulma_live_table *t, const struct ulma_profile *p, uint64_t now_ticks)
{
	if (reserve(t, p->nfuncs) || reserve_threads(t, p->nthreads))
		return -ENOMEM;
	measure(t, p, now_ticks);
	total_processes(t, p);
	t->nrows = 0;
	t->self_sum = 0;
	for (uint32_t f = 0; f < p->nfuncs; f++) {
		struct ulma_live_row r = {f, t->cur[f], p->memory ? ulma_profile_memory_func(p, f).live_bytes : 0};
		if (f < t->nbase) {
			const struct ulma_live_counts *b = &t->base[f];
			r.n.calls = minus(r.n.calls, b->calls);
			r.n.total_ticks = minus(r.n.total_ticks, b->total_ticks);
			r.n.self_ticks = minus(r.n.self_ticks, b->self_ticks);
			r.n.self_cpu_ns = minus(r.n.self_cpu_ns, b->self_cpu_ns);
			r.n.self_wait_ns = minus(r.n.self_wait_ns, b->self_wait_ns);
			r.n.self_gil_ns = minus(r.n.self_gil_ns, b->self_gil_ns);
			r.n.self_events = minus(r.n.self_events, b->self_events);
			r.n.total_events = minus(r.n.total_events, b->total_events);
			r.n.total_native_ticks = minus(r.n.total_native_ticks, b->total_native_ticks);
		}
		if (r.n.calls == 0 && r.n.total_ticks == 0 && r.n.self_ticks == 0 && r.mem_bytes == 0)
			continue;
		if (t->cost_ticks > 0)
			take_out_cost(t, &r.n);
		t->rows[t->nrows++] = r;
		t->self_sum += r.n.self_ticks;
	}
	return 0;
}

int ulma_live_table_clear(struct ulma_live_table *t, const struct ulma_profile *p, uint64_t now_ticks)
{
	if (reserve(t, p->nfuncs) || reserve_threads(t, p->nthreads))
		return -ENOMEM;
	if ((p->nfuncs > t->nbase && grow(&t->base, t->cap, sizeof(*t->base))) ||
	    (p->nthreads > t->nthread_base && grow(&t->thread_base, t->cap_threads, sizeof(*t->thread_base))))
		return -ENOMEM;
	measure(t, p, now_ticks);
	if (p->nfuncs)
		memcpy(t->base, t->cur, p->nfuncs * sizeof(*t->base));
	t->nbase = p->nfuncs;
	if (p->nthreads)
		memcpy(t->thread_base, t->thread_cur, p->nthreads * sizeof(*t->thread_base));
	t->nthread_base = p->nthreads;
	t->clear_ticks = now_ticks;
	t->events_base = ulma_profile_events(p);
	t->lost_base = p->lost;
	return ulma_live_table_update(t, p, now_ticks);
}

struct ulma_live_split ulma_live_split_of(uint64_t self_ns, uint64_t cpu_ns, uint64_t wait_ns, uint64_t gil_ns)
{
	uint64_t cpu = cpu_ns < self_ns ? cpu_ns : self_ns;
	uint64_t run = wait_ns < self_ns - cpu ? wait_ns : self_ns - cpu;
	uint64_t blk = self_ns - cpu - run;
	uint64_t gil = gil_ns < blk ? gil_ns : blk;
	double d = (double)self_ns;
	return (struct ulma_live_split){100.0 * (double)cpu / d, 100.0 * (double)run / d, 100.0 * (double)blk / d,
					100.0 * (double)gil / d};
}

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a == b ? 0 : a < b ? 1 : -1;
}

static int compare(const void *pa, const void *pb, void *ctx)
{
	const struct ulma_live_row *a = pa, *b = pb;
	const struct ulma_profile *p = ((const void **)ctx)[0];
	enum ulma_live_sort key = *(const enum ulma_live_sort *)((const void **)ctx)[1];
	int c = 0;
	switch (key) {
	case ULMA_SORT_TOTAL:
		c = cmp_u64_desc(a->n.total_ticks, b->n.total_ticks);
		break;
	case ULMA_SORT_CALLS:
		c = cmp_u64_desc(a->n.calls, b->n.calls);
		break;
	case ULMA_SORT_CPU:
		c = cmp_u64_desc(a->n.self_cpu_ns, b->n.self_cpu_ns);
		break;
	case ULMA_SORT_MEM:
		c = cmp_u64_desc(a->mem_bytes, b->mem_bytes);
		break;
	case ULMA_SORT_NAME: {
		const char *x = p->funcs[a->func].name, *y = p->funcs[b->func].name;
		c = strcmp(x ? x : "", y ? y : "");
		break;
	}
	default:
		break;
	}
	if (c == 0)
		c = cmp_u64_desc(a->n.self_ticks, b->n.self_ticks);
	if (c == 0)
		c = a->func < b->func ? -1 : a->func > b->func;
	return c;
}

static int compare_procs(const void *pa, const void *pb, void *ctx)
{
	const struct ulma_live_proc *a = pa, *b = pb;
	int c = 0;
	switch (*(const enum ulma_live_sort *)ctx) {
	case ULMA_SORT_CALLS:
		c = cmp_u64_desc(a->n.events, b->n.events);
		break;
	case ULMA_SORT_CPU:
		c = cmp_u64_desc(a->n.self_cpu_ns, b->n.self_cpu_ns);
		break;
	case ULMA_SORT_MEM:
		c = cmp_u64_desc(a->mem_bytes, b->mem_bytes);
		break;
	case ULMA_SORT_NAME:
		break;
	default:
		c = cmp_u64_desc(a->n.self_ticks, b->n.self_ticks);
		break;
	}
	return c ? c : a->pid < b->pid ? -1 : a->pid > b->pid;
}

void ulma_live_table_sort(struct ulma_live_table *t, const struct ulma_profile *p, enum ulma_live_sort key)
{
	const void *ctx[2] = {p, &key};
	if (t->nrows > 1)
		qsort_r(t->rows, t->nrows, sizeof(*t->rows), compare, (void *)ctx);
	if (t->nprocs > 1)
		qsort_r(t->procs, t->nprocs, sizeof(*t->procs), compare_procs, &key);
}
