/* collector.c - the collector's slots: taken from the session, drained
 * each poll up to their published head (collector_apply.c applies the
 * records), a dead process's unpublished records salvaged, and given back;
 * schedstat sampling, process names, and the end of the session (see
 * collector.h). */
#include "collector.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../analysis/profile_memory.h"
#include "../analysis/schedline.h"
#include "../core/clock.h"
#include "collector_defs.h"
#include "collector_lines.h"
#include "collector_memory.h"
#include "collector_native.h"
#include "collector_slot.h"
#include "gilwait.h"
#include "../core/proc_name.h"
#include "sampler.h"
#include "ulma/shm.h"

#define SAMPLE_BUSY_NS 1000000u   /* schedstat period of a thread with new events */
#define SAMPLE_IDLE_NS 10000000u  /* and of one without */

int ulma_collector_init(struct ulma_collector *c, struct ulma_session *s, struct ulma_trace_writer *w)
{
	memset(c, 0, sizeof(*c));
	c->session = s;
	c->writer = w;
	c->unknown = UINT32_MAX;
	ulma_profile_init(&c->profile);
	if (ulma_collector_native_init(c) < 0)
		return -ENOMEM;
	c->use_tsc = (s->hdr->flags & ULMA_SHM_CLOCK_TSC) != 0;
	if ((s->hdr->flags & ULMA_SHM_MEMORY) && ulma_profile_memory_enable(&c->profile) < 0)
		return -ENOMEM;
	if (c->profile.memory)
		c->profile.memory->sample_bytes = s->hdr->mem_sample_bytes;
	c->split = ULMA_SPLIT_SCHEDSTAT;
	c->ns_per_tick = 1.0;
	c->slots = calloc(s->hdr->slot_count, sizeof(*c->slots));
	if (!c->slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->hdr->slot_count; i++) {
		c->slots[i].sched_fd = -1;
		c->slots[i].gil.fd = -1;
	}
	return 0;
}

void ulma_collector_split(struct ulma_collector *c, int method, struct ulma_switches *sw,
			  const struct ulma_clock_pair *start, uint64_t hz)
{
	c->split = method == ULMA_SPLIT_SWITCHES && !sw ? ULMA_SPLIT_SCHEDSTAT : method;
	c->switches = c->split == ULMA_SPLIT_SWITCHES ? sw : NULL;
	c->ns_per_tick = c->use_tsc && hz ? 1e9 / (double)hz : 1.0;
	ulma_offcpu_init(&c->off, c->use_tsc, start, hz);
	if (c->split == ULMA_SPLIT_SWITCHES)
		c->profile.split = ULMA_PROFILE_SPLIT_SWITCHES;
}

static void stop_sampling(struct ulma_collector_slot *cs)
{
	if (cs->sched_fd >= 0)
		close(cs->sched_fd);
	cs->sched_fd = -1;
	ulma_gilwait_close(&cs->gil);
	ulma_schedline_free(&cs->line);
}

/* Sample the thread's schedstat if it is due; a thread that is gone stops
 * being sampled.  Returns true if a sample was taken. */
static bool sample(struct ulma_collector *c, struct ulma_collector_slot *cs, uint64_t head, bool force)
{
	if (cs->sched_fd < 0)
		return false;
	uint64_t now = ulma_clock_monotonic_ns();
	uint64_t period = head != cs->head_at_sample ? SAMPLE_BUSY_NS : SAMPLE_IDLE_NS;
	if (!force && now - cs->sampled_ns < period)
		return false;
	uint32_t cpu;
	struct ulma_trace_sched smp = {0, 0, 0, 0, false};
	smp.ticks = ulma_clock_now(c->use_tsc, &cpu);
	if (ulma_sampler_read(cs->sched_fd, &smp.cpu_ns, &smp.wait_ns) < 0) {
		close(cs->sched_fd); /* the thread is gone: its last events clamp to the last sample */
		cs->sched_fd = -1;
		ulma_gilwait_close(&cs->gil);
		return false;
	}
	smp.gil_known = ulma_gilwait_step(&cs->gil, ulma_clock_monotonic_ns(), smp.cpu_ns, smp.wait_ns);
	smp.gil_ns = cs->gil.gil_ns;
	cs->sampled_ns = now;
	cs->head_at_sample = head;
	if (ulma_schedline_add(&cs->line, &smp) < 0)
		return false;
	ulma_profile_sample(&c->profile, cs->thread, smp.cpu_ns, smp.gil_known);
	if (cs->stream)
		ulma_trace_sched(cs->stream, &smp);
	return true;
}

