/* collector.c - ring draining and stack normalisation (see collector.h). */
#include "collector.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../analysis/schedline.h"
#include "../core/clock.h"
#include "collector_defs.h"
#include "collector_lines.h"
#include "collector_memory.h"
#include "../core/mpi_event.h"
#include "../analysis/profile_lines.h"
#include "../analysis/profile_memory.h"
#include "collector_native.h"
#include "gilwait.h"
#include "proc_name.h"
#include "sampler.h"
#include "ulma/shm.h"

#define SAMPLE_BUSY_NS 1000000u   /* schedstat period of a thread with new events */
#define SAMPLE_IDLE_NS 10000000u  /* and of one without */
#define PREFETCH_RECORDS 16       /* read the ring this far ahead: the writer's core holds its lines */
#define MEMORY_AHEAD 8            /* fetch the live-block table's line of the memory record this far ahead */

struct ulma_collector_slot {
	bool live;
	uint32_t state;  /* the slot's state when the current poll began */
	uint64_t head;   /* and its head then */
	uint64_t serial;
	uint32_t thread; /* dense thread index */
	struct ulma_trace_stream *stream;
	uint64_t last_ticks;
	uint64_t claimed_at;
	uint32_t pid;
	uint32_t cpu;
	uint64_t value_bits;  /* the counter value the VALUE records so far gave */
	unsigned value_parts; /* which halves of it: bit 0 high, bit 1 low */
	uint32_t twins_open;  /* Cython's reports of native frames, dropped (cython_twin) */
	struct ulma_collector_mem mem; /* a MEM_SIZE waiting for its ALLOC (collector_memory.h) */
	uint64_t mpi_args[ULMA_MPI_ARGS_MAX]; /* the MPI_ARG records of the MPI event to come */
	unsigned mpi_nargs;
	struct native_seen *native_cache; /* NATIVE_CACHE recent addresses, NULL until the first */
	struct ulma_offcpu_thread *off; /* switch records of the thread, or NULL */
	/* schedstat sampling */
	int sched_fd;            /* schedstat of the thread, -1 if none */
	struct ulma_gilwait gil; /* its GIL waits, where they can be told apart */
	struct ulma_schedline line;
	uint64_t sampled_ns;     /* CLOCK_MONOTONIC of the last sample */
	uint64_t head_at_sample; /* ring head at the last sample */
};

/* A thread's recent native functions: address -> dense index, direct
 * mapped, so a native record costs what a Python one does (the table of
 * every process's addresses, collector_native.c, is a hash lookup away). */
#define NATIVE_CACHE 512 /* a power of two */
struct native_seen {
	uint64_t addr; /* 0: empty */
	uint32_t index;
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
	ulma_offcpu_free(&c->off);
	ulma_profile_free(&c->profile);
	memset(c, 0, sizeof(*c));
}

/* Name a process when its first thread shows up, while it most likely
 * still runs: its command line, kept in the profile and, before its first
 * THREAD chunk, in the trace with its parent's pid.  A process already
 * gone stays unnamed. */
static int name_process(struct ulma_collector *c, uint32_t pid)
{
	char name[ULMA_PROC_NAME_MAX];
	if (ulma_pid_names_get(&c->profile.names, pid) || !ulma_proc_name_read(pid, name, sizeof(name)))
		return 0;
	int err = ulma_pid_names_set(&c->profile.names, pid, name, strlen(name));
	if (!err && c->writer)
		err = ulma_trace_process(c->writer, pid, ulma_proc_ppid_read(pid), name, strlen(name));
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
	cs->last_ticks = 0;
	cs->claimed_at = slot->claimed_at;
	cs->pid = slot->pid;
	cs->cpu = 0;
	cs->twins_open = 0;
	cs->mem.sized = false;
	if (cs->native_cache) /* a slot's new owner may be another process */
		memset(cs->native_cache, 0, NATIVE_CACHE * sizeof(*cs->native_cache));
	cs->off = NULL;
	stop_sampling(cs);
	if (c->split == ULMA_SPLIT_SWITCHES) {
		cs->off = ulma_offcpu_claim(&c->off, slot->pid, slot->tid, slot->gil_addr, slot->gil_len,
					    slot->claimed_at);
		if (!cs->off)
			return set_error(c, -ENOMEM);
		if (cs->off->gil.fd >= 0)
			c->profile.has_gil = 1;
	} else if (c->split == ULMA_SPLIT_SCHEDSTAT) {
		int fd = ulma_sampler_open(slot->pid, slot->tid);
		cs->sched_fd = fd >= 0 ? fd : -1;
		if (fd >= 0)
			ulma_gilwait_open(&cs->gil, slot->pid, slot->tid, slot->gil_addr, slot->gil_len);
		cs->sampled_ns = 0;
		cs->head_at_sample = UINT64_MAX;
	}
	return 0;
}

