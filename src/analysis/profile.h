/* profile.h - per-function aggregation of well-nested event streams.
 *
 * The monitor feeds it live; `ulma report` feeds it from a trace file; both
 * therefore print the same numbers.  Functions and threads are dense
 * indices assigned by the caller.  Semantics follow cProfile: a call is
 * counted when it is entered (generator resumes are calls), `total`
 * includes callees but counts a recursive function only at its outermost
 * frame per thread, `self` excludes callees.  Frames still open at the end
 * are closed at the time given to ulma_profile_finish.
 *
 * The model is built for one pass at a hundred million events a second:
 * - Every event charges the time since the thread's previous event to the
 *   frame on top of its stack (before the event), with one event for the
 *   hook's cost (overhead.h).  So self time needs no bookkeeping of
 *   children; only a function's outermost frame computes its total.
 * - Time off the CPU arrives as intervals (ulma_profile_off): blocked,
 *   runnable (preempted), and of the blocked the part spent waiting for the
 *   GIL.  A thread emits no events while it is off its CPU, so each
 *   interval lies between two events and belongs to the frame on top: its
 *   self time.  Each thread keeps cumulative off-CPU clocks, which a frame
 *   snapshots at entry; its total off-CPU time is their growth.  On-CPU
 *   time is the rest of the wall time.  With the scheduler's switch
 *   records the intervals are exact; sampled schedstat (schedline.h) gives
 *   interpolated increments instead.
 * - Python against native: a frame is native when its function is C (a
 *   builtin, kinds 2-5) or native code (kind 6); a zone is what the frame
 *   below it is.  Each thread's native clock grows by the time charged to
 *   a native top frame; a frame snapshots it at entry, and the growth is
 *   the function's total native time (the rest of its total interpreted
 *   Python).
 *
 * Times are session ticks; off-CPU clocks are ns.  Single-threaded.
 * Functions returning int give 0 or -ENOMEM.
 */
#ifndef ULMA_PROFILE_H
#define ULMA_PROFILE_H

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/ring.h" /* ULMA_LIKELY */
#include "pid_names.h"

struct ulma_line_open;
struct ulma_profile_lines;
struct ulma_mem_thread;
struct ulma_profile_memory;

struct ulma_func_row {
	/* hot: touched by every event */
	uint64_t calls;
	uint64_t self_ticks;
	uint64_t self_events;  /* events charged to the self time: each frame's exit and its
				* children's entries (the hook's cost, overhead.h) */
	uint64_t total_ticks;
	uint64_t total_events; /* events inside the total time, and each outermost frame's exit */
	uint64_t total_native_ticks; /* of the total, with a native frame on top */
	uint32_t native;       /* 0 Python, 1 native (C or native code), 2 as the frame below (a zone) */
	/* off the CPU, of the self time (ns) */
	uint64_t self_blocked_ns;  /* blocked: sleep, I/O, locks, the GIL */
	uint64_t self_runnable_ns; /* runnable, waiting for a CPU */
	uint64_t self_gil_ns;      /* of the blocked time, waiting for the GIL */
	uint64_t total_blocked_ns; /* the same for total time */
	uint64_t total_runnable_ns;
	uint64_t total_gil_ns;
	/* context switches while the function was on top (self) or on the stack (total) */
	uint64_t voluntary;
	uint64_t involuntary;
	uint64_t total_voluntary;
	uint64_t total_involuntary;
	/* cold */
	char *name; /* owned by the profile, NUL-terminated */
	char *file;
	uint32_t line;
	uint8_t kind; /* enum ulma_def_kind */
	bool pyx;     /* a Python-level function of a .pyx file: what Cython's profile=True reports */
	uint32_t line_rows;      /* its lines with a row (profile_lines.h) */
	uint32_t first_line_row; /* the newest of them */
	uint32_t *line_row_of;   /* row of line line_base + i, UINT32_MAX: none; owned */
	uint32_t line_base;
	uint32_t line_span;
};

