/* export_walk.c - filtered frame stream for the exporters (see
 * export_walk.h): the frames and events, and the walk itself.  The
 * definitions and the records that are not events are
 * export_walk_defs.c's.
 *
 * Each thread keeps a shadow stack.  A slot remembers the nearest ancestor
 * that the patterns let through (`up`), so a frame closing as kept can open
 * its not yet announced ancestors in O(1) amortised: each frame is opened
 * at most once and the walk up stops at the first opened one.  A kept
 * ancestor is at least as long as its kept descendant and overlaps the
 * window at least as much, so announcing ancestors early never contradicts
 * the filters.
 */
#include "../core/array.h"
#include "export_walk_internal.h"

#include "calltree.h"
#include "profile_lines.h"
#include "profile_memory.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../core/clock.h"
#include "ulma/trace_format.h"

struct walk_slot {
	uint32_t func;
	uint32_t cpu;
	uint32_t up;    /* stack index of the nearest passing ancestor, or ULMA_WALK_NONE */
	uint32_t depth; /* kept depth, once opened */
	uint64_t start; /* ns, unclipped */
	uint64_t child; /* ns of kept descendants that hang from this frame */
	bool opened;
};

void ulma_walk_filter_init(struct ulma_walk_filter *f)
{
	memset(f, 0, sizeof(*f));
	f->tid = ULMA_WALK_ALL;
	f->pid = ULMA_WALK_ALL;
	f->to_ns = UINT64_MAX;
}

void ulma_walk_init(struct ulma_walk *w, const struct ulma_walk_filter *filter)
{
	memset(w, 0, sizeof(*w));
	if (filter)
		w->filter = *filter;
	else
		ulma_walk_filter_init(&w->filter);
	w->ns_per_tick = 1.0;
}

void ulma_walk_free(struct ulma_walk *w)
{
	for (uint32_t i = 0; i < w->nfuncs; i++) {
		free(w->funcs[i].name);
		free(w->funcs[i].file);
	}
	free(w->funcs);
	for (uint32_t i = 0; i < w->nthreads; i++) {
		free(w->threads[i].stack);
		free(w->threads[i].held);
	}
	free(w->threads);
	free(w->command);
	ulma_pid_names_free(&w->names);
	ulma_idmap_free(&w->keys);
	ulma_idmap_free(&w->rank_of_pid);
	ulma_idmap_free(&w->parent_of_pid);
	ulma_profile_feed_free(&w->feed);
	memset(w, 0, sizeof(*w));
}

/* ---------- frames ---------- */


static void frame_of(const struct ulma_walk_thread *t, uint32_t i, struct ulma_walk_frame *fr,
		     const struct ulma_walk_filter *flt)
{
	const struct walk_slot *s = &t->stack[i];
	fr->func = s->func;
	fr->parent = s->up == ULMA_WALK_NONE ? ULMA_WALK_NONE : t->stack[s->up].func;
	fr->depth = s->depth;
	fr->cpu = s->cpu;
	fr->start_ns = s->start > flt->from_ns ? s->start : flt->from_ns;
	fr->end_ns = 0;
	fr->self_ns = 0;
}

/* Deliver thread's held marks up to time `upto` (ns), oldest first. */
static int release_marks(struct ulma_walk *w, uint32_t thread, uint64_t upto)
{
	struct ulma_walk_thread *t = &w->threads[thread];
	int err = 0;
	while (t->held_first < t->nheld && t->held[t->held_first].at_ns <= upto && !err) {
		struct ulma_walk_mark m = t->held[t->held_first++];
		err = w->sink->on_mark(w->sink->ctx, w, thread, &m);
		t = &w->threads[thread];
	}
	if (t->held_first == t->nheld)
		t->held_first = t->nheld = 0;
	return err;
}

/* Announce slot i and every passing ancestor not yet announced, outermost
 * first. */
