/* collector.c - ring draining and stack normalisation (see collector.h). */
#include "collector.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "../core/clock.h"
#include "gilwait.h"
#include "proc_name.h"
#include "sampler.h"
#include "ulma/shm.h"
#include <unistd.h>

#define UNKNOWN_ID UINT32_MAX /* trace id of the "?" function */
#define DENSE_IDS (1u << 24)  /* session ids below this resolve through an array */
#define SAMPLE_BUSY_NS 1000000u   /* schedstat period of a thread with new events */
#define SAMPLE_IDLE_NS 10000000u  /* and of one without */

struct ulma_collector_slot {
	bool live;
	uint64_t serial;
	uint32_t thread; /* dense thread index */
	struct ulma_trace_stream *stream;
	uint32_t *ids;   /* session ids of open frames */
	uint32_t depth;
	uint32_t cap;
	uint64_t last_ticks;
	uint32_t cpu;
	int sched_fd;            /* schedstat of the thread, -1 if none */
	struct ulma_gilwait gil; /* its GIL waits, where they can be told apart */
	struct ulma_schedline line;
	uint64_t sampled_ns;     /* CLOCK_MONOTONIC of the last sample */
	uint64_t head_at_sample; /* ring head at the last sample */
};

static int set_error(struct ulma_collector *c, int err)
{
	if (err && !c->error)
		c->error = err;
	return err;
}

int ulma_collector_init(struct ulma_collector *c, struct ulma_session *s, struct ulma_trace_writer *w)
{
	memset(c, 0, sizeof(*c));
	c->session = s;
	c->writer = w;
	ulma_profile_init(&c->profile);
	c->use_tsc = (s->hdr->flags & ULMA_SHM_CLOCK_TSC) != 0;
	c->sample_sched = true;
	c->slots = calloc(s->hdr->slot_count, sizeof(*c->slots));
	if (!c->slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->hdr->slot_count; i++) {
		c->slots[i].sched_fd = -1;
		c->slots[i].gil.fd = -1;
	}
	return 0;
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
			free(c->slots[i].ids);
			stop_sampling(&c->slots[i]);
		}
	free(c->slots);
	free(c->by_id);
	free(c->canon);
	free(c->holes);
	ulma_idmap_free(&c->by_content);
	for (uint32_t i = 0; i < c->nfiles; i++)
		free(c->files[i]);
	free(c->files);
	ulma_idmap_free(&c->func_index);
	ulma_idmap_free(&c->file_index);
	ulma_profile_free(&c->profile);
	memset(c, 0, sizeof(*c));
}

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * UINT64_C(0x100000001b3);
	return h ? h : 1;
}