/* Merge the thread's off-CPU intervals that end by `t` into its stream. */
static void merge_off(struct ulma_collector *c, struct ulma_collector_slot *cs, uint64_t t, enum ulma_offcpu_at at)
{
	struct ulma_offcpu_interval iv;
	while (ulma_offcpu_until(cs->off, t, at, &iv, &c->off.clock)) {
		bool runnable = iv.state == ULMA_OFF_RUNNABLE;
		ulma_profile_off(&c->profile, cs->thread, runnable ? 0 : iv.ns, runnable ? iv.ns : 0,
				 iv.state == ULMA_OFF_GIL ? iv.ns : 0, !runnable, runnable);
		if (cs->stream)
			ulma_trace_off(cs->stream, iv.ticks, iv.state, iv.ns);
	}
}

/* Schedstat: the thread's off-CPU time up to `t`, interpolated. */
static void sampled_off(struct ulma_collector *c, struct ulma_collector_slot *cs, uint64_t t)
{
	struct ulma_schedline_off o;
	if (ulma_schedline_off(&cs->line, t, c->ns_per_tick, &o))
		ulma_profile_off(&c->profile, cs->thread, o.blocked_ns, o.runnable_ns, o.gil_ns, 0, 0);
}

/* Everything known about the thread's time off its CPU up to `t`. */
static void off_until(struct ulma_collector *c, struct ulma_collector_slot *cs, uint64_t t, enum ulma_offcpu_at at)
{
	if (cs->off)
		merge_off(c, cs, t, at);
	else if (cs->sched_fd >= 0 || !ulma_schedline_empty(&cs->line))
		sampled_off(c, cs, t);
}

static void emit_exit(struct ulma_collector *c, struct ulma_collector_slot *cs, uint64_t t, uint32_t cpu)
{
	ulma_profile_exit(&c->profile, cs->thread, t);
	if (cs->stream)
		ulma_trace_exit(cs->stream, t, cpu);
}

/* End the thread's open frames at t (at: what t says of the thread: with
 * ULMA_OFFCPU_ENDS, an interval off its CPU in progress ends there too). */
static void close_frames(struct ulma_collector *c, struct ulma_collector_slot *cs, uint64_t t, enum ulma_offcpu_at at)
{
	if (t < cs->last_ticks)
		t = cs->last_ticks;
	off_until(c, cs, t, at);
	while (c->profile.threads[cs->thread].depth)
		emit_exit(c, cs, t, cs->cpu);
	cs->last_ticks = t;
}

static void record_lost(struct ulma_collector *c, struct ulma_collector_slot *cs, uint64_t t, uint64_t count)
{
	ulma_profile_lost(&c->profile, cs->thread, t, count);
	if (cs->stream)
		ulma_trace_lost(cs->stream, t, count);
}

/* An exit that is not the top frame's: one that matches a deeper frame
 * closes the frames above it (resynchronising after a loss); one that
 * matches none is dropped (entered before tracing began).  Returns false
 * for the latter. */
static bool exit_deeper(struct ulma_collector *c, struct ulma_collector_slot *cs, uint32_t index, uint64_t t,
			uint32_t cpu)
{
	const struct ulma_thread_row *th = &c->profile.threads[cs->thread];
	uint32_t d = th->depth;
	while (d > 0 && th->stack[d - 1].func != index)
		d--;
	if (d == 0) {
		if (th->depth) /* with frames open, a stray exit (without any, tracing began inside it) */
			c->resynced++;
		return false;
	}
	c->resynced += th->depth - d; /* the frames above it left without their exit */
	while (th->depth >= d)
		emit_exit(c, cs, t, cpu);
	return true;
}