static int open_chain(struct ulma_walk *w, uint32_t thread, uint32_t i)
{
	struct ulma_walk_thread *t = &w->threads[thread];
	/* count the unopened slots from i up to the first opened one */
	uint32_t top = i, n = 0;
	while (top != ULMA_WALK_NONE && !t->stack[top].opened) {
		n++;
		uint32_t up = t->stack[top].up;
		if (up == ULMA_WALK_NONE || t->stack[up].opened)
			break;
		top = up;
	}
	if (n == 0)
		return 0;
	/* collect them innermost last, then announce outermost first */
	uint32_t stackbuf[64];
	uint32_t *chain = n <= 64 ? stackbuf : malloc(n * sizeof(*chain));
	if (!chain)
		return -ENOMEM;
	uint32_t k = n, j = i;
	while (k > 0) {
		chain[--k] = j;
		j = t->stack[j].up;
	}
	int err = 0;
	for (k = 0; k < n && !err; k++) {
		struct walk_slot *s = &t->stack[chain[k]];
		s->opened = true;
		s->depth = s->up == ULMA_WALK_NONE ? 0 : t->stack[s->up].depth + 1;
		w->frames++;
		t->kept++;
		uint64_t start = s->start > w->filter.from_ns ? s->start : w->filter.from_ns; /* as frame_of clips it */
		if (t->nheld && (err = release_marks(w, thread, start)))
			break;
		t = &w->threads[thread];
		if (w->sink->on_open) {
			struct ulma_walk_frame fr;
			frame_of(t, chain[k], &fr, &w->filter);
			err = w->sink->on_open(w->sink->ctx, w, thread, &fr);
		}
	}
	if (chain != stackbuf)
		free(chain);
	return err;
}

static int push(struct ulma_walk *w, uint32_t thread, struct ulma_walk_thread *t, uint32_t func, uint64_t ns,
		uint32_t cpu)
{
	if (t->depth == t->cap && ulma_array_grow((void **)&t->stack, &t->cap, t->depth, sizeof(*t->stack)))
		return -ENOMEM;
	uint32_t up = ULMA_WALK_NONE;
	if (t->depth) {
		uint32_t top = t->depth - 1;
		up = w->funcs[t->stack[top].func].pass ? top : t->stack[top].up;
	}
	t->stack[t->depth++] = (struct walk_slot){func, cpu, up, 0, ns, 0, false};
	(void)thread;
	return 0;
}

static int pop(struct ulma_walk *w, uint32_t thread, uint64_t ns, uint32_t cpu)
{
	struct ulma_walk_thread *t = &w->threads[thread];
	const struct ulma_walk_filter *flt = &w->filter;
	uint32_t i = t->depth - 1;
	struct walk_slot *s = &t->stack[i];
	int err = 0;
	if (!w->funcs[s->func].pass) {
		t->depth--;
		return 0;
	}
	uint64_t cs = s->start > flt->from_ns ? s->start : flt->from_ns;
	uint64_t ce = ns < flt->to_ns ? ns : flt->to_ns;
	bool keep = s->opened;
	if (!keep && cs <= ce && ce - cs >= flt->min_duration_ns)
		keep = cs < ce || s->start == ns; /* a zero-length frame only if it lies in the window */
	if (keep) {
		if (!s->opened && (err = open_chain(w, thread, i)))
			return err;
		uint64_t dur = ce - cs;
		if (t->nheld && (err = release_marks(w, thread, ce)))
			return err;
		t = &w->threads[thread];
		s = &t->stack[i];
		if (w->sink->on_close) {
			struct ulma_walk_frame fr;
			frame_of(t, i, &fr, flt);
			fr.cpu = cpu;
			fr.end_ns = ce;
			fr.self_ns = dur > s->child ? dur - s->child : 0;
			err = w->sink->on_close(w->sink->ctx, w, thread, &fr);
		}
		if (s->up != ULMA_WALK_NONE)
			t->stack[s->up].child += dur;
	}
	t->depth--;
	return err;
}