/* A thread's cumulative time off its CPU; a frame keeps a copy from its
 * entry.  (Not written per event: copying it never waits on a store.) */
struct ulma_thread_clocks {
	uint64_t offs;   /* ulma_profile_off calls: unchanged means no time off the CPU */
	uint64_t blocked_ns;
	uint64_t runnable_ns;
	uint64_t gil_ns;
	uint64_t voluntary;
	uint64_t involuntary;
};

/* *to = *from, in 16-byte moves: as a plain assignment GCC 12 made it a
 * `rep movsl` in the monitor's collector_calls.c (13 instructions under
 * callgrind, and a microcoded start-up on the CPU). */
static inline void ulma_thread_clocks_copy(struct ulma_thread_clocks *to, const struct ulma_thread_clocks *from)
{
	typedef uint64_t u64x2 __attribute__((vector_size(16), aligned(8), may_alias));
	static_assert(sizeof *to == 3 * sizeof(u64x2), "three moves");
	const u64x2 *src = (const u64x2 *)from;
	u64x2 *dst = (u64x2 *)to, a = src[0], b = src[1], c = src[2];
	dst[0] = a;
	dst[1] = b;
	dst[2] = c;
}

struct ulma_frame {
	uint32_t func;
	uint8_t native; /* the frame is native (1) or not (0) */
	uint8_t outer;  /* the outermost open frame of its function: its exit adds the total */
	uint64_t start;
	uint64_t events0; /* the thread's events just after the entry */
	/* an outermost frame's alone (a push leaves an inner one's as they
	 * were: nothing reads them) */
	uint64_t native0;             /* the thread's native clock at the entry */
	struct ulma_thread_clocks at; /* its clocks at the entry */
};

#define ULMA_PROFILE_NO_FRAME UINT32_MAX

struct ulma_thread_row {
	struct ulma_frame *stack;
	uint32_t depth;
	uint32_t cap;
	uint32_t top; /* function of the top frame (stack[depth - 1].func), ULMA_PROFILE_NO_FRAME if none */
	uint8_t *active; /* per function: 1 while a frame of it is open (its outermost frame's exit
			  * clears it), for recursion-safe totals */
	uint32_t nactive;
	int seen;             /* any event yet */
	uint64_t last_ticks;  /* last event, or the close time of open frames */
	uint64_t events;      /* enters and exits */
	uint64_t native_ticks; /* time charged to native top frames (profile.h, top) */
	uint64_t top_native;   /* all ones while the top frame is native, else 0 */
	struct ulma_thread_clocks now;
	uint64_t first_ticks; /* first event */
	uint64_t serial;
	uint32_t pid;
	uint32_t tid;
	char *name; /* what the thread called itself last (a thread-name mark), or NULL; owned */
	uint64_t lost;
	uint64_t self_ticks;       /* sum of self time of this thread's frames */
	uint64_t self_blocked_ns;  /* of which off the CPU (the rest was on it) */
	uint64_t self_runnable_ns;
	uint64_t self_gil_ns;
	uint64_t sample_cpu0, sample_cpu1; /* schedstat: cpu ns at its first and latest sample */
	int sampled;
	/* live only: off its CPU right now as far as known (1 blocked, 2
	 * runnable; 0 on it), since off_since; the interval is not charged yet */
	int off_now;
	uint64_t off_since;
	struct ulma_line_open *lines; /* per depth: the frame's current line (profile_lines.h), or NULL */
	uint64_t alloc_count; /* allocations made on the thread (--memory), for the lines' */
	uint64_t alloc_bytes;
	uint32_t lines_cap;
	struct ulma_mem_thread *mem; /* its allocations per depth (profile_memory.h), NULL until its first */
};

enum ulma_profile_split {
	ULMA_PROFILE_SPLIT_NONE = 0,      /* no off-CPU information */
	ULMA_PROFILE_SPLIT_SCHEDSTAT = 1, /* interpolated between schedstat samples */
	ULMA_PROFILE_SPLIT_SWITCHES = 2,  /* exact, from context-switch records */
};