/* Cython's profile=True reports each Cython function to the interpreter's
 * profiling hook as a Python-level call of a .pyx code object; built with
 * -finstrument-functions too, the same call is already a native frame,
 * Cython's C function (__pyx_...), inside which Cython's own helper
 * (__Pyx_TraceSetupAndCall, __Pyx_TraceReturn) makes the report.
 * Such an entry is the native frame's twin: dropped, with its exit, so
 * each call counts once (docs/native.md, "Cython").  Only .pyx functions
 * come here: the collector keeps their ids out of its dense array, so the
 * hot path's first test sends them to the slow path. */
#define CYTHON_TWIN_DEPTH 4 /* native frames looked through for Cython's */
static bool cython_twin_enter(struct ulma_collector *c, struct ulma_collector_slot *cs, uint32_t idx)
{
	const struct ulma_thread_row *th = &c->profile.threads[cs->thread];
	if (!c->profile.funcs[idx].pyx)
		return false;
	/* the native frames on top: Cython's own, or on 3.13+ the interpreter's
	 * inline monitoring helpers (PyMonitoring_Fire...) it calls */
	for (uint32_t d = th->depth, seen = 0; d > 0 && seen < CYTHON_TWIN_DEPTH; d--, seen++) {
		const struct ulma_func_row *f = &c->profile.funcs[th->stack[d - 1].func];
		if (f->kind != ULMA_DEF_NATIVE)
			return false;
		if (strncasecmp(f->name, "__pyx_", 6) == 0) {
			cs->twins_open++;
			return true;
		}
	}
	return false;
}

static bool cython_twin_exit(struct ulma_collector *c, struct ulma_collector_slot *cs, uint32_t idx)
{
	if (!c->profile.funcs[idx].pyx || !cs->twins_open || c->profile.threads[cs->thread].top == idx)
		return false;
	cs->twins_open--;
	return true;
}

/* The function address a native record carries (shm.h). */
static inline uint64_t native_addr(const struct ulma_record *r)
{
	return (uint64_t)r->id | (uint64_t)r->cpu << 32;
}

/* Records whose cpu field is the CPU (native, value and memory records use it for data). */
static inline bool has_cpu(uint8_t kind)
{
	return kind != ULMA_REC_NATIVE_ENTER && kind != ULMA_REC_NATIVE_EXIT && kind != ULMA_REC_VALUE &&
	       (kind < ULMA_REC_MEM_SIZE || kind > ULMA_REC_ALLOC_SMALL) && kind != ULMA_REC_MPI_ARG;
}

/* An allocation or free record (--memory): its block's address, to prefetch. */
static inline bool mem_addr(const struct ulma_record *r, uint64_t *addr)
{
	if (r->kind == ULMA_REC_ALLOC_SMALL) {
		*addr = native_addr(r) & ~(uint64_t)15;
		return true;
	}
	*addr = native_addr(r);
	return r->kind == ULMA_REC_ALLOC || r->kind == ULMA_REC_FREE;
}

/* The dense index of the native function at addr, of the thread's cache
 * or named now (collector_native.c).  UINT32_MAX when out of memory. */
static uint32_t native_miss(struct ulma_collector *c, struct ulma_collector_slot *cs, uint64_t addr)
{
	if (!cs->native_cache && !(cs->native_cache = calloc(NATIVE_CACHE, sizeof(*cs->native_cache)))) {
		set_error(c, -ENOMEM);
		return UINT32_MAX;
	}
	uint32_t idx = ulma_collector_native(c, cs->pid, addr);
	if (idx != UINT32_MAX)
		cs->native_cache[(addr >> 4) & (NATIVE_CACHE - 1)] = (struct native_seen){addr, idx};
	return idx;
}

/* A mark (instant, counter, thread name) goes to the trace as it came. */
static void apply_mark(struct ulma_collector *c, struct ulma_collector_slot *cs, const struct ulma_record *r,
		       uint64_t t)
{
	unsigned ext = r->kind == ULMA_REC_INSTANT ? ULMA_EXT_INSTANT
		       : r->kind == ULMA_REC_COUNTER ? ULMA_EXT_COUNTER
						     : ULMA_EXT_THREAD_NAME;
	double value = 0;
	if (ext == ULMA_EXT_COUNTER) {
		if (cs->value_parts != 3) /* its value was lost */
			return;
		memcpy(&value, &cs->value_bits, sizeof(value));
		cs->value_parts = 0;
	}
	uint32_t idx = ulma_collector_resolve(c, r->id, true);
	if (idx == UINT32_MAX)
		return;
	if (cs->stream)
		ulma_trace_mark(cs->stream, t, ext, idx + 1, value);
	if (ext == ULMA_EXT_THREAD_NAME)
		set_error(c, ulma_profile_thread_name(&c->profile, cs->thread, c->profile.funcs[idx].name));
}