/* A thread's corrected time of an event at `ticks`, noted as its latest:
 * the conversion (ticks0, tsc, fp) taken as arguments, so a batch loop can
 * hold it in locals, the hook's cost of the thread's earlier events
 * (cost_fp each) taken out, never before the thread's previous time. */
static inline uint64_t thread_clock_ns(struct ulma_walk_thread *t, uint64_t ticks, uint64_t ticks0, bool tsc,
				       uint64_t fp, uint64_t cost_fp)
{
	uint64_t ns = ticks_to_ns(ticks, ticks0, tsc, fp), shift = t->shift_fp >> 32;
	ns = ns > shift ? ns - shift : 0;
	if (__builtin_expect(!t->seen, 0)) {
		t->seen = true;
		t->first_ns = ns;
	} else if (ns < t->last_ns) {
		ns = t->last_ns; /* events closer together than the cost */
	}
	t->shift_fp += cost_fp;
	t->last_ns = ns;
	return ns;
}

/* The corrected time of a thread's event, noted as its latest. */
static inline uint64_t event_ns(struct ulma_walk *w, struct ulma_walk_thread *t, const struct ulma_trace_event *e)
{
	uint64_t ns = thread_clock_ns(t, e->ticks, w->ticks0, w->tsc, w->ns_per_tick_fp, w->cost_fp);
	t->cpu = e->cpu;
	return ns;
}

/* A thread's corrected clock held in locals through a batch (each store
 * into a stack could alias it, and it would be reloaded after each one),
 * with the conversion: event_ns's steps on them.  Written back by the
 * caller.  A batch's times never decrease (trace_reader.h), so its first
 * and last bound them all: where those need none of the clamps (every
 * time after the trace's first tick, below ticks_to_ns's cap, and above
 * the most the batch's events can take out as the hook's cost, on a
 * thread already seen), each event takes the plain steps: one product,
 * the shift taken out, never before the previous event.  Without a TSC a
 * tick is a ns, which the product with 1.0 in 32.32 gives exactly. */
struct local_clock {
	uint64_t shift_fp;
	uint64_t last_ns;
	bool seen;
	bool plain;
	bool tsc;
	uint64_t ticks0, fp, cost_fp;
};

static inline void local_clock_load(struct local_clock *k, const struct ulma_walk *w, const struct ulma_walk_thread *t,
				    const struct ulma_trace_event *ev, size_t n)
{
	*k = (struct local_clock){t->shift_fp, t->last_ns, t->seen, false, w->tsc, w->ticks0, w->ns_per_tick_fp, w->cost_fp};
	uint64_t most_fp;
	if (!n || !t->seen || ev[0].ticks <= w->ticks0 || __builtin_mul_overflow((uint64_t)n, w->cost_fp, &most_fp) ||
	    __builtin_add_overflow(most_fp, t->shift_fp, &most_fp))
		return;
	uint64_t fp = w->tsc ? w->ns_per_tick_fp : UINT64_C(1) << 32;
	unsigned __int128 last = ((unsigned __int128)(ev[n - 1].ticks - w->ticks0) * fp + (1u << 31)) >> 32;
	if (last >= UINT64_C(9200000000000000000) || ticks_to_ns(ev[0].ticks, w->ticks0, w->tsc, w->ns_per_tick_fp) < most_fp >> 32)
		return;
	k->plain = true;
	k->fp = fp;
}

static inline void local_clock_store(const struct local_clock *k, struct ulma_walk_thread *t)
{
	t->shift_fp = k->shift_fp;
	t->last_ns = k->last_ns;
}