struct ulma_profile {
	struct ulma_func_row *funcs;
	uint32_t nfuncs;
	uint32_t cap_funcs;
	struct ulma_thread_row *threads;
	uint32_t nthreads;
	uint32_t cap_threads;
	uint64_t lost;
	int split;   /* enum ulma_profile_split */
	int has_gil; /* some thread's GIL waits were told apart */
	struct ulma_pid_names names; /* what to call each process, where known */
	struct ulma_profile_lines *lines; /* lines of the code chosen with --lines, or NULL */
	bool lines_failed; /* a line's call could not be counted (out of memory) */
	struct ulma_profile_memory *memory; /* allocations (--memory, profile_memory.h), or NULL */
};

void ulma_profile_init(struct ulma_profile *p);
void ulma_profile_free(struct ulma_profile *p);

/* Define function `index` (indices may arrive in any order). */
int ulma_profile_add_func(struct ulma_profile *p, uint32_t index, uint8_t kind, const char *name,
			  size_t name_len, const char *file, size_t file_len, uint32_t line);
/* Define thread `index`. */
int ulma_profile_add_thread(struct ulma_profile *p, uint32_t index, uint64_t serial, uint32_t pid,
			    uint32_t tid);

/* Name thread `thread` (a thread-name mark; a later name replaces it). */
int ulma_profile_thread_name(struct ulma_profile *p, uint32_t thread, const char *name);

/* Slow path of ulma_profile_enter: room for one more frame of `func`. */
int ulma_profile_grow(struct ulma_thread_row *t, uint32_t func);

/* Charge the time since the thread's last event to its top frame. */
static inline void ulma_profile_charge(struct ulma_profile *p, struct ulma_thread_row *t, uint64_t ticks)
{
	if (ULMA_UNLIKELY(!t->seen)) {
		t->seen = 1;
		t->first_ticks = t->last_ticks = ticks;
	}
	uint64_t d = ticks > t->last_ticks ? ticks - t->last_ticks : 0;
	if (ULMA_LIKELY(t->depth)) {
		struct ulma_func_row *r = &p->funcs[t->top];
		r->self_ticks += d;
		r->self_events++;
		t->self_ticks += d;
		t->native_ticks += d & t->top_native;
	}
	t->last_ticks += d;
}

/* Events; thread and func must have been added, and a thread's events
 * come in time order (an earlier time counts as its previous one). */
static inline int ulma_profile_enter(struct ulma_profile *p, uint32_t thread, uint32_t func, uint64_t ticks)
{
	struct ulma_thread_row *t = &p->threads[thread];
	if (ULMA_UNLIKELY(t->depth == t->cap || func >= t->nactive) && ulma_profile_grow(t, func))
		return -ENOMEM;
	ulma_profile_charge(p, t, ticks);
	struct ulma_frame *f = &t->stack[t->depth++];
	struct ulma_func_row *r = &p->funcs[func];
	uint64_t native = r->native == 2 ? t->top_native : (uint64_t)0 - r->native;
	f->func = func;
	f->native = (uint8_t)(native & 1);
	f->outer = !t->active[func];
	f->start = t->last_ticks;
	f->events0 = ++t->events;
	if (f->outer) { /* as the cursor's push: an inner frame's are never read */
		f->native0 = t->native_ticks;
		ulma_thread_clocks_copy(&f->at, &t->now);
	}
	t->top = func;
	t->top_native = native;
	t->active[func] = 1;
	r->calls++;
	return 0;
}

/* Slow path of ulma_profile_pop: the off-CPU part of a total. */
void ulma_profile_total_off(struct ulma_func_row *r, const struct ulma_thread_row *t, const struct ulma_frame *f);

/* profile_lines.c: frame f (t->stack[t->depth]) ends; its line closes. */
void ulma_profile_lines_pop(struct ulma_profile *p, struct ulma_thread_row *t, const struct ulma_frame *f);

/* profile_memory.c: frame f (t->stack[t->depth]) ends; what it allocated
 * goes to its caller's and, at its outermost frame, to its total. */
