/* export_perfetto_lanes.c - the perfetto exporter's CPU lanes: which
 * traced thread ran on which CPU when, as Perfetto itself records it, as
 * ftrace sched_switch events (protos/perfetto/trace/ftrace/
 * ftrace_event_bundle.proto, ftrace_event.proto, sched.proto), from which
 * the trace processor builds its own CPU tracks (its `sched` table).
 *
 * A thread's on-CPU intervals come from its OFF records (a trace whose
 * split method is "switches"): it runs from its first event to its first
 * OFF record, from the end of each OFF interval to the next, and from the
 * last to its last event.  An interval that ends at an OFF record is on
 * that record's CPU, the one the switch-out was recorded on (with switch
 * records, a thread changes CPU only while off one), even where it ran
 * no traced event there (a GIL waiter's timed wake-ups); the last, on the
 * CPU of its latest event.  Each interval is a
 * switch on that CPU from idle (pid 0) to the thread, and one from the
 * thread to idle whose prev_state says why it left: R when preempted
 * (runnable), S when blocked (on I/O, a sleep, a lock or the GIL).  A
 * trace without OFF records gets no lanes.
 *
 * The times are the trace's raw ones, as the kernel's clock has them (the
 * walker's per-thread correction for the hook's cost is added back), in
 * CLOCK_MONOTONIC ns; a clock snapshot says BOOTTIME, ftrace's default
 * clock, agrees with MONOTONIC over the trace.  An interval that would
 * begin before the previous one ended (a backlog of OFF records the
 * monitor placed at one time) is left out, as the state track does, and
 * so is one on a CPU id of LANE_CPUS or more (only a corrupt trace has it).
 *
 * Memory is one bundle per CPU, written out as a packet when it holds
 * LANE_FLUSH bytes; the trace processor sorts the events.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export_perfetto.h"

enum {
	PKT_FTRACE_EVENTS = 1, /* TracePacket.ftrace_events */
	BUNDLE_CPU = 1,        /* FtraceEventBundle */
	BUNDLE_EVENT = 2,
	FT_TIMESTAMP = 1,      /* FtraceEvent */
	FT_PID = 2,
	FT_SCHED_SWITCH = 4,
	SW_PREV_COMM = 1,      /* SchedSwitchFtraceEvent */
	SW_PREV_PID = 2,
	SW_PREV_PRIO = 3,
	SW_PREV_STATE = 4,
	SW_NEXT_COMM = 5,
	SW_NEXT_PID = 6,
	SW_NEXT_PRIO = 7,
};

enum { PRIO_NORMAL = 120, TASK_RUNNING = 0, TASK_INTERRUPTIBLE = 1 };
#define LANE_FLUSH 16384
#define LANE_CPUS 65536 /* CPU ids beyond this (a corrupt trace's) get no lane: bounded memory */

/* The bundle of cpu (< LANE_CPUS), made on its first event. */
static struct ulma_sbuf *lane_of(struct perfetto *c, uint32_t cpu)
{
	if (cpu >= c->ncpus) {
		uint32_t n = cpu + 1 > c->ncpus * 2 ? cpu + 1 : c->ncpus * 2;
		struct ulma_sbuf *p = realloc(c->cpus, (size_t)n * sizeof(*p));
		if (!p)
			return NULL;
		memset(p + c->ncpus, 0, (size_t)(n - c->ncpus) * sizeof(*p));
		c->cpus = p;
		c->ncpus = n;
	}
	return &c->cpus[cpu];
}

/* The events gathered for cpu, as one packet. */
static void flush_lane(struct perfetto *c, uint32_t cpu)
{
	struct ulma_sbuf *events = &c->cpus[cpu];
	if (!events->len)
		return;
	struct ulma_sbuf p = {0}, b = {0};
	ulma_pb_put_uint(&b, BUNDLE_CPU, cpu);
	ulma_sbuf_put(&b, events->p, events->len);
	ulma_pb_put_message(&p, PKT_FTRACE_EVENTS, &b);
	if (events->nomem)
		c->err = c->err ? c->err : -ENOMEM;
	pf_put_packet_sbuf(c, &p);
	events->len = 0;
	ulma_sbuf_free(&p);
	ulma_sbuf_free(&b);
}