/* Trace file id for a path, defining it on first sight. */
static int file_id(struct ulma_collector *c, const char *path, size_t len, uint32_t *out)
{
	uint64_t h = fnv1a(path, len);
	uint32_t id;
	if (ulma_idmap_get(&c->file_index, h, &id) && strlen(c->files[id]) == len &&
	    memcmp(c->files[id], path, len) == 0) {
		*out = id;
		return 0;
	}
	char **v = realloc(c->files, (c->nfiles + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	c->files = v;
	if (!(v[c->nfiles] = malloc(len + 1)))
		return -ENOMEM;
	memcpy(v[c->nfiles], path, len);
	v[c->nfiles][len] = 0;
	id = c->nfiles++;
	if (!ulma_idmap_get(&c->file_index, h, out)) /* on a hash collision keep the first */
		ulma_idmap_put(&c->file_index, h, id);
	*out = id;
	return c->writer ? ulma_trace_define_file(c->writer, id, path, len) : 0;
}

static uint64_t content_key(uint8_t kind, const char *name, size_t nlen, const char *file, size_t flen,
			    uint32_t line)
{
	uint64_t h = fnv1a(name, nlen) * 31 + fnv1a(file, flen);
	h = h * 31 + line;
	h = h * 31 + kind;
	return h ? h : 1;
}

static bool same_function(const struct ulma_func_row *f, uint8_t kind, const char *name, size_t nlen,
			  const char *file, size_t flen, uint32_t line)
{
	return f->kind == kind && f->line == line && strlen(f->name) == nlen && strlen(f->file) == flen &&
	       memcmp(f->name, name, nlen) == 0 && memcmp(f->file, file, flen) == 0;
}

static int map_id(struct ulma_collector *c, uint32_t sid, uint32_t index)
{
	int err = ulma_idmap_put(&c->func_index, sid, index);
	if (err || sid >= DENSE_IDS)
		return err;
	if (sid >= c->nby_id) {
		uint32_t n = c->nby_id ? c->nby_id : 1024;
		while (n <= sid)
			n *= 2;
		uint32_t *v = realloc(c->by_id, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(v + c->nby_id, 0, (n - c->nby_id) * sizeof(*v));
		c->by_id = v;
		c->nby_id = n;
	}
	c->by_id[sid] = index + 1;
	return 0;
}

static int define(struct ulma_collector *c, uint32_t sid, uint8_t kind, const char *name, size_t nlen,
		  const char *file, size_t flen, uint32_t line)
{
	uint64_t key = content_key(kind, name, nlen, file, flen, line);
	uint32_t index, fid;
	if (ulma_idmap_get(&c->by_content, key, &index) &&
	    same_function(&c->profile.funcs[index], kind, name, nlen, file, flen, line))
		return set_error(c, map_id(c, sid, index)); /* another process's id for it */
	index = c->profile.nfuncs;
	if (index >= c->ncanon) {
		uint32_t n = c->ncanon ? c->ncanon * 2 : 1024;
		uint32_t *v = realloc(c->canon, n * sizeof(*v));
		if (!v)
			return set_error(c, -ENOMEM);
		c->canon = v;
		c->ncanon = n;
	}
	c->canon[index] = sid;
	int err = file_id(c, file, flen, &fid);
	if (!err)
		err = map_id(c, sid, index);
	uint32_t seen;
	if (!err && !ulma_idmap_get(&c->by_content, key, &seen)) /* on a collision keep the first */
		err = ulma_idmap_put(&c->by_content, key, index);
	if (!err)
		err = ulma_profile_add_func(&c->profile, index, kind, name, nlen, file, flen, line);
	if (!err && c->writer)
		err = ulma_trace_define_func(c->writer, sid, kind, fid, line, name, nlen);
	return set_error(c, err);
}

#define DEF_HOLE_NS 100000000u /* an entry incomplete this long is skipped (and re-read later) */

static int take_def(struct ulma_collector *c, const struct ulma_def_view *d)
{
	uint32_t have;
	if (ulma_idmap_get(&c->func_index, d->id, &have))
		return 0;
	return define(c, d->id, d->kind, d->name, d->name_len, d->file, d->file_len, d->line);
}

/* Entries skipped as holes may have completed since: read them now. */
static int recheck_holes(struct ulma_collector *c)
{
	for (uint32_t i = 0; i < c->nholes;) {
		uint64_t at = c->holes[i];
		struct ulma_def_view d;
		int r = ulma_session_next_def(c->session, &at, &d);
		if (r < 0)
			return set_error(c, r);
		if (r == 1) {
			int err = take_def(c, &d);
			if (err)
				return err;
			c->holes[i] = c->holes[--c->nholes];
		} else {
			i++;
		}
	}
	return 0;
}

/* Read new definitions.  An entry that stays incomplete (its writer died
 * between reserving and completing it) would hide every later one, so after
 * DEF_HOLE_NS, or at once when `final`, it is skipped and kept as a hole. */
static int scan_defs(struct ulma_collector *c, bool final)
{
	struct ulma_def_view d;
	int r, err = recheck_holes(c);
	if (err)
		return err;
	for (;;) {
		while ((r = ulma_session_next_def(c->session, &c->def_cursor, &d)) == 1)
			if ((err = take_def(c, &d)))
				return err;
		if (r < 0)
			return set_error(c, r);
		uint64_t used = atomic_load_explicit(&c->session->hdr->defs_used, memory_order_acquire);
		if (c->def_cursor >= used || c->def_cursor >= c->session->hdr->defs_size)
			return 0; /* nothing incomplete: simply at the end */
		uint64_t now = ulma_clock_monotonic_ns();
		if (c->stuck_at != c->def_cursor) {
			c->stuck_at = c->def_cursor;
			c->stuck_since_ns = now;
		}
		uint64_t next;
		if ((!final && now - c->stuck_since_ns < DEF_HOLE_NS) ||
		    !ulma_session_next_def_after_hole(c->session, c->def_cursor, &next))
			return 0;
		uint64_t *v = realloc(c->holes, (c->nholes + 1) * sizeof(*v));
		if (!v)
			return set_error(c, -ENOMEM);
		c->holes = v;
		c->holes[c->nholes++] = c->def_cursor;
		c->def_cursor = next;
	}
}

/* Dense index and canonical id for a session id, which is replaced by the
 * canonical one.  Session id 0 (defs full) and, at the end, ids whose
 * definition never arrived map to "?".  Returns false to wait. */
static bool resolve(struct ulma_collector *c, uint32_t *sid, uint32_t *index, bool final)
{
	if (ULMA_LIKELY(*sid < c->nby_id && c->by_id[*sid])) {
		*index = c->by_id[*sid] - 1;
		*sid = c->canon[*index];
		return true;
	}
	if (*sid != 0 && ulma_idmap_get(&c->func_index, *sid, index))
		goto found;
	if (*sid != 0) {
		scan_defs(c, final);
		if (ulma_idmap_get(&c->func_index, *sid, index))
			goto found;
		if (!final)
			return false;
	}
	if (!ulma_idmap_get(&c->func_index, UNKNOWN_ID, index) &&
	    (define(c, UNKNOWN_ID, ULMA_DEF_PY, "?", 1, "?", 1, 0) != 0 ||
	     !ulma_idmap_get(&c->func_index, UNKNOWN_ID, index)))
		return false;
found:
	*sid = c->canon[*index];
	return true;
}

/* Name a process when its first thread shows up, while it most likely
 * still runs: its command line, kept in the profile and, before its first
 * THREAD chunk, in the trace.  A process already gone stays unnamed. */
static int name_process(struct ulma_collector *c, uint32_t pid)
{
	char name[ULMA_PROC_NAME_MAX];
	if (ulma_pid_names_get(&c->profile.names, pid) || !ulma_proc_name_read(pid, name, sizeof(name)))
		return 0;
	int err = ulma_pid_names_set(&c->profile.names, pid, name, strlen(name));
	if (!err && c->writer)
		err = ulma_trace_process(c->writer, pid, name, strlen(name));
	return err;
}

static int open_thread(struct ulma_collector *c, struct ulma_collector_slot *cs, const struct ulma_shm_slot *slot)
{
	uint32_t index = c->profile.nthreads;
	int named = name_process(c, slot->pid);
	if (named)
		return set_error(c, named);
	int err = ulma_profile_add_thread(&c->profile, index, slot->serial, slot->pid, slot->tid);
	if (!err && c->writer)
		err = ulma_trace_stream_open(c->writer, slot->serial, slot->pid, slot->tid, &cs->stream);
	if (err)
		return set_error(c, err);
	cs->live = true;
	cs->serial = slot->serial;
	cs->thread = index;
	cs->depth = 0;
	cs->last_ticks = 0;
	cs->cpu = 0;
	stop_sampling(cs);
	if (c->sample_sched) {
		int fd = ulma_sampler_open(slot->pid, slot->tid);
		cs->sched_fd = fd >= 0 ? fd : -1;
		if (fd >= 0)
			ulma_gilwait_open(&cs->gil, slot->pid, slot->tid, slot->gil_addr, slot->gil_len);
		cs->sampled_ns = 0;
		cs->head_at_sample = UINT64_MAX;
	}
	return 0;
}

static void emit_exit(struct ulma_collector *c, struct ulma_collector_slot *cs, uint64_t t, uint32_t cpu)
{
	struct ulma_sched_clocks at;
	ulma_schedline_at(&cs->line, t, &at);
	cs->depth--;
	ulma_profile_exit_at(&c->profile, cs->thread, t, &at);
	if (cs->stream)
		ulma_trace_exit(cs->stream, t, cpu);
}

static void close_frames(struct ulma_collector *c, struct ulma_collector_slot *cs, uint64_t t)
{
	if (t < cs->last_ticks)
		t = cs->last_ticks;
	while (cs->depth)
		emit_exit(c, cs, t, cs->cpu);
	cs->last_ticks = t;
}

static void record_lost(struct ulma_collector *c, struct ulma_collector_slot *cs, uint64_t t,
			uint64_t count)
{
	ulma_profile_lost(&c->profile, cs->thread, t, count);
	if (cs->stream)
		ulma_trace_lost(cs->stream, t, count);
}

/* Apply one record.  Returns 1 if consumed, 0 to retry later, <0 on error. */
static int apply(struct ulma_collector *c, struct ulma_collector_slot *cs, const struct ulma_record *r,
		 bool final)
{
	uint64_t t = r->time < cs->last_ticks ? cs->last_ticks : r->time;
	uint32_t sid = r->id, index;
	switch (r->kind) {
	case ULMA_REC_ENTER:
		if (!resolve(c, &sid, &index, final))
			return 0;
		if (cs->depth == cs->cap) {
			uint32_t cap = cs->cap ? cs->cap * 2 : 64;
			uint32_t *ids = realloc(cs->ids, cap * sizeof(*ids));
			if (!ids)
				return set_error(c, -ENOMEM);
			cs->ids = ids;
			cs->cap = cap;
		}
		struct ulma_sched_clocks at;
		ulma_schedline_at(&cs->line, t, &at);
		if (ulma_profile_enter_at(&c->profile, cs->thread, index, t, &at))
			return set_error(c, -ENOMEM);
		if (cs->stream)
			ulma_trace_enter(cs->stream, t, r->cpu, sid, cs->depth ? cs->ids[cs->depth - 1] : 0);
		cs->ids[cs->depth++] = sid;
		break;
	case ULMA_REC_EXIT: {
		/* match on canonical ids; an exit whose id is unknown matches "?" */
		if (!resolve(c, &sid, &index, true))
			return 1;
		uint32_t d = cs->depth;
		while (d > 0 && cs->ids[d - 1] != sid)
			d--;
		if (d == 0) {
			c->unmatched++; /* entered before tracing began */
			return 1;
		}
		while (cs->depth >= d)
			emit_exit(c, cs, t, r->cpu);
		break;
	}
	case ULMA_REC_LOST:
		record_lost(c, cs, t, r->id);
		break;
	case ULMA_REC_STOP: /* a thread idle since its last event was inside its frames until now */
		close_frames(c, cs, t);
		return 1;
	default:
		c->unmatched++; /* unknown kind from a newer writer: skip */
		return 1;
	}
	cs->last_ticks = t;
	cs->cpu = r->cpu;
	return 1;
}

/* The process is gone: take the records it wrote after its last batch
 * publication.  They follow head in time order; a record from the ring's
 * previous lap is older than the last one consumed, and never-written
 * memory is zero, so the first record that breaks the order ends them. */
static long salvage(struct ulma_collector *c, struct ulma_collector_slot *cs,
		    const struct ulma_record *ring, uint64_t cap, uint64_t *tail)
{
	long n = 0;
	uint64_t floor = cs->last_ticks;
	for (uint32_t k = 0; k < ULMA_RING_BATCH && k < cap; k++) {
		struct ulma_record r = ring[*tail & (cap - 1)];
		if (r.kind < ULMA_REC_ENTER || r.kind > ULMA_REC_STOP || r.time < floor || r.time == 0)
			break;
		floor = r.time;
		if (apply(c, cs, &r, true) <= 0)
			break;
		(*tail)++;
		n++;
	}
	return n;
}

/* dead_at: 0, or the time the slot's process was found dead */
static long drain_slot(struct ulma_collector *c, uint32_t i, bool final, uint64_t dead_at)
{
	struct ulma_session *s = c->session;
	struct ulma_shm_slot *slot = &s->slots[i];
	struct ulma_collector_slot *cs = &c->slots[i];
	/* acquire: identity fields and, for CLOSED, the final head */
	uint32_t state = atomic_load_explicit(&slot->state, memory_order_acquire);
	if (state != ULMA_SLOT_ACTIVE && state != ULMA_SLOT_CLOSED)
		return 0;
	if (!cs->live || cs->serial != slot->serial) {
		int err = open_thread(c, cs, slot);
		if (err)
			return err;
	}
	uint64_t cap = ulma_session_capacity(s), tail, head, skipped;
	ulma_ring_readable(slot, cap, &tail, &head, &skipped);
	sample(c, cs, head, false);
	/* events after the newest sample wait for the next one, unless the
	 * thread can no longer be sampled */
	uint64_t horizon = cs->sched_fd >= 0 && !final && !dead_at ? ulma_schedline_last_ticks(&cs->line)
								 : UINT64_MAX;
	if (skipped)
		record_lost(c, cs, cs->last_ticks, skipped);
	const struct ulma_record *ring = ulma_session_ring(s, i);
	long n = 0;
	while (tail < head) {
		struct ulma_record r = ring[tail & (cap - 1)];
		if (r.time > horizon)
			break;
		int ok = apply(c, cs, &r, final);
		if (ok < 0)
			return ok;
		if (ok == 0)
			break;
		tail++;
		n++;
	}
	if ((final || dead_at) && state == ULMA_SLOT_ACTIVE && tail == head)
		n += salvage(c, cs, ring, cap, &tail);
	ulma_ring_consume(slot, tail);
	if ((state == ULMA_SLOT_CLOSED || dead_at) && tail == head) {
		close_frames(c, cs, dead_at ? dead_at : cs->last_ticks);
		stop_sampling(cs);
		cs->live = false;
		ulma_session_recycle_slot(s, i);
	}
	return n;
}

long ulma_collector_poll(struct ulma_collector *c, bool final)
{
	long total = 0;
	if (!c->overhead_ps) {
		c->overhead_ps = atomic_load_explicit(&c->session->hdr->overhead_ps, memory_order_relaxed);
		if (c->overhead_ps && c->writer)
			set_error(c, ulma_trace_overhead(c->writer, c->overhead_ps));
	}
	scan_defs(c, final);
	for (uint32_t i = 0; i < c->session->hdr->slot_count; i++) {
		long n = drain_slot(c, i, final, 0);
		if (n < 0)
			return n;
		total += n;
	}
	c->records += (uint64_t)total;
	return c->error ? c->error : total;
}

int ulma_collector_reap(struct ulma_collector *c, uint64_t now_ticks)
{
	int freed = 0;
	for (uint32_t i = 0; i < c->session->hdr->slot_count; i++) {
		struct ulma_shm_slot *slot = &c->session->slots[i];
		if (!c->slots[i].live ||
		    atomic_load_explicit(&slot->state, memory_order_acquire) != ULMA_SLOT_ACTIVE)
			continue;
		/* a zombie still answers: only a reaped process is gone for good */
		if (slot->pid == 0 || kill((pid_t)slot->pid, 0) == 0 || errno != ESRCH)
			continue;
		if (drain_slot(c, i, true, now_ticks ? now_ticks : 1) >= 0 && !c->slots[i].live)
			freed++;
	}
	return freed;
}

void ulma_collector_close_all(struct ulma_collector *c, uint64_t end_ticks)
{
	for (uint32_t i = 0; i < c->session->hdr->slot_count; i++)
		if (c->slots[i].live)
			close_frames(c, &c->slots[i], end_ticks);
	ulma_profile_finish(&c->profile, end_ticks);
}