void ulma_profile_memory_pop(struct ulma_profile *p, struct ulma_thread_row *t, const struct ulma_frame *f);

/* Remove the top frame, ending at the thread's last event; an outermost
 * frame of its function adds its total. */
static inline void ulma_profile_pop(struct ulma_profile *p, struct ulma_thread_row *t)
{
	const struct ulma_frame *f = &t->stack[--t->depth];
	if (ULMA_UNLIKELY(t->lines != NULL))
		ulma_profile_lines_pop(p, t, f);
	if (ULMA_UNLIKELY(t->mem != NULL))
		ulma_profile_memory_pop(p, t, f);
	t->top = t->depth ? f[-1].func : ULMA_PROFILE_NO_FRAME;
	t->top_native = t->depth ? (uint64_t)0 - f[-1].native : 0;
	if (ULMA_LIKELY(!f->outer))
		return; /* a recursive frame: its total counts at the outermost one */
	t->active[f->func] = 0;
	struct ulma_func_row *r = &p->funcs[f->func];
	r->total_ticks += t->last_ticks - f->start;
	r->total_events += t->events - f->events0;
	r->total_native_ticks += t->native_ticks - f->native0;
	if (ULMA_UNLIKELY(t->now.offs != f->at.offs))
		ulma_profile_total_off(r, t, f);
}

/* Leave the innermost open frame (ignored if there is none). */
static inline void ulma_profile_exit(struct ulma_profile *p, uint32_t thread, uint64_t ticks)
{
	struct ulma_thread_row *t = &p->threads[thread];
	if (ULMA_UNLIKELY(t->depth == 0))
		return;
	ulma_profile_charge(p, t, ticks);
	t->events++;
	ulma_profile_pop(p, t);
}

/* A thread's hot state held in locals by a loop feeding the profile a
 * batch of its events (profile_feed.c, export_walk.c's on_events_tree):
 * each store into a function's row or a frame could alias the thread's
 * row, whose fields the compiler would otherwise reload after every one.
 * Loaded, fed, and stored back before anything else reads or changes
 * the thread (the off-CPU clocks `now` stay in the row: only the slow
 * paths change them).  The same figures as ulma_profile_enter and
 * ulma_profile_exit, which take the events the fast paths below do not:
 * a thread's first event, a full stack, a thread with lines or memory
 * (tests/unit/test_profile.c compares the two on a random stream).  Their
 * steps are repeated here rather than the per-event calls made a cursor's
 * load, step and store: the monitor calls those once per record, and so
 * made they cost its drain 13% more instructions (bench_drain under
 * callgrind: 40.8 to 46.3 M for 300,000 records). */
struct ulma_profile_cursor {
	struct ulma_func_row *funcs;
	struct ulma_thread_row *t;
	struct ulma_frame *stack;
	uint8_t *active;
	uint64_t last_ticks, events, native_ticks, self_ticks, top_native;
	uint32_t depth, cap, nactive, top;
	bool fast; /* seen, no lines, no memory: the fast paths apply */
};

static inline void ulma_profile_cursor_load(struct ulma_profile *p, uint32_t thread, struct ulma_profile_cursor *c)
{
	struct ulma_thread_row *t = &p->threads[thread];
	*c = (struct ulma_profile_cursor){p->funcs,	   t,	   t->stack, t->active, t->last_ticks, t->events,
					  t->native_ticks, t->self_ticks, t->top_native, t->depth,   t->cap,
					  t->nactive,	   t->top, t->seen && !t->lines && !t->mem};
}

static inline void ulma_profile_cursor_store(const struct ulma_profile_cursor *c)
{
	struct ulma_thread_row *t = c->t;
	t->last_ticks = c->last_ticks;
	t->events = c->events;
	t->native_ticks = c->native_ticks;
	t->self_ticks = c->self_ticks;
	t->top_native = c->top_native;
	t->depth = c->depth;
	t->top = c->top;
}