/* One sched_switch on cpu at ns (since the trace start), from prev to next (0: idle). */
static void put_switch(struct perfetto *c, const struct ulma_walk *w, uint32_t cpu, uint64_t ns, uint32_t prev,
		       const char *prev_comm, uint64_t prev_state, uint32_t next, const char *next_comm)
{
	struct ulma_sbuf *events = lane_of(c, cpu);
	if (!events) {
		c->err = c->err ? c->err : -ENOMEM;
		return;
	}
	struct ulma_sbuf e = {0}, s = {0};
	ulma_pb_put_string(&s, SW_PREV_COMM, prev_comm);
	ulma_pb_put_uint(&s, SW_PREV_PID, prev);
	ulma_pb_put_uint(&s, SW_PREV_PRIO, PRIO_NORMAL);
	ulma_pb_put_uint(&s, SW_PREV_STATE, prev_state);
	ulma_pb_put_string(&s, SW_NEXT_COMM, next_comm);
	ulma_pb_put_uint(&s, SW_NEXT_PID, next);
	ulma_pb_put_uint(&s, SW_NEXT_PRIO, PRIO_NORMAL);
	ulma_pb_put_uint(&e, FT_TIMESTAMP, w->start_ns + ns);
	ulma_pb_put_uint(&e, FT_PID, prev);
	ulma_pb_put_message(&e, FT_SCHED_SWITCH, &s);
	ulma_pb_put_message(events, BUNDLE_EVENT, &e);
	if (e.nomem || s.nomem)
		c->err = c->err ? c->err : -ENOMEM;
	ulma_sbuf_free(&e);
	ulma_sbuf_free(&s);
	if (events->len >= LANE_FLUSH)
		flush_lane(c, cpu);
}

/* What the kernel would call the thread: its latest name. */
static const char *comm_of(const struct ulma_walk *w, const struct ulma_walk_thread *t)
{
	if (t->name < w->nfuncs)
		return w->funcs[t->name].name;
	return t->tid == t->pid ? "main thread" : "thread";
}

/* The clock snapshot tying ftrace's clock to the trace's, once. */
static void tie_boottime(struct perfetto *c, const struct ulma_walk *w)
{
	struct ulma_sbuf p = {0};
	pf_put_clock_snapshot(&p, w->start_ns, CLOCK_BOOTTIME_ID, false);
	pf_put_packet_sbuf(c, &p);
	ulma_sbuf_free(&p);
	c->lanes_tied = true;
}

/* The thread ran on cpu over [from, to] (raw ns), then left it in prev_state. */
static void ran(struct perfetto *c, const struct ulma_walk *w, uint32_t thread, uint32_t cpu, uint64_t from,
		uint64_t to, uint64_t prev_state)
{
	const struct ulma_walk_thread *t = &w->threads[thread];
	const char *comm = comm_of(w, t);
	if (cpu >= LANE_CPUS)
		return;
	if (!c->lanes_tied)
		tie_boottime(c, w);
	put_switch(c, w, cpu, from, 0, "swapper", TASK_RUNNING, t->tid, comm);
	put_switch(c, w, cpu, to, t->tid, comm, prev_state, 0, "swapper");
}

void pf_lane_off(struct perfetto *c, const struct ulma_walk *w, uint32_t thread, uint8_t state, uint32_t cpu,
		 uint64_t at_ns, uint64_t ns)
{
	struct pf_thread *pt = &c->threads[thread];
	const struct ulma_walk_thread *t = &w->threads[thread];
	uint64_t raw = at_ns + (t->shift_fp >> 32);
	if (!pt->lane_started) {
		pt->lane_started = true;
		pt->lane_since = t->first_ns; /* before any cost is taken out */
	}
	if (raw < pt->lane_since)
		return; /* overlaps the previous interval */
	if (raw > pt->lane_since)
		ran(c, w, thread, cpu, pt->lane_since, raw, state == ULMA_OFF_RUNNABLE ? TASK_RUNNING : TASK_INTERRUPTIBLE);
	pt->lane_since = raw + ns;
}

void pf_lanes_finish(struct perfetto *c, const struct ulma_walk *w)
{
	for (uint32_t i = 0; i < w->nthreads && i < c->nthreads; i++) {
		const struct ulma_walk_thread *t = &w->threads[i];
		uint64_t shift = t->shift_fp > w->cost_fp ? (t->shift_fp - w->cost_fp) >> 32 : 0;
		uint64_t last = t->last_ns + shift; /* the cost of its last event came after it */
		if (t->pass && c->threads[i].lane_started && last > c->threads[i].lane_since)
			ran(c, w, i, t->cpu, c->threads[i].lane_since, last, TASK_INTERRUPTIBLE);
	}
	for (uint32_t cpu = 0; cpu < c->ncpus; cpu++)
		flush_lane(c, cpu);
}

void pf_lanes_free(struct perfetto *c)
{
	for (uint32_t cpu = 0; cpu < c->ncpus; cpu++)
		ulma_sbuf_free(&c->cpus[cpu]);
	free(c->cpus);
}