void ulma_collector_free(struct ulma_collector *c)
{
	if (c->slots)
		for (uint32_t i = 0; i < c->session->hdr->slot_count; i++) {
			stop_sampling(&c->slots[i]);
			free(c->slots[i].native_cache);
		}
	free(c->slots);
	ulma_collector_defs_free(c);
	ulma_collector_native_free(c);
	ulma_collector_lines_free(c);
	ulma_collector_rss_free(c);
	ulma_idmap_free(&c->serials);
	ulma_offcpu_free(&c->off);
	ulma_profile_free(&c->profile);
	memset(c, 0, sizeof(*c));
}

/* Process pid is called `name` (len bytes), its parent ppid (0: not
 * known): in the profile and, before its next THREAD chunk, in the trace.
 * A later name replaces an earlier (an exec). */
static int set_process_name(struct ulma_collector *c, uint32_t pid, uint32_t ppid, const char *name, size_t len)
{
	const char *had = ulma_pid_names_get(&c->profile.names, pid);
	if (had && strlen(had) == len && memcmp(had, name, len) == 0)
		return 0;
	int err = ulma_pid_names_set(&c->profile.names, pid, name, len);
	if (!err && c->writer)
		err = ulma_trace_process(c->writer, pid, ppid, name, len);
	return err;
}

int ulma_collector_take_process(struct ulma_collector *c, const struct ulma_def_view *d)
{
	char text[16];
	char *end;
	if (d->line == 0 || d->name_len == 0 || d->name_len >= ULMA_PROC_NAME_MAX || d->file_len == 0 ||
	    d->file_len >= sizeof(text)) {
		c->refused++;
		return 0;
	}
	memcpy(text, d->file, d->file_len);
	text[d->file_len] = 0;
	unsigned long ppid = strtoul(text, &end, 10);
	if (*end || text[0] < '0' || text[0] > '9' || ppid > UINT32_MAX) {
		c->refused++;
		return 0;
	}
	return ulma_collector_set_error(c, set_process_name(c, d->line, (uint32_t)ppid, d->name, d->name_len));
}

/* Name a process when its first thread shows up: as it named itself
 * (ulma_collector_take_process) before that thread claimed its slot; if
 * it could not (the definition area full), by its command line in /proc,
 * while it most likely still runs.  Otherwise it stays unnamed. */
static int name_process(struct ulma_collector *c, uint32_t pid)
{
	char name[ULMA_PROC_NAME_MAX];
	if (ulma_pid_names_get(&c->profile.names, pid))
		return 0;
	ulma_collector_scan_defs(c, false); /* its name came before its slot: the poll may have read neither */
	if (ulma_pid_names_get(&c->profile.names, pid) || !ulma_proc_name_read(pid, name, sizeof(name)))
		return 0;
	return set_process_name(c, pid, ulma_proc_ppid_read(pid), name, strlen(name));
}

/* The serial a thread goes by in the profile and the trace: its slot's,
 * unless a writer broke the format and gave one already taken (two
 * threads of one serial would make the trace unreadable) or the one the
 * trace cannot hold; then the next free one. */
static int thread_serial(struct ulma_collector *c, uint64_t want, uint64_t *out)
{
	uint32_t taken;
	while (want == UINT64_MAX || ulma_idmap_get(&c->serials, want + 1, &taken))
		want = want == UINT64_MAX ? 0 : want + 1;
	*out = want;
	return ulma_idmap_put(&c->serials, want + 1, 1);
}