static inline uint64_t local_clock_ns(struct local_clock *k, struct ulma_walk_thread *t, uint64_t ticks)
{
	uint64_t ns;
	if (__builtin_expect(k->plain, 1)) {
		ns = (uint64_t)(((unsigned __int128)(ticks - k->ticks0) * k->fp + (1u << 31)) >> 32) - (k->shift_fp >> 32);
		ns = ns < k->last_ns ? k->last_ns : ns; /* events closer together than the cost */
	} else {
		uint64_t shift = k->shift_fp >> 32;
		ns = ticks_to_ns(ticks, k->ticks0, k->tsc, k->fp);
		ns = ns > shift ? ns - shift : 0;
		if (__builtin_expect(!k->seen, 0)) {
			k->seen = true;
			t->seen = true;
			t->first_ns = ns;
		} else if (ns < k->last_ns) {
			ns = k->last_ns;
		}
	}
	k->shift_fp += k->cost_fp;
	k->last_ns = ns;
	return ns;
}

/* An OFF record to the sink, at the thread's corrected time. */
static int report_off(struct ulma_walk *w, uint32_t thread, const struct ulma_trace_event *e)
{
	return w->sink->on_off(w->sink->ctx, w, thread, e->off, e->cpu, record_ns(w, &w->threads[thread], e->ticks),
			       e->count);
}

/* on_events when nothing is filtered out (keep_all): every frame is kept,
 * opened at its entry and closed at its exit, its parent the frame below
 * it; no pattern, window or duration to test.  Most exports of a whole
 * trace run this loop, so it is kept short. */
static int on_events_all(struct ulma_walk *w, uint32_t thread, const struct ulma_trace_event *ev, size_t n)
{
	struct ulma_walk_thread *t = &w->threads[thread];
	const struct ulma_walk_sink *sink = w->sink;
	/* The conversion in locals (see on_events_tree); the thread's clock
	 * stays in *t, which the sink's callbacks may read. */
	const uint64_t ticks0 = w->ticks0, fp = w->ns_per_tick_fp, cost_fp = w->cost_fp;
	const bool tsc = w->tsc;
	uint64_t events = 0;
	int err = 0;
	for (size_t i = 0; i < n && !err; i++) {
		const struct ulma_trace_event *e = &ev[i];
		if (e->kind == ULMA_EV_OFF) { /* time off the CPU: not a frame boundary */
			err = sink->on_off ? report_off(w, thread, e) : 0;
			continue;
		}
		events++;
		if (e->kind == ULMA_EV_LINE)
			continue; /* a line inside the frame on top */
		uint64_t ns = thread_clock_ns(t, e->ticks, ticks0, tsc, fp, cost_fp); /* event_ns, in locals */
		t->cpu = e->cpu;
		if (e->kind == ULMA_EV_ENTER) {
			if (t->depth == t->cap &&
			    ulma_array_grow((void **)&t->stack, &t->cap, t->depth, sizeof(*t->stack))) {
				err = -ENOMEM;
				break;
			}
			uint32_t d = t->depth++, up = d ? d - 1 : ULMA_WALK_NONE;
			t->stack[d] = (struct walk_slot){e->func, e->cpu, up, d, ns, 0, true};
			t->kept++;
			if (sink->on_open) {
				struct ulma_walk_frame fr = {e->func, d ? t->stack[d - 1].func : ULMA_WALK_NONE, d, e->cpu, ns,
							     0, 0};
				err = sink->on_open(sink->ctx, w, thread, &fr);
			}
		} else if (e->kind == ULMA_EV_EXIT) {
			if (t->depth == 0)
				continue;
			uint32_t d = --t->depth;
			const struct walk_slot *sl = &t->stack[d];
			uint64_t dur = ns - sl->start;
			if (sink->on_close) {
				struct ulma_walk_frame fr = {sl->func, d ? t->stack[d - 1].func : ULMA_WALK_NONE, d, e->cpu,
							     sl->start, ns, dur > sl->child ? dur - sl->child : 0};
				err = sink->on_close(sink->ctx, w, thread, &fr);
			}
			if (d)
				t->stack[d - 1].child += dur;
		} else {
			t->lost += e->count;
			w->lost += e->count;
		}
		t = &w->threads[thread];
	}
	w->events += events;
	w->frames = 0;
	for (uint32_t k = 0; k < w->nthreads; k++) /* every frame kept */
		w->frames += w->threads[k].kept;
	return err;
}