/* Charge `d` ticks, the time since the thread's previous event, to the
 * frame on top (the thread seen). */
static inline void ulma_profile_cursor_charge_delta(struct ulma_profile_cursor *c, uint64_t d)
{
	if (ULMA_LIKELY(c->depth)) {
		struct ulma_func_row *r = &c->funcs[c->top];
		r->self_ticks += d;
		r->self_events++;
		c->self_ticks += d;
		c->native_ticks += d & c->top_native;
	}
}

/* ulma_profile_charge on the cursor (the thread seen). */
static inline void ulma_profile_cursor_charge(struct ulma_profile_cursor *c, uint64_t ticks)
{
	uint64_t d = ticks > c->last_ticks ? ticks - c->last_ticks : 0;
	ulma_profile_cursor_charge_delta(c, d);
	c->last_ticks += d;
}

/* An entry's frame at `ticks`, once charged: the cursor's fast path
 * (fast, a free slot on the stack, func < nactive). */
static inline void ulma_profile_cursor_push(struct ulma_profile_cursor *c, uint32_t func, uint64_t ticks)
{
	struct ulma_frame *f = &c->stack[c->depth++];
	struct ulma_func_row *r = &c->funcs[func];
	uint64_t native = r->native == 2 ? c->top_native : (uint64_t)0 - r->native;
	f->func = func;
	f->native = (uint8_t)(native & 1);
	f->outer = !c->active[func];
	f->start = ticks;
	f->events0 = ++c->events;
	if (f->outer) { /* read at an outermost frame's exit alone (and by the live view, at those alone) */
		f->native0 = c->native_ticks;
		ulma_thread_clocks_copy(&f->at, &c->t->now);
	}
	c->top = func;
	c->top_native = native;
	c->active[func] = 1; /* a store, not an increment: no chain through memory from call to call */
	r->calls++;
}

/* The top frame's exit at `ticks`, once charged: the cursor's fast path
 * (fast, depth > 0). */
static inline __attribute__((always_inline)) void ulma_profile_cursor_pop(struct ulma_profile_cursor *c,
									    uint64_t ticks)
{
	c->events++;
	const struct ulma_frame *f = &c->stack[--c->depth];
	c->top = c->depth ? f[-1].func : ULMA_PROFILE_NO_FRAME;
	c->top_native = c->depth ? (uint64_t)0 - f[-1].native : 0;
	if (ULMA_LIKELY(!f->outer))
		return; /* a recursive frame: its total counts at the outermost one */
	c->active[f->func] = 0;
	struct ulma_func_row *r = &c->funcs[f->func];
	r->total_ticks += ticks - f->start;
	r->total_events += c->events - f->events0;
	r->total_native_ticks += c->native_ticks - f->native0;
	if (ULMA_UNLIKELY(c->t->now.offs != f->at.offs))
		ulma_profile_total_off(r, c->t, f);
}

/* A leaf call, once its entry is charged: an entry of func and its exit
 * `d` ticks later with no event between, on the push's fast path (fast, a
 * free slot on the stack, func < nactive).  The figures of a push and a
 * pop, with no frame written and none read back: the callee's self and
 * (outermost) total time are both d, its total events 1, and no time off
 * the CPU can fall inside it (the caller applies switch records between
 * events, never between these two). */
static inline void ulma_profile_cursor_leaf(struct ulma_profile_cursor *c, uint32_t func, uint64_t d)
{
	struct ulma_func_row *r = &c->funcs[func];
	uint64_t native = (r->native == 2 ? c->top_native : (uint64_t)0 - r->native) & d;
	r->calls++;
	r->self_ticks += d;
	r->self_events++;
	c->self_ticks += d;
	c->native_ticks += native;
	c->events += 2;
	if (!c->active[func]) { /* outermost: its total */
		r->total_ticks += d;
		r->total_events++;
		r->total_native_ticks += native;
	}
}