/* The records that are not an enter or an exit.  Returns false if the
 * record changes no time (it was skipped). */
static bool apply_rare(struct ulma_collector *c, struct ulma_collector_slot *cs, const struct ulma_record *r,
		       uint64_t t)
{
	switch (r->kind) {
	case ULMA_REC_LOST:
		record_lost(c, cs, t, r->id);
		cs->mpi_nargs = 0; /* arguments before a loss belong to an MPI event that was lost */
		return true;
	case ULMA_REC_STOP: /* a thread idle since its last event was inside its frames until now */
		close_frames(c, cs, t, ULMA_OFFCPU_ENDS);
		return false;
	case ULMA_REC_VALUE:
		if (r->cpu > 1)
			return false;
		if (r->cpu == 0)
			cs->value_bits = (uint64_t)r->id << 32 | (cs->value_bits & 0xffffffffu);
		else
			cs->value_bits = (cs->value_bits & ~UINT64_C(0xffffffff)) | r->id;
		cs->value_parts = r->cpu == 0 ? 1u : cs->value_parts | 2u;
		return false;
	case ULMA_REC_INSTANT:
	case ULMA_REC_COUNTER:
	case ULMA_REC_THREAD_NAME:
		apply_mark(c, cs, r, t);
		return true;
	case ULMA_REC_MPI_ARG: /* the arguments of the MPI_EVENT that follows (shm.h) */
		if (cs->mpi_nargs < ULMA_MPI_ARGS_MAX)
			cs->mpi_args[cs->mpi_nargs++] = native_addr(r);
		return false;
	case ULMA_REC_MPI_EVENT: /* to the trace as it came, not an event of the profile */
		if (cs->stream)
			ulma_trace_mpi(cs->stream, t, r->id, cs->mpi_args, cs->mpi_nargs);
		cs->mpi_nargs = 0;
		return true;
	case ULMA_REC_LINE:
	case ULMA_REC_LINE_RESUME:
		ulma_collector_line(c, cs->thread, cs->pid, cs->stream, t, r->id, r->kind == ULMA_REC_LINE_RESUME);
		return true;
	case ULMA_REC_OBJ_NEW:
	case ULMA_REC_OBJ_FREE:
		set_error(c, ulma_collector_object(c, cs->thread, cs->stream, r->kind == ULMA_REC_OBJ_NEW, r->id, t));
		return true;
	default: /* unknown kind from a newer writer: skip */
		return false;
	}
}

/* The records at which schedstat's off-CPU time is interpolated: those that
 * are events of the trace (ulma_profile_feed_event interpolates at those
 * alone), so that `ulma report` splits the time at the same points and gives
 * the same figures to the nanosecond.  Marks, memory, values and MPI records
 * are not events. */
#define SAMPLED_AT                                                                                             \
	(1u << ULMA_REC_ENTER | 1u << ULMA_REC_EXIT | 1u << ULMA_REC_NATIVE_ENTER | 1u << ULMA_REC_NATIVE_EXIT | \
	 1u << ULMA_REC_LINE | 1u << ULMA_REC_LINE_RESUME | 1u << ULMA_REC_LOST)

/* How a thread's records are applied: what apply_loop is specialised for. */
enum apply_mode {
	APPLY_STREAM = 1u << 0,   /* there is a trace stream to append to */
	APPLY_SWITCHES = 1u << 1, /* off-CPU intervals from switch records */
	APPLY_SAMPLED = 1u << 2,  /* off-CPU time interpolated from schedstat */
};

/* Apply the records [from, end) (contiguous in the ring), up to `horizon`
 * ticks; stop early at an entry whose definition has not arrived (unless
 * final).  Returns the number consumed.  This loop is the monitor's
 * per-event cost: it is compiled once per mode, so that each copy holds
 * only what its mode needs in registers, and it walks a pointer. */