/* The CPU of the latest of ev[0..n) that steps the thread's clock (an
 * entry, an exit or a lost count), else cpu. */
static uint32_t latest_cpu(const struct ulma_trace_event *ev, size_t n, uint32_t cpu)
{
	while (n--)
		if (ev[n].kind != ULMA_EV_OFF && ev[n].kind != ULMA_EV_LINE)
			return ev[n].cpu;
	return cpu;
}

/* on_events_all for a sink taking the frames' edges in batches
 * (on_edges): no frame built and no call per frame, the thread's clock
 * and depth in locals (see on_events_tree), written back before each
 * batch goes out (its CPU then read back from the events: latest_cpu).
 * A slot of the shadow stack gets its function, start and children's
 * time only: the rest follows from its place when every frame is kept,
 * and complete_slots writes it for the frames still open at the end. */
#define EDGE_BATCH 256
static int on_events_edges(struct ulma_walk *w, uint32_t thread, const struct ulma_trace_event *ev, size_t n)
{
	struct ulma_walk_thread *t = &w->threads[thread];
	const struct ulma_walk_sink *sink = w->sink;
	struct local_clock clk;
	local_clock_load(&clk, w, t, ev, n);
	uint64_t kept = t->kept, events = 0;
	uint32_t depth = t->depth, cap = t->cap;
	struct walk_slot *stack = t->stack;
	struct ulma_walk_edge edges[EDGE_BATCH];
	size_t nedges = 0, from = 0; /* ev[from..) not yet looked at for the CPU */
	int err = 0;
	for (size_t i = 0; i < n; i++) {
		const struct ulma_trace_event *e = &ev[i];
		const unsigned kind = e->kind;
		if (__builtin_expect(nedges == EDGE_BATCH || kind == ULMA_EV_OFF, 0)) {
			/* the batch out, before what follows it */
			local_clock_store(&clk, t);
			t->cpu = latest_cpu(ev + from, i - from, t->cpu);
			from = i;
			t->kept = kept;
			t->depth = depth;
			err = nedges ? sink->on_edges(sink->ctx, w, thread, edges, nedges) : 0;
			nedges = 0;
			if (!err && kind == ULMA_EV_OFF && sink->on_off) /* time off the CPU: not a frame boundary */
				err = report_off(w, thread, e);
			t = &w->threads[thread];
			if (err)
				break;
			if (kind == ULMA_EV_OFF)
				continue;
		}
		if (__builtin_expect(kind == ULMA_EV_ENTER, 1)) {
			events++;
			uint64_t ns = local_clock_ns(&clk, t, e->ticks); /* event_ns, as there */
			if (__builtin_expect(depth == cap, 0)) {
				if (ulma_array_grow((void **)&t->stack, &t->cap, depth, sizeof(*t->stack))) {
					err = -ENOMEM;
					break;
				}
				stack = t->stack;
				cap = t->cap;
			}
			struct walk_slot *sl = &stack[depth++];
			sl->func = e->func;
			sl->start = ns;
			sl->child = 0;
			kept++;
			edges[nedges++] = (struct ulma_walk_edge){1, ns, e->func, e->cpu};
		} else if (__builtin_expect(kind == ULMA_EV_EXIT, 1)) {
			events++;
			uint64_t ns = local_clock_ns(&clk, t, e->ticks);
			if (depth == 0)
				continue;
			const struct walk_slot *sl = &stack[--depth];
			if (depth)
				stack[depth - 1].child += ns - sl->start;
			edges[nedges++] = (struct ulma_walk_edge){0, ns, sl->func, e->cpu};
		} else {
			events++;
			if (kind == ULMA_EV_LINE)
				continue; /* a line inside the frame on top */
			(void)local_clock_ns(&clk, t, e->ticks); /* LOST: the clock goes on */
			t->lost += e->count;
			w->lost += e->count;
		}
	}
	local_clock_store(&clk, t);
	t->cpu = latest_cpu(ev + from, n - from, t->cpu);
	t->kept = kept;
	t->depth = depth;
	if (!err && nedges)
		err = sink->on_edges(sink->ctx, w, thread, edges, nedges);
	w->events += events;
	w->frames = 0;
	for (uint32_t k = 0; k < w->nthreads; k++) /* every frame kept */
		w->frames += w->threads[k].kept;
	return err;
}