static int open_thread(struct ulma_collector *c, struct ulma_collector_slot *cs, const struct ulma_shm_slot *slot)
{
	/* the writer's identity fields, read once: a hostile one may change them meanwhile */
	const uint64_t slot_serial = slot->serial, claimed_at = slot->claimed_at, gil_addr = slot->gil_addr;
	const uint32_t pid = slot->pid, tid = slot->tid, gil_len = slot->gil_len;
	uint32_t index = c->profile.nthreads;
	int named = name_process(c, pid);
	if (named)
		return ulma_collector_set_error(c, named);
	uint64_t serial;
	int err = thread_serial(c, slot_serial, &serial);
	if (!err)
		err = ulma_profile_add_thread(&c->profile, index, serial, pid, tid);
	if (!err && c->writer)
		err = ulma_trace_stream_open(c->writer, serial, pid, tid, &cs->stream);
	if (err)
		return ulma_collector_set_error(c, err);
	cs->live = true;
	cs->serial = slot_serial;
	cs->thread = index;
	cs->last_ticks = 0;
	cs->claimed_at = claimed_at;
	cs->pid = pid;
	cs->cpu = 0;
	cs->twins_open = 0;
	cs->mem.sized = false;
	if (cs->native_cache) /* a slot's new owner may be another process */
		ulma_collector_native_forget(cs->native_cache);
	cs->off = NULL;
	stop_sampling(cs);
	if (c->split == ULMA_SPLIT_SWITCHES) {
		cs->off = ulma_offcpu_claim(&c->off, pid, tid, gil_addr, gil_len, claimed_at);
		if (!cs->off)
			return ulma_collector_set_error(c, -ENOMEM);
		if (cs->off->gil.fd >= 0)
			c->profile.has_gil = 1;
	} else if (c->split == ULMA_SPLIT_SCHEDSTAT) {
		int fd = ulma_sampler_open(pid, tid);
		cs->sched_fd = fd >= 0 ? fd : -1;
		if (fd >= 0)
			ulma_gilwait_open(&cs->gil, pid, tid, gil_addr, gil_len);
		cs->sampled_ns = 0;
		cs->head_at_sample = UINT64_MAX;
	}
	return 0;
}

/* With RSS samples held for the thread's process: apply the records
 * [*tailp, head) up to the first one later than the oldest sample, write
 * the samples before it, and again while a record passes one. */
static long apply_rss(struct ulma_collector *c, struct ulma_collector_slot *cs, const struct ulma_record *ring,
		      uint64_t mask, uint64_t *tailp, uint64_t head, uint64_t horizon, bool final)
{
	long n = 0;
	uint64_t next;
	while ((next = ulma_collector_rss_passed(c, cs->pid, ring, mask, *tailp, head)) < head) {
		n += ulma_collector_apply(c, cs, ring, mask, tailp, next, horizon, final);
		if (*tailp < next)
			break; /* stopped early: a definition on its way, or the horizon */
		ulma_collector_set_error(c, ulma_collector_rss_write(c, cs->pid, cs->stream, ring[next & mask].time - 1));
	}
	return n;
}

/* The process is gone: take the records it wrote after its last batch
 * publication.  They follow head in time order; a record from the ring's
 * previous lap is older than the last one consumed, and one of the slot's
 * previous owner older than its claim, so the first record that breaks
 * the order ends them. */
static long salvage(struct ulma_collector *c, struct ulma_collector_slot *cs, const struct ulma_record *ring,
		    uint64_t cap, uint64_t *tail)
{
	long n = 0;
	uint64_t floor = cs->last_ticks > cs->claimed_at ? cs->last_ticks : cs->claimed_at;
	for (uint32_t k = 0; k < ULMA_RING_BATCH && k < cap; k++) {
		struct ulma_record r = ring[*tail & (cap - 1)];
		if (r.kind < ULMA_REC_ENTER || r.kind > ULMA_REC_KIND_MAX || r.time < floor || r.time == 0)
			break;
		floor = r.time;
		if (c->nrss) /* the RSS samples held from before it go first, as apply_rss does */
			ulma_collector_set_error(c, ulma_collector_rss_write(c, cs->pid, cs->stream, r.time - 1));
		uint64_t at = 0;
		if (ulma_collector_apply(c, cs, &r, 0, &at, 1, UINT64_MAX, true) != 1)
			break;
		(*tail)++;
		n++;
	}
	return n;
}

/* A slot's state and head as this poll begins; opens the thread of a
 * slot newly taken.  Reading every head before the switch records makes
 * every switch before a drained event known (offcpu.h). */
static int snapshot_slot(struct ulma_collector *c, uint32_t i)
{
	struct ulma_shm_slot *slot = &c->session->slots[i];
	struct ulma_collector_slot *cs = &c->slots[i];
	/* acquire: identity fields and, for CLOSED, the final head */
	cs->state = atomic_load_explicit(&slot->state, memory_order_acquire);
	if (cs->state != ULMA_SLOT_ACTIVE && cs->state != ULMA_SLOT_CLOSED)
		return 0;
	if (!cs->live || cs->serial != slot->serial) {
		int err = open_thread(c, cs, slot);
		if (err)
			return err;
	}
	/* acquire: pairs with the producer's release; records up to head are complete */
	cs->head = atomic_load_explicit(&slot->head, memory_order_acquire);
	return 0;
}