static inline int ulma_profile_cursor_enter(struct ulma_profile *p, uint32_t thread, struct ulma_profile_cursor *c,
					    uint32_t func, uint64_t ticks)
{
	if (ULMA_UNLIKELY(!c->fast || c->depth == c->cap || func >= c->nactive)) {
		ulma_profile_cursor_store(c);
		int err = ulma_profile_enter(p, thread, func, ticks);
		ulma_profile_cursor_load(p, thread, c);
		return err;
	}
	ulma_profile_cursor_charge(c, ticks);
	ulma_profile_cursor_push(c, func, c->last_ticks);
	return 0;
}

/* Always inlined: GCC 12 otherwise calls it once per exit from the
 * monitor's collector_calls.c loop (bench_drain's monitor thread under callgrind:
 * about 10% more instructions); the reader's rates did
 * not move (report and pstats of fib.trace, five interleaved rounds). */
static inline __attribute__((always_inline)) void
ulma_profile_cursor_exit(struct ulma_profile *p, uint32_t thread, struct ulma_profile_cursor *c, uint64_t ticks)
{
	if (ULMA_UNLIKELY(c->depth == 0))
		return;
	if (ULMA_UNLIKELY(!c->fast)) {
		ulma_profile_cursor_store(c);
		ulma_profile_exit(p, thread, ticks);
		ulma_profile_cursor_load(p, thread, c);
		return;
	}
	ulma_profile_cursor_charge(c, ticks);
	ulma_profile_cursor_pop(c, c->last_ticks);
}

/* An entry of func at t1 and its exit at t2, with no event between: a
 * leaf call, on the cursor's leaf step where the push's fast path applies
 * (else an enter and an exit).  The figures of ulma_profile_cursor_enter
 * then ulma_profile_cursor_exit.  Returns 0 or -ENOMEM. */
static inline int ulma_profile_cursor_call(struct ulma_profile *p, uint32_t thread, struct ulma_profile_cursor *c,
					   uint32_t func, uint64_t t1, uint64_t t2)
{
	if (ULMA_UNLIKELY(!c->fast || c->depth == c->cap || func >= c->nactive)) {
		int err = ulma_profile_cursor_enter(p, thread, c, func, t1);
		if (!err)
			ulma_profile_cursor_exit(p, thread, c, t2);
		return err;
	}
	ulma_profile_cursor_charge(c, t1);
	uint64_t d = t2 > c->last_ticks ? t2 - c->last_ticks : 0;
	ulma_profile_cursor_leaf(c, func, d);
	c->last_ticks += d;
	return 0;
}

/* Time off the CPU, between the thread's last event and its next: ns
 * blocked (of which gil_ns waiting for the GIL) and ns runnable, and the
 * context switches it took (voluntary: it blocked; involuntary: it was
 * preempted).  Charged to the frame on top. */
void ulma_profile_off(struct ulma_profile *p, uint32_t thread, uint64_t blocked_ns, uint64_t runnable_ns,
		      uint64_t gil_ns, uint32_t voluntary, uint32_t involuntary);

void ulma_profile_lost(struct ulma_profile *p, uint32_t thread, uint64_t ticks, uint64_t count);

/* Note a schedstat sample of a thread: its CPU time between its first and
 * latest samples measures parallelism whether or not events were lost.
 * gil_known: the sample told GIL waits apart. */
void ulma_profile_sample(struct ulma_profile *p, uint32_t thread, uint64_t cpu_ns, int gil_known);

/* Close every open frame at `ticks` (or at its thread's last event if
 * that is later). */
void ulma_profile_finish(struct ulma_profile *p, uint64_t ticks);

/* Events recorded (enters and exits) over all threads. */
uint64_t ulma_profile_events(const struct ulma_profile *p);

/* The earliest first event and the latest last event of any thread
 * (both 0 without events). */
void ulma_profile_span(const struct ulma_profile *p, uint64_t *first, uint64_t *last);

/* Function indices sorted by key[function] descending, then by calls
 * descending, then by index; caller frees.  NULL if out of memory. */
uint32_t *ulma_profile_sorted_by_key(const struct ulma_profile *p, const uint64_t *key);

#endif
