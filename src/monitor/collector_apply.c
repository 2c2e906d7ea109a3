/* collector_apply.c - a thread's records applied (see collector_slot.h):
 * each record's function mapped to its dense index, the profile's enter
 * and exit, the stream's appends, and around them the rarer work: off-CPU
 * intervals merged where they fall (switch records) or interpolated
 * (schedstat), exits resynchronised after a loss, Cython's twin frames
 * dropped, native addresses named, marks, values, memory, lines and MPI
 * events.  The per-record loop here is the monitor's per-event cost
 * (docs/design.md, "The monitor's per-event work"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../analysis/profile_lines.h"
#include "../analysis/profile_memory.h"
#include "collector_calls.h"
#include "collector_defs.h"
#include "collector_lines.h"
#include "collector_native.h"
#include "collector_slot.h"

#define MEMORY_AHEAD 16     /* fetch the live-block table's chunk slot of a free this far ahead, its entry at half */

/* Merge the thread's off-CPU intervals that end by `t` into its stream. */
static void merge_off(struct ulma_collector *c, struct ulma_collector_slot *cs, uint64_t t, enum ulma_offcpu_at at)
{
	struct ulma_offcpu_interval iv;
	while (ulma_offcpu_until(cs->off, t, at, &iv, &c->off.clock)) {
		bool runnable = iv.state == ULMA_OFF_RUNNABLE;
		ulma_profile_off(&c->profile, cs->thread, runnable ? 0 : iv.ns, runnable ? iv.ns : 0,
				 iv.state == ULMA_OFF_GIL ? iv.ns : 0, !runnable, runnable);
		if (cs->stream)
			ulma_trace_off(cs->stream, iv.ticks, iv.cpu == ULMA_OFFCPU_NO_CPU ? ULMA_TRACE_SAME_CPU : iv.cpu,
				       iv.state, iv.ns);
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
void ulma_collector_close_frames(struct ulma_collector *c, struct ulma_collector_slot *cs, uint64_t t,
				 enum ulma_offcpu_at at)
{
	if (t < cs->last_ticks)
		t = cs->last_ticks;
	off_until(c, cs, t, at);
	while (c->profile.threads[cs->thread].depth)
		emit_exit(c, cs, t, cs->cpu);
	cs->last_ticks = t;
}

void ulma_collector_record_lost(struct ulma_collector *c, struct ulma_collector_slot *cs, uint64_t t, uint64_t count)
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

/* The dense index of the native function at addr, of the thread's cache
 * or named now (collector_native.c).  UINT32_MAX when out of memory;
 * ULMA_COLLECTOR_UNDEFINED (counted refused) for address 0, which no
 * function has. */
static uint32_t native_miss(struct ulma_collector *c, struct ulma_collector_slot *cs, uint64_t addr)
{
	if (!addr) {
		c->refused++;
		return ULMA_COLLECTOR_UNDEFINED;
	}
	if (!cs->native_cache) {
		if (!(cs->native_cache = malloc(NATIVE_CACHE * sizeof(*cs->native_cache)))) {
			ulma_collector_set_error(c, -ENOMEM);
			return UINT32_MAX;
		}
		ulma_collector_native_forget(cs->native_cache);
	}
	uint32_t idx = ulma_collector_native(c, cs->pid, addr);
	if (idx != UINT32_MAX)
		cs->native_cache[ulma_collector_native_slot(addr)] = (struct native_seen){addr, idx};
	return idx;
}

/* What became of a record that is not an enter or an exit. */
enum rare_applied {
	RARE_UNTIMED, /* applied or refused: it changes no time */
	RARE_TIMED,   /* applied at its time */
	RARE_WAIT,    /* the definition it names is on its way: stop before it */
};

/* Session id `id`, which a record of kind `kind` names, as the dense index
 * of a definition of `want`; ULMA_COLLECTOR_WAIT while it is on its way,
 * ULMA_COLLECTOR_UNDEFINED (counted refused) if it is not one. */
static uint32_t named(struct ulma_collector *c, uint32_t id, uint8_t want, bool final)
{
	uint32_t idx = ulma_collector_resolve(c, id, final);
	if (idx == ULMA_COLLECTOR_WAIT)
		return idx;
	if (idx == ULMA_COLLECTOR_UNDEFINED || c->profile.funcs[idx].kind != want) {
		c->refused++;
		return ULMA_COLLECTOR_UNDEFINED;
	}
	return idx;
}

/* A mark (instant, counter, thread name) goes to the trace as it came. */
static enum rare_applied apply_mark(struct ulma_collector *c, struct ulma_collector_slot *cs,
				    const struct ulma_record *r, uint64_t t, bool final)
{
	unsigned ext = r->kind == ULMA_REC_INSTANT ? ULMA_EXT_INSTANT
		       : r->kind == ULMA_REC_COUNTER ? ULMA_EXT_COUNTER
						     : ULMA_EXT_THREAD_NAME;
	uint32_t idx = named(c, r->id, ULMA_DEF_MARK, final);
	if (idx == ULMA_COLLECTOR_WAIT)
		return RARE_WAIT;
	double value = 0;
	if (ext == ULMA_EXT_COUNTER) {
		bool whole = cs->value_parts == 3;
		memcpy(&value, &cs->value_bits, sizeof(value));
		cs->value_parts = 0;
		if (!whole) /* its value was lost */
			return RARE_TIMED;
	}
	if (idx == ULMA_COLLECTOR_UNDEFINED)
		return RARE_UNTIMED;
	if (cs->stream)
		ulma_trace_mark(cs->stream, t, ext, idx + 1, value);
	if (ext == ULMA_EXT_THREAD_NAME)
		ulma_collector_set_error(c, ulma_profile_thread_name(&c->profile, cs->thread, c->profile.funcs[idx].name));
	return RARE_TIMED;
}

/* The records that are not an enter or an exit, nor memory.  A record
 * that breaks the format (shm.h) is refused: counted in c->refused and
 * dropped. */
static enum rare_applied apply_rare(struct ulma_collector *c, struct ulma_collector_slot *cs,
				    const struct ulma_record *r, uint64_t t, bool final)
{
	switch (r->kind) {
	case ULMA_REC_LOST:
		ulma_collector_record_lost(c, cs, t, r->id);
		cs->mpi_nargs = 0; /* arguments before a loss belong to an MPI event that was lost */
		return RARE_TIMED;
	case ULMA_REC_STOP: /* a thread idle since its last event was inside its frames until now */
		ulma_collector_close_frames(c, cs, t, ULMA_OFFCPU_ENDS);
		return RARE_UNTIMED;
	case ULMA_REC_VALUE:
		if (r->cpu > 1) {
			c->refused++;
			return RARE_UNTIMED;
		}
		if (r->cpu == 0)
			cs->value_bits = (uint64_t)r->id << 32 | (cs->value_bits & 0xffffffffu);
		else
			cs->value_bits = (cs->value_bits & ~UINT64_C(0xffffffff)) | r->id;
		cs->value_parts = r->cpu == 0 ? 1u : cs->value_parts | 2u;
		return RARE_UNTIMED;
	case ULMA_REC_INSTANT:
	case ULMA_REC_COUNTER:
	case ULMA_REC_THREAD_NAME:
		return apply_mark(c, cs, r, t, final);
	case ULMA_REC_MPI_ARG: /* the arguments of the MPI_EVENT that follows (shm.h) */
		if (cs->mpi_nargs < ULMA_MPI_ARGS_MAX)
			cs->mpi_args[cs->mpi_nargs++] = native_addr(r);
		else
			c->refused++;
		return RARE_UNTIMED;
	case ULMA_REC_MPI_EVENT: /* to the trace as it came, not an event of the profile */
		if (r->id == 0 || r->id > ULMA_MPI_OP_MAX)
			c->refused++;
		else if (cs->stream)
			ulma_trace_mpi(cs->stream, t, r->id, cs->mpi_args, cs->mpi_nargs);
		cs->mpi_nargs = 0;
		return RARE_TIMED;
	case ULMA_REC_LINE:
	case ULMA_REC_LINE_RESUME:
		ulma_collector_line(c, cs->thread, cs->pid, cs->stream, t, r->id, r->kind == ULMA_REC_LINE_RESUME);
		return RARE_TIMED;
	case ULMA_REC_OBJ_NEW:
	case ULMA_REC_OBJ_FREE: {
		if (!c->profile.memory) { /* not asked for */
			c->refused++;
			return RARE_UNTIMED;
		}
		uint32_t type = named(c, r->id, ULMA_DEF_TYPE, final);
		if (type == ULMA_COLLECTOR_WAIT)
			return RARE_WAIT;
		if (type != ULMA_COLLECTOR_UNDEFINED)
			ulma_collector_set_error(c, ulma_collector_object(c, cs->thread, cs->stream,
									 r->kind == ULMA_REC_OBJ_NEW, type, t));
		return RARE_TIMED;
	}
	default: /* no such kind (a newer writer's would have a newer session version) */
		c->refused++;
		return RARE_UNTIMED;
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
	APPLY_CALLS = 1u << 3,    /* runs of plain calls taken by collector_calls.c (no lines, no memory, not sampled) */
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
		if (mode & APPLY_CALLS) {
			r = ulma_collector_calls(p, thread, (mode & APPLY_STREAM) ? st : NULL, &cur, by_id, nby_id, r, end,
						 &last, wake, cs->native_cache);
			if (r == end)
				break;
		}
		if (((uintptr_t)r & 63) == 0 && r + ULMA_PREFETCH_RECORDS < end) /* a line the writer has finished */
			__builtin_prefetch(r + ULMA_PREFETCH_RECORDS);
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
				if (idx == ULMA_COLLECTOR_WAIT)
					break; /* its definition is on its way */
				if (idx == ULMA_COLLECTOR_UNDEFINED) {
					c->refused++;
					continue;
				}
				if (ULMA_UNLIKELY(cython_twin_enter(c, cs, idx)))
					continue;
			}
			enter = true;
		} else if (r->kind == ULMA_REC_EXIT) {
			if (ULMA_LIKELY(sid < nby_id && by_id[sid])) {
				idx = by_id[sid] - 1;
			} else {
				idx = ulma_collector_resolve(c, sid, final);
				by_id = c->by_id;
				nby_id = c->nby_id;
				if (idx == ULMA_COLLECTOR_WAIT)
					break;
				if (idx == ULMA_COLLECTOR_UNDEFINED) {
					c->refused++;
					continue;
				}
				if (ULMA_UNLIKELY(cython_twin_exit(c, cs, idx)))
					continue;
			}
			enter = false;
		} else if (r->kind == ULMA_REC_NATIVE_ENTER || r->kind == ULMA_REC_NATIVE_EXIT) {
			/* its CPU is the thread's last known (shm.h) */
			uint64_t addr = native_addr(r);
			const struct native_seen *seen =
				cs->native_cache ? &cs->native_cache[ulma_collector_native_slot(addr)] : NULL;
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
				if (idx == ULMA_COLLECTOR_UNDEFINED)
					continue;
			}
			cpu = (mode & APPLY_STREAM) ? cur.cpu : cs->cpu;
			enter = r->kind == ULMA_REC_NATIVE_ENTER;
		} else {
			if ((r->kind >= ULMA_REC_MEM_SIZE && r->kind <= ULMA_REC_FREE) ||
			    r->kind == ULMA_REC_ALLOC_SMALL) { /* --memory */
				const struct ulma_record *ahead = r + MEMORY_AHEAD, *near = r + MEMORY_AHEAD / 2;
				if (th->mem && ahead < end) { /* a free's block is often cold (allocations go to chunks just used) */
					if (ahead->kind == ULMA_REC_FREE)
						ulma_mem_table_prefetch(&p->memory->table, th->mem->proc, native_addr(ahead));
					if (near->kind == ULMA_REC_FREE)
						ulma_mem_table_prefetch_entry(&p->memory->table, th->mem->proc, native_addr(near));
				}
				struct ulma_collector_block b;
				if (p->memory && ulma_collector_mem_decode(&cs->mem, r, &b, &p->memory->unmatched_allocs)) {
					bool due = false;
					if (mode & APPLY_STREAM)
						ulma_trace_cursor_memory(st, &cur, t, b.alloc, b.addr, b.size, b.domain);
					ulma_collector_set_error(c, ulma_collector_memory(p, cs->thread, mode & APPLY_STREAM, &b, t,
											  &due));
					if (ULMA_UNLIKELY(due)) { /* they go to the stream: after the block's record */
						CURSOR_PUT();
						ulma_collector_set_error(c, ulma_collector_memory_counters(c, cs->thread,
												  cs->stream, t));
						CURSOR_GET();
					}
				} else if (!p->memory) { /* not asked for */
					c->refused++;
				} /* else a MEM_SIZE, or an ALLOC whose MEM_SIZE was lost */
				last = t;
				continue;
			}
			if ((r->kind == ULMA_REC_LINE || r->kind == ULMA_REC_LINE_RESUME) && th->depth &&
			    p->funcs[th->top].line_rows) { /* a line of a function seen before (else: copy its source) */
				bool resumed = r->kind == ULMA_REC_LINE_RESUME;
				if (ULMA_UNLIKELY(ulma_profile_line(p, thread, t, sid, !resumed))) {
					ulma_collector_set_error(c, -ENOMEM);
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
			enum rare_applied applied = apply_rare(c, cs, r, t, final);
			CURSOR_GET();
			if (mode & APPLY_SWITCHES)
				wake = cs->off->wake_at;
			th = &p->threads[thread];
			if (applied == RARE_WAIT)
				break;
			last = applied == RARE_TIMED ? t : cs->last_ticks; /* a STOP closed the frames */
			continue;
		}
		if (enter) {
			bool same = th->top == idx;
			if (ULMA_UNLIKELY(ulma_profile_enter(p, thread, idx, t))) {
				ulma_collector_set_error(c, -ENOMEM);
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
	if (!c->profile.lines && !c->profile.memory && !(cs->sched_fd >= 0 || !ulma_schedline_empty(&cs->line))) {
		if (cs->off)
			return stream ? apply_loop(c, cs, from, end, horizon, final,
						   APPLY_CALLS | APPLY_STREAM | APPLY_SWITCHES)
				      : apply_loop(c, cs, from, end, horizon, final, APPLY_CALLS | APPLY_SWITCHES);
		return stream ? apply_loop(c, cs, from, end, horizon, final, APPLY_CALLS | APPLY_STREAM)
			      : apply_loop(c, cs, from, end, horizon, final, APPLY_CALLS);
	}
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
long ulma_collector_apply(struct ulma_collector *c, struct ulma_collector_slot *cs, const struct ulma_record *ring,
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