/* The rest of the open slots on_events_edges left out (their place tells
 * it), for the frames closed at the end (pop). */
static void complete_slots(struct ulma_walk_thread *t)
{
	for (uint32_t d = 0; d < t->depth; d++) {
		struct walk_slot *s = &t->stack[d];
		s->cpu = t->cpu;
		s->up = d ? d - 1 : ULMA_WALK_NONE;
		s->depth = d;
		s->opened = true;
	}
}

/* A frame the tree was fed directly, for on_close (close_from). */
static int close_tree_frame(struct ulma_walk *w, uint32_t thread, uint32_t node, uint32_t depth, uint32_t cpu,
			    uint64_t start, uint64_t end, uint64_t child)
{
	const struct ulma_calltree *tree = w->sink->tree;
	uint32_t parent = tree->nodes[node].parent;
	uint64_t dur = end - start;
	struct ulma_walk_frame f = {tree->nodes[node].key,
				    parent == ULMA_CALLTREE_ROOT ? ULMA_WALK_NONE : tree->nodes[parent].key,
				    depth,
				    cpu,
				    start,
				    end,
				    dur > child ? dur - child : 0};
	return w->sink->on_close(w->sink->ctx, w, thread, &f);
}

/* on_events_all for a sink that builds a call tree: the events go
 * straight into it, with no frame built and no callback per frame (but
 * for the long frames close_from asks for); and, where prof is set, into
 * the profile in the same loop (see on_events).  The thread's clock
 * (event_ns), the conversion, the tree's thread and the profile's are
 * held in locals: each store into a node, a frame or a row could alias
 * them, and they would be reloaded after every one.  Written back before
 * a callback and at the end.  Inlined into the two callers below, so
 * that each is compiled with prof known. */