static inline __attribute__((always_inline)) long
apply_loop(struct ulma_collector *c, struct ulma_collector_slot *cs, const struct ulma_record *from,
	   const struct ulma_record *end, uint64_t horizon, bool final, const unsigned mode)
{
	struct ulma_profile *p = &c->profile;
	const uint32_t thread = cs->thread;
	const struct ulma_thread_row *th = &p->threads[thread];
	struct ulma_trace_stream *st = cs->stream;
	struct ulma_trace_cursor cur = {0};
	const uint32_t *by_id = c->by_id;
	uint32_t nby_id = c->nby_id;
	const struct ulma_record *r = from;
	uint64_t last = cs->last_ticks;
	uint64_t wake = (mode & APPLY_SWITCHES) ? cs->off->wake_at : UINT64_MAX; /* next work for the switches */
	if (mode & APPLY_STREAM)
		ulma_trace_cursor_get(st, &cur);
/* around anything that writes to the stream other than the cursor */
#define CURSOR_PUT() ((mode & APPLY_STREAM) ? ulma_trace_cursor_put(st, &cur) : (void)0)
#define CURSOR_GET() ((mode & APPLY_STREAM) ? ulma_trace_cursor_get(st, &cur) : (void)0)
	for (; r < end; r++) {
		if (((uintptr_t)r & 63) == 0 && r + PREFETCH_RECORDS < end) /* a line the writer has finished */
			__builtin_prefetch(r + PREFETCH_RECORDS);
		uint64_t t = r->time > last ? r->time : last;
		uint32_t sid = r->id, idx;
		if (mode & APPLY_SAMPLED) {
			if (t > horizon)
				break;
			if (r->kind < 32 && (SAMPLED_AT >> r->kind & 1))
				sampled_off(c, cs, t);
		}
		if ((mode & APPLY_SWITCHES) && ULMA_UNLIKELY(t >= wake)) {
			CURSOR_PUT();
			merge_off(c, cs, t, r->flags & ULMA_RECF_PROXY ? ULMA_OFFCPU_SAYS_NOTHING : ULMA_OFFCPU_RUNNING);
			CURSOR_GET();
			wake = cs->off->wake_at;
		}
		/* which function the record enters or leaves, on which CPU */
		uint32_t cpu = r->cpu;
		bool enter;
		if (ULMA_LIKELY(r->kind == ULMA_REC_ENTER)) {
			if (ULMA_LIKELY(sid < nby_id && by_id[sid])) {
				idx = by_id[sid] - 1;
			} else {
				idx = ulma_collector_resolve(c, sid, final);
				by_id = c->by_id; /* the table may have grown */
				nby_id = c->nby_id;
				if (idx == UINT32_MAX)
					break; /* its definition is on its way */
				if (ULMA_UNLIKELY(cython_twin_enter(c, cs, idx)))
					continue;
			}
			enter = true;
		} else if (r->kind == ULMA_REC_EXIT) {
			if (ULMA_LIKELY(sid < nby_id && by_id[sid])) {
				idx = by_id[sid] - 1;
			} else {
				idx = ulma_collector_resolve(c, sid, true); /* an unknown exit matches "?" */
				by_id = c->by_id;
				nby_id = c->nby_id;
				if (ULMA_UNLIKELY(cython_twin_exit(c, cs, idx)))
					continue;
			}
			enter = false;
		} else if (r->kind == ULMA_REC_NATIVE_ENTER || r->kind == ULMA_REC_NATIVE_EXIT) {
			/* its CPU is the thread's last known (shm.h) */
			uint64_t addr = native_addr(r);
			const struct native_seen *seen =
				cs->native_cache ? &cs->native_cache[(addr >> 4) & (NATIVE_CACHE - 1)] : NULL;
			if (ULMA_LIKELY(seen && seen->addr == addr)) {
				idx = seen->index;
			} else {
				CURSOR_PUT();
				idx = native_miss(c, cs, addr);
				CURSOR_GET();
				by_id = c->by_id; /* definitions were read meanwhile */
				nby_id = c->nby_id;
				th = &p->threads[thread];
				if (idx == UINT32_MAX)
					break;
			}
			cpu = (mode & APPLY_STREAM) ? cur.cpu : cs->cpu;
			enter = r->kind == ULMA_REC_NATIVE_ENTER;
		} else {
			if ((r->kind >= ULMA_REC_MEM_SIZE && r->kind <= ULMA_REC_FREE) ||
			    r->kind == ULMA_REC_ALLOC_SMALL) { /* --memory */
				const struct ulma_record *ahead = r + MEMORY_AHEAD;
				uint64_t addr;
				if (ahead < end && mem_addr(ahead, &addr) && p->memory)
					ulma_profile_mem_prefetch(p, thread, addr);
				struct ulma_collector_block b;
				if (p->memory && ulma_collector_mem_decode(&cs->mem, r, &b, &p->memory->unmatched_allocs)) {
					bool due = false;
					if (mode & APPLY_STREAM)
						ulma_trace_cursor_memory(st, &cur, t, b.alloc, b.addr, b.size, b.domain);
					set_error(c, ulma_collector_memory(c, cs->thread, mode & APPLY_STREAM, &b, t, &due));
					if (ULMA_UNLIKELY(due)) { /* they go to the stream: after the block's record */
						CURSOR_PUT();
						set_error(c, ulma_collector_memory_counters(c, cs->thread, cs->stream, t));
						CURSOR_GET();
					}
				} /* else a MEM_SIZE, or not asked for: a foreign writer's */
				last = t;
				continue;
			}
			if ((r->kind == ULMA_REC_LINE || r->kind == ULMA_REC_LINE_RESUME) && th->depth &&
			    p->funcs[th->top].line_rows) { /* a line of a function seen before (else: copy its source) */
				bool resumed = r->kind == ULMA_REC_LINE_RESUME;
				if (ULMA_UNLIKELY(ulma_profile_line(p, thread, t, sid, !resumed))) {
					set_error(c, -ENOMEM);
					break;
				}
				if (mode & APPLY_STREAM)
					ulma_trace_cursor_line(st, &cur, t, cpu, sid, resumed);
				last = t;
				continue;
			}
			cs->last_ticks = last;
			if (r > from && has_cpu(r[-1].kind))
				cs->cpu = r[-1].cpu;
			CURSOR_PUT();
			bool timed = apply_rare(c, cs, r, t);
			CURSOR_GET();
			if (mode & APPLY_SWITCHES)
				wake = cs->off->wake_at;
			last = timed ? t : cs->last_ticks; /* a STOP closed the frames */
			th = &p->threads[thread];
			continue;
		}
		if (enter) {
			bool same = th->top == idx;
			if (ULMA_UNLIKELY(ulma_profile_enter(p, thread, idx, t))) {
				set_error(c, -ENOMEM);
				break;
			}
			th = &p->threads[thread];
			if (mode & APPLY_STREAM)
				ulma_trace_cursor_enter(st, &cur, t, cpu, idx + 1, same);
		} else if (ULMA_LIKELY(th->top == idx)) {
			ulma_profile_exit(p, thread, t);
			if (mode & APPLY_STREAM)
				ulma_trace_cursor_exit(st, &cur, t, cpu);
		} else {
			CURSOR_PUT();
			bool matched = exit_deeper(c, cs, idx, t, cpu);
			CURSOR_GET();
			if (!matched)
				continue;
		}
		last = t;
	}
	CURSOR_PUT();
#undef CURSOR_PUT
#undef CURSOR_GET
	cs->last_ticks = last;
	if (r > from && has_cpu(r[-1].kind))
		cs->cpu = r[-1].cpu; /* the CPU the thread was last seen on */
	return (long)(r - from);
}