/* When a thread of a process found dead (at `noticed`) ended: at its
 * exit, where the switch records gave it; else when its death was
 * noticed.  The kernel records no switch-out after a task's exit, so
 * closing its frames at `noticed` had it run on its CPU for up to a reap
 * period after it was gone (in the CPU lanes of the perfetto export, over
 * the threads that ran there meanwhile). */
static uint64_t ended_at(const struct ulma_collector_slot *cs, uint64_t noticed)
{
	if (!cs->off || !cs->off->exited || cs->off->exit_ticks >= noticed)
		return noticed;
	return cs->off->exit_ticks > cs->last_ticks ? cs->off->exit_ticks : cs->last_ticks;
}

/* Give a finished slot back to the writers. */
static void finish_slot(struct ulma_collector *c, struct ulma_collector_slot *cs, uint32_t i, uint64_t end,
			enum ulma_offcpu_at at)
{
	if (c->nrss) /* the RSS samples of its life, */
		ulma_collector_set_error(c, ulma_collector_rss_write(c, cs->pid, cs->stream, end));
	ulma_collector_close_frames(c, cs, end, at);
	if (c->nrss && at == ULMA_OFFCPU_ENDS) /* and after its end if its process is gone */
		ulma_collector_set_error(c, ulma_collector_rss_write(c, cs->pid, cs->stream, UINT64_MAX));
	stop_sampling(cs);
	ulma_offcpu_release(&c->off, cs->off);
	cs->off = NULL;
	cs->live = false;
	ulma_session_recycle_slot(c->session, i);
}

/* Drain slot i up to its snapshot.  dead_at: 0, or the time its process
 * was found dead (then everything is taken, unpublished records too). */
static long drain_slot(struct ulma_collector *c, uint32_t i, bool final, uint64_t dead_at)
{
	struct ulma_session *s = c->session;
	struct ulma_shm_slot *slot = &s->slots[i];
	struct ulma_collector_slot *cs = &c->slots[i];
	if (!cs->live || (cs->state != ULMA_SLOT_ACTIVE && cs->state != ULMA_SLOT_CLOSED))
		return 0;
	uint64_t cap = ulma_session_capacity(s);
	uint64_t tail = atomic_load_explicit(&slot->tail, memory_order_relaxed); /* we own tail */
	uint64_t head = cs->head;
	if (head < tail)
		head = tail;
	if (head - tail > cap) { /* a head more than a ring ahead: a corrupt or hostile writer */
		ulma_collector_record_lost(c, cs, cs->last_ticks, head - tail - cap);
		tail = head - cap;
	}
	if (head - tail > c->peak)
		c->peak = head - tail;
	uint64_t horizon = UINT64_MAX;
	if (!cs->off && c->split == ULMA_SPLIT_SCHEDSTAT) {
		sample(c, cs, head, false);
		/* events after the newest sample wait for the next one, unless
		 * the thread can no longer be sampled */
		if (cs->sched_fd >= 0 && !final && !dead_at)
			horizon = ulma_schedline_last_ticks(&cs->line);
	}
	const struct ulma_record *ring = ulma_session_ring(s, i);
	long n = c->nrss ? apply_rss(c, cs, ring, cap - 1, &tail, head, horizon, final) : 0;
	n += ulma_collector_apply(c, cs, ring, cap - 1, &tail, head, horizon, final);
	if ((final || dead_at) && cs->state == ULMA_SLOT_ACTIVE && tail == head)
		n += salvage(c, cs, ring, cap, &tail);
	/* the peak is taken in the order memory records are applied: end the
	 * chunk here, so that a report applies them in this order too */
	if (cs->stream && ulma_trace_stream_has_memory(cs->stream))
		ulma_collector_set_error(c, ulma_trace_stream_flush(cs->stream));
	ulma_ring_consume(slot, tail);
	if ((cs->state == ULMA_SLOT_CLOSED || dead_at) && tail == head)
		finish_slot(c, cs, i, dead_at ? ended_at(cs, dead_at) : cs->last_ticks,
			    dead_at ? ULMA_OFFCPU_ENDS : ULMA_OFFCPU_SAYS_NOTHING);
	return n;
}

/* Slots that may be in use: the writers keep the high-water mark. */
static uint32_t slots_in_use(const struct ulma_collector *c)
{
	uint32_t n = atomic_load_explicit(&c->session->hdr->slots_used, memory_order_acquire);
	return n < c->session->hdr->slot_count ? n : c->session->hdr->slot_count;
}

/* For the live view: since when each thread has been off its CPU, as far
 * as the switch records say. */