static inline __attribute__((always_inline)) int
events_into_tree(struct ulma_walk *w, uint32_t thread, const struct ulma_trace_event *ev, size_t n,
		 struct ulma_profile *prof)
{
	struct ulma_walk_thread *t = &w->threads[thread];
	struct ulma_calltree *tree = w->sink->tree;
	const struct ulma_walk_func *funcs = w->funcs;
	/* the long frames' callback: its threshold may change in each call */
	const bool closing = w->sink->close_from && w->sink->on_close;
	uint64_t close_min = closing ? *w->sink->close_from : 0;
	struct local_clock clk;
	local_clock_load(&clk, w, t, ev, n);
	uint64_t kept = t->kept, events = 0;
	uint32_t cpu = t->cpu;
	struct ulma_ct_cursor cur;
	ulma_ct_cursor_load(tree, thread, &cur);
	struct ulma_profile_cursor pc;
	if (prof)
		ulma_profile_cursor_load(prof, thread, &pc);
	int err = 0;
	for (size_t i = 0; i < n; i++) {
		const struct ulma_trace_event *e = &ev[i];
		const unsigned kind = e->kind;
		if (__builtin_expect(kind == ULMA_EV_ENTER, 1)) {
			if (prof && i + 1 < n && e[1].kind == ULMA_EV_EXIT) { /* as ulma_profile_feed_events */
				if ((err = ulma_profile_cursor_call(prof, thread, &pc, e->func, e->ticks, e[1].ticks)))
					break;
			} else if (prof && (err = ulma_profile_cursor_enter(prof, thread, &pc, e->func, e->ticks))) {
				break;
			}
			events++;
			uint64_t ns = local_clock_ns(&clk, t, e->ticks); /* event_ns, as there */
			cpu = e->cpu;
			kept++;
			if ((err = ulma_ct_cursor_enter(tree, thread, &cur, funcs[e->func].key, ns)))
				break;
		} else if (__builtin_expect(kind == ULMA_EV_EXIT, 1)) {
			if (prof && !(i && e[-1].kind == ULMA_EV_ENTER)) /* else taken with its entry, a leaf call */
				ulma_profile_cursor_exit(prof, thread, &pc, e->ticks);
			events++;
			uint64_t ns = local_clock_ns(&clk, t, e->ticks);
			cpu = e->cpu;
			uint32_t d = cur.depth;
			if (!d)
				continue;
			const struct ulma_ct_frame *fr = &cur.frames[d - 1];
			uint64_t start = fr->start, child = fr->child;
			uint32_t node = fr->node;
			ulma_ct_cursor_leave(&cur, ns);
			if (closing && ns - start >= close_min) {
				local_clock_store(&clk, t);
				t->cpu = cpu;
				t->kept = kept;
				ulma_ct_cursor_store(tree, thread, &cur);
				if (prof)
					ulma_profile_cursor_store(&pc);
				err = close_tree_frame(w, thread, node, d - 1, e->cpu, start, ns, child);
				ulma_ct_cursor_load(tree, thread, &cur);
				if (prof)
					ulma_profile_cursor_load(prof, thread, &pc);
				close_min = *w->sink->close_from;
				t = &w->threads[thread];
				if (err)
					break;
			}
		} else {
			if (prof) { /* the rare events through the profile's general path */
				ulma_profile_cursor_store(&pc);
				err = ulma_profile_feed_event(&w->feed, thread, e);
				ulma_profile_cursor_load(prof, thread, &pc);
				if (err)
					break;
			}
			if (kind == ULMA_EV_OFF)
				continue; /* time off the CPU: not a frame boundary */
			events++;
			if (kind == ULMA_EV_LINE)
				continue; /* a line inside the frame on top */
			(void)local_clock_ns(&clk, t, e->ticks); /* LOST: the clock goes on */
			cpu = e->cpu;
			t->lost += e->count;
			w->lost += e->count;
		}
	}
	ulma_ct_cursor_store(tree, thread, &cur);
	if (prof)
		ulma_profile_cursor_store(&pc);
	local_clock_store(&clk, t);
	t->cpu = cpu;
	t->kept = kept;
	w->events += events;
	w->frames = 0;
	for (uint32_t k = 0; k < w->nthreads; k++) /* every frame kept */
		w->frames += w->threads[k].kept;
	return err;
}

static int on_events_tree(struct ulma_walk *w, uint32_t thread, const struct ulma_trace_event *ev, size_t n)
{
	return events_into_tree(w, thread, ev, n, NULL);
}

static int on_events_tree_profile(struct ulma_walk *w, uint32_t thread, const struct ulma_trace_event *ev, size_t n)
{
	return events_into_tree(w, thread, ev, n, w->sink->profile);
}