static long apply_span(struct ulma_collector *c, struct ulma_collector_slot *cs, const struct ulma_record *from,
		       const struct ulma_record *end, uint64_t horizon, bool final)
{
	bool stream = cs->stream != NULL;
	if (cs->off)
		return stream ? apply_loop(c, cs, from, end, horizon, final, APPLY_STREAM | APPLY_SWITCHES)
			      : apply_loop(c, cs, from, end, horizon, final, APPLY_SWITCHES);
	if (cs->sched_fd >= 0 || !ulma_schedline_empty(&cs->line))
		return apply_loop(c, cs, from, end, horizon, final, (stream ? APPLY_STREAM : 0) | APPLY_SAMPLED);
	return stream ? apply_loop(c, cs, from, end, horizon, final, APPLY_STREAM)
		      : apply_loop(c, cs, from, end, horizon, final, 0);
}

/* Apply records [*tail, head) of the ring (of mask + 1 records), in the
 * one or two contiguous spans they make. */
static long apply_records(struct ulma_collector *c, struct ulma_collector_slot *cs, const struct ulma_record *ring,
			  uint64_t mask, uint64_t *tailp, uint64_t head, uint64_t horizon, bool final)
{
	long n = 0;
	while (*tailp < head) {
		uint64_t at = *tailp & mask, len = head - *tailp;
		if (len > mask + 1 - at)
			len = mask + 1 - at; /* up to the ring's end; the rest from its start */
		long done = apply_span(c, cs, ring + at, ring + at + len, horizon, final);
		*tailp += (uint64_t)done;
		n += done;
		if ((uint64_t)done < len)
			break;
	}
	return n;
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
		n += apply_records(c, cs, ring, mask, tailp, next, horizon, final);
		if (*tailp < next)
			break; /* stopped early: a definition on its way, or the horizon */
		set_error(c, ulma_collector_rss_write(c, cs->pid, cs->stream, ring[next & mask].time - 1));
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
		uint64_t at = 0;
		if (apply_records(c, cs, &r, 0, &at, 1, UINT64_MAX, true) != 1)
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

/* Give a finished slot back to the writers. */
static void finish_slot(struct ulma_collector *c, struct ulma_collector_slot *cs, uint32_t i, uint64_t end,
			enum ulma_offcpu_at at)
{
	if (c->nrss) /* the RSS samples of its life, */
		set_error(c, ulma_collector_rss_write(c, cs->pid, cs->stream, end));
	close_frames(c, cs, end, at);
	if (c->nrss && at == ULMA_OFFCPU_ENDS) /* and after its end if its process is gone */
		set_error(c, ulma_collector_rss_write(c, cs->pid, cs->stream, UINT64_MAX));
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
		record_lost(c, cs, cs->last_ticks, head - tail - cap);
		tail = head - cap;
	}
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
	n += apply_records(c, cs, ring, cap - 1, &tail, head, horizon, final);
	if ((final || dead_at) && cs->state == ULMA_SLOT_ACTIVE && tail == head)
		n += salvage(c, cs, ring, cap, &tail);
	ulma_ring_consume(slot, tail);
	if ((cs->state == ULMA_SLOT_CLOSED || dead_at) && tail == head)
		finish_slot(c, cs, i, dead_at ? dead_at : cs->last_ticks,
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
	if (!c->overhead_ps) {
		c->overhead_ps = atomic_load_explicit(&c->session->hdr->overhead_ps, memory_order_relaxed);
		if (c->overhead_ps && c->writer)
			set_error(c, ulma_trace_overhead(c->writer, c->overhead_ps));
	}
	ulma_collector_scan_defs(c, final);
	uint64_t rss_round = ulma_collector_rss_due(c);
	uint32_t used = slots_in_use(c);
	for (uint32_t i = 0; i < used; i++)
		if (snapshot_slot(c, i) < 0)
			return c->error;
	if (c->switches) {
		long r = ulma_offcpu_read(&c->off, c->switches);
		if (r < 0)
			set_error(c, (int)r);
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
			set_error(c, ulma_collector_rss(c, c->slots[i].pid, c->slots[i].stream, c->slots[i].last_ticks,
							rss_round));
	c->records += (uint64_t)total;
	return c->error ? c->error : total;
}

int ulma_collector_reap(struct ulma_collector *c, uint64_t now_ticks)
{
	int freed = 0;
	uint32_t used = slots_in_use(c);
	for (uint32_t i = 0; i < used; i++) {
		struct ulma_shm_slot *slot = &c->session->slots[i];
		if (!c->slots[i].live ||
		    atomic_load_explicit(&slot->state, memory_order_acquire) != ULMA_SLOT_ACTIVE)
			continue;
		/* a zombie still answers: only a reaped process is gone for good */
		if (slot->pid == 0 || kill((pid_t)slot->pid, 0) == 0 || errno != ESRCH)
			continue;
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
		if (c->nrss) /* the RSS samples still held, before the frames close */
			set_error(c, ulma_collector_rss_write(c, c->slots[i].pid, c->slots[i].stream, end_ticks));
		close_frames(c, &c->slots[i], end_ticks, ULMA_OFFCPU_ENDS);
	}
	set_error(c, ulma_collector_rss_write_all(c)); /* of processes whose threads all ended */
	ulma_profile_finish(&c->profile, end_ticks);
}