static void note_pending_off(struct ulma_collector *c, struct ulma_collector_slot *cs)
{
	struct ulma_thread_row *th = &c->profile.threads[cs->thread];
	const struct ulma_offcpu_thread *ot = cs->off;
	th->off_now = 0;
	if (!ot)
		return;
	if (ot->len) {
		const struct ulma_offcpu_pending *newest = &ot->q[ot->head + ot->len - 1];
		if (newest->kind != ULMA_SWITCH_IN) {
			th->off_now = newest->kind == ULMA_SWITCH_PREEMPT ? 2 : 1;
			th->off_since = newest->ticks;
		}
	} else if (ot->off) {
		th->off_now = ot->preempted ? 2 : 1;
		th->off_since = ot->off_ticks;
	}
}

long ulma_collector_poll(struct ulma_collector *c, bool final)
{
	long total = 0;
	/* the hook's cost: measured at start-up, and lowered by the measure
	 * again at stop() (src/python/calibrate.c); each figure into the trace,
	 * whose last is the run's */
	uint64_t overhead_ps = atomic_load_explicit(&c->session->hdr->overhead_ps, memory_order_relaxed);
	if (overhead_ps != c->overhead_ps) {
		c->overhead_ps = overhead_ps;
		if (overhead_ps && c->writer)
			ulma_collector_set_error(c, ulma_trace_overhead(c->writer, overhead_ps));
	}
	ulma_collector_scan_defs(c, final);
	uint64_t rss_round = ulma_collector_rss_due(c);
	uint32_t used = slots_in_use(c);
	c->peak = 0;
	for (uint32_t i = 0; i < used; i++)
		if (snapshot_slot(c, i) < 0)
			return c->error;
	if (c->switches) {
		long r = ulma_offcpu_read(&c->off, c->switches);
		if (r < 0)
			ulma_collector_set_error(c, (int)r);
		ulma_offcpu_probe(&c->off);
	}
	for (uint32_t i = 0; i < used; i++) {
		long n = drain_slot(c, i, final, 0);
		if (n < 0)
			return n;
		total += n;
		if (c->slots[i].live && c->switches)
			note_pending_off(c, &c->slots[i]);
	}
	for (uint32_t i = 0; rss_round && i < used; i++)
		if (c->slots[i].live)
			ulma_collector_set_error(c, ulma_collector_rss(c, c->slots[i].pid, c->slots[i].stream, c->slots[i].last_ticks,
							rss_round));
	c->records += (uint64_t)total;
	return c->error ? c->error : total;
}

int ulma_collector_reap(struct ulma_collector *c, uint64_t now_ticks)
{
	int freed = 0;
	bool read_switches = c->switches != NULL;
	uint32_t used = slots_in_use(c);
	for (uint32_t i = 0; i < used; i++) {
		struct ulma_shm_slot *slot = &c->session->slots[i];
		uint32_t pid = c->slots[i].pid; /* as the thread was opened */
		if (!c->slots[i].live ||
		    atomic_load_explicit(&slot->state, memory_order_acquire) != ULMA_SLOT_ACTIVE)
			continue;
		/* a zombie still answers: only a reaped process is gone for good */
		if (pid == 0 || pid > INT32_MAX || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		if (read_switches) { /* its EXIT records, written since the poll read them */
			long r = ulma_offcpu_read(&c->off, c->switches);
			if (r < 0)
				ulma_collector_set_error(c, (int)r);
			read_switches = false;
		}
		if (snapshot_slot(c, i) == 0 && drain_slot(c, i, true, now_ticks ? now_ticks : 1) >= 0 &&
		    !c->slots[i].live)
			freed++;
	}
	return freed;
}

void ulma_collector_close_all(struct ulma_collector *c, uint64_t end_ticks)
{
	for (uint32_t i = 0; i < c->session->hdr->slot_count; i++) {
		if (!c->slots[i].live)
			continue;
		uint64_t end = ended_at(&c->slots[i], end_ticks);
		if (c->nrss) /* the RSS samples still held, before the frames close */
			ulma_collector_set_error(c, ulma_collector_rss_write(c, c->slots[i].pid, c->slots[i].stream, end));
		ulma_collector_close_frames(c, &c->slots[i], end, ULMA_OFFCPU_ENDS);
	}
	ulma_collector_set_error(c, ulma_collector_rss_write_all(c)); /* of processes whose threads all ended */
	ulma_profile_finish(&c->profile, end_ticks);
}