static int on_events(void *ctx, uint32_t thread, const struct ulma_trace_event *ev, size_t n)
{
	struct ulma_walk *w = ctx;
	/* A profile and a tree fed from the same events (the HTML report) in
	 * one loop: each keeps a stack whose updates wait on the previous
	 * event's, and interleaved the processor overlaps the two chains.  Not
	 * where the thread's schedstat samples need interpolating (they come
	 * between chunks, so a batch has them throughout or not at all). */
	if (w->keep_all && w->sink->tree && w->sink->profile &&
	    ulma_schedline_empty(ulma_profile_feed_schedline(&w->feed, thread)))
		return on_events_tree_profile(w, thread, ev, n);
	if (w->sink->profile && w->threads[thread].pass) {
		int err = ulma_profile_feed_events(&w->feed, thread, ev, n); /* as recorded */
		if (err)
			return err;
	}
	if (w->keep_all)
		return w->sink->tree	  ? on_events_tree(w, thread, ev, n)
		       : w->sink->on_edges ? on_events_edges(w, thread, ev, n)
					   : on_events_all(w, thread, ev, n);
	struct ulma_walk_thread *t = &w->threads[thread];
	for (size_t i = 0; i < n; i++) {
		const struct ulma_trace_event *e = &ev[i];
		if (e->kind == ULMA_EV_OFF) { /* time off the CPU: not a frame boundary */
			int err = t->pass && w->sink->on_off ? report_off(w, thread, e) : 0;
			if (err)
				return err;
			continue;
		}
		w->events++;
		if (e->kind == ULMA_EV_LOST)
			w->lost += e->count;
		if (!t->pass || e->kind == ULMA_EV_LINE)
			continue;
		uint64_t ns = event_ns(w, t, e);
		int err = 0;
		switch (e->kind) {
		case ULMA_EV_ENTER:
			err = push(w, thread, t, e->func, ns, e->cpu);
			t = &w->threads[thread];
			break;
		case ULMA_EV_EXIT:
			err = t->depth ? pop(w, thread, ns, e->cpu) : 0;
			t = &w->threads[thread];
			break;
		default:
			t->lost += e->count;
			break;
		}
		if (err)
			return err;
	}
	return 0;
}

int ulma_walk_run(struct ulma_walk *w, FILE *f, const struct ulma_walk_sink *sink, struct ulma_trace_status *st)
{
	static const struct ulma_walk_sink none = {0};
	const struct ulma_walk_filter *flt = &w->filter;
	w->sink = sink ? sink : &none;
	w->keep_all = flt->tid == ULMA_WALK_ALL && flt->pid == ULMA_WALK_ALL && flt->from_ns == 0 &&
		      flt->to_ns == UINT64_MAX && flt->min_duration_ns == 0 && flt->ninclude == 0 && flt->nexclude == 0;
	ulma_walk_scan_ahead(w, f);
	struct ulma_trace_visitor v = {.on_events = on_events};
	ulma_walk_visitor_init(w, &v);
	if (w->sink->profile)
		ulma_profile_feed_init(&w->feed, w->sink->profile);
	int err = ulma_trace_read(f, &v, st);
	if (err)
		return err;
	if (w->sink->profile)
		ulma_profile_feed_finish(&w->feed, st->complete ? &w->end : NULL, st->last_ticks);
	w->complete = st->complete;
	uint64_t end = to_ns(w, st->complete ? w->end_ticks : st->last_ticks);
	uint64_t last = to_ns(w, st->last_ticks);
	if (last > end)
		end = last;
	w->duration_ns = end;
	for (uint32_t i = 0; i < w->nthreads; i++) {
		struct ulma_walk_thread *t = &w->threads[i];
		uint64_t shift = t->shift_fp >> 32, at = end > shift ? end - shift : 0;
		if (at < t->last_ns)
			at = t->last_ns;
		if (ulma_walk_feeds_tree(w)) /* frames still open in the tree fed directly */
			while (ulma_calltree_depth(w->sink->tree, i)) {
				uint32_t d = ulma_calltree_depth(w->sink->tree, i);
				const struct ulma_ct_frame fr = w->sink->tree->threads[i].frames[d - 1];
				ulma_calltree_leave(w->sink->tree, i, at);
				if (w->sink->close_from && at - fr.start >= *w->sink->close_from && w->sink->on_close &&
				    (err = close_tree_frame(w, i, fr.node, d - 1, t->cpu, fr.start, at, fr.child)))
					return err;
			}
		if (w->keep_all && !w->sink->tree && w->sink->on_edges)
			complete_slots(t);
		while (t->depth)
			if ((err = pop(w, i, at, t->cpu)))
				return err;
		if (w->threads[i].nheld && (err = release_marks(w, i, UINT64_MAX)))
			return err;
	}
	return 0;
}
