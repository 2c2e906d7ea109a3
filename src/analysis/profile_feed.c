/* profile_feed.c - reader events into a profile (see profile_feed.h). */
#include "profile_feed.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile_lines.h"
#include "profile_memory.h"
#include "ulma/trace_format.h"

void ulma_profile_feed_init(struct ulma_profile_feed *f, struct ulma_profile *p)
{
	memset(f, 0, sizeof(*f));
	f->profile = p;
	f->ns_per_tick = 1.0;
}

void ulma_profile_feed_free(struct ulma_profile_feed *f)
{
	for (uint32_t i = 0; i < f->nsched; i++)
		ulma_schedline_free(&f->sched[i]);
	free(f->sched);
	f->sched = NULL;
	f->nsched = 0;
}

void ulma_profile_feed_meta(struct ulma_profile_feed *f, const struct ulma_trace_meta *m)
{
	f->ns_per_tick = (m->flags & ULMA_META_TSC) && m->tick_hz ? 1e9 / (double)m->tick_hz : 1.0;
}

int ulma_profile_feed_thread(struct ulma_profile_feed *f, const struct ulma_trace_thread *t)
{
	if (t->index >= f->nsched) {
		uint32_t n = t->index + 1;
		struct ulma_schedline *v = realloc(f->sched, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(v + f->nsched, 0, (n - f->nsched) * sizeof(*v));
		f->sched = v;
		f->nsched = n;
	}
	return ulma_profile_add_thread(f->profile, t->index, t->serial, t->pid, t->tid);
}

int ulma_profile_feed_sched(struct ulma_profile_feed *f, uint32_t thread, const struct ulma_trace_sched *s)
{
	ulma_profile_sample(f->profile, thread, s->cpu_ns, s->gil_known);
	return ulma_schedline_add(&f->sched[thread], s);
}

int ulma_profile_feed_event(struct ulma_profile_feed *f, uint32_t thread, const struct ulma_trace_event *e)
{
	struct ulma_profile *p = f->profile;
	struct ulma_schedline *line = &f->sched[thread];
	if (!ulma_schedline_empty(line)) {
		struct ulma_schedline_off o;
		if (ulma_schedline_off(line, e->ticks, f->ns_per_tick, &o))
			ulma_profile_off(p, thread, o.blocked_ns, o.runnable_ns, o.gil_ns, 0, 0);
	}
	switch (e->kind) {
	case ULMA_EV_ENTER:
		return ulma_profile_enter(p, thread, e->func, e->ticks);
	case ULMA_EV_EXIT:
		ulma_profile_exit(p, thread, e->ticks);
		return 0;
	case ULMA_EV_LINE:
		return ulma_profile_line(p, thread, e->ticks, (uint32_t)e->count, !e->resumed);
	case ULMA_EV_OFF: {
		bool runnable = e->off == ULMA_OFF_RUNNABLE;
		p->split = ULMA_PROFILE_SPLIT_SWITCHES;
		ulma_profile_off(p, thread, runnable ? 0 : e->count, runnable ? e->count : 0,
				 e->off == ULMA_OFF_GIL ? e->count : 0, !runnable, runnable);
		return 0;
	}
	default:
		ulma_profile_lost(p, thread, e->ticks, e->count);
		return 0;
	}
}

int ulma_profile_feed_events(struct ulma_profile_feed *f, uint32_t thread, const struct ulma_trace_event *ev, size_t n)
{
	struct ulma_profile *p = f->profile;
	/* Samples come between chunks, never inside a batch: a thread with none
	 * left now has none for the whole batch, and its events need no
	 * interpolation (ulma_profile_feed_event's first step). */
	if (!ulma_schedline_empty(&f->sched[thread])) {
		for (size_t i = 0; i < n; i++) {
			int err = ulma_profile_feed_event(f, thread, &ev[i]);
			if (err)
				return err;
		}
		return 0;
	}
	struct ulma_profile_cursor c; /* the thread in locals (profile.h) */
	ulma_profile_cursor_load(p, thread, &c);
	int err = 0;
	for (size_t i = 0; i < n && !err; i++) {
		const struct ulma_trace_event *e = &ev[i];
		if (e->kind == ULMA_EV_ENTER && i + 1 < n && e[1].kind == ULMA_EV_EXIT) {
			/* a leaf call: its exit is the next event (an exit closes the top frame) */
			err = ulma_profile_cursor_call(p, thread, &c, e->func, e->ticks, e[1].ticks);
			i++;
		} else if (e->kind == ULMA_EV_ENTER) {
			err = ulma_profile_cursor_enter(p, thread, &c, e->func, e->ticks);
		} else if (e->kind == ULMA_EV_EXIT) {
			ulma_profile_cursor_exit(p, thread, &c, e->ticks);
		} else {
			ulma_profile_cursor_store(&c);
			err = ulma_profile_feed_event(f, thread, e);
			ulma_profile_cursor_load(p, thread, &c);
		}
	}
	ulma_profile_cursor_store(&c);
	return err;
}

void ulma_profile_feed_finish(struct ulma_profile_feed *f, const struct ulma_trace_end *end, uint64_t last_ticks)
{
	struct ulma_profile *p = f->profile;
	if (end && end->split == ULMA_SPLIT_SWITCHES) /* also where no thread ever left its CPU */
		p->split = ULMA_PROFILE_SPLIT_SWITCHES;
	if (end && end->gil_split)
		p->has_gil = 1;
	ulma_profile_finish(p, end ? end->end_ticks : last_ticks);
	if (end && end->lost > p->lost)
		p->lost = end->lost; /* includes threads that never got a ring */
	if (end && p->memory)
		p->memory->unattributed = end->mem_unattributed;
}

int ulma_profile_feed_memory(struct ulma_profile_feed *f, const struct ulma_trace_memory *m)
{
	struct ulma_profile *p = f->profile;
	if (!p->memory || m->thread >= p->nthreads)
		return 0; /* a trace without --memory in META: not asked for */
	if (m->kind == ULMA_EXT_ALLOC)
		return ulma_profile_mem_alloc(p, m->thread, m->addr, m->size, m->domain, m->ticks);
	return ulma_profile_mem_free(p, m->thread, m->addr, m->ticks);
}

int ulma_profile_feed_object(struct ulma_profile_feed *f, const struct ulma_trace_object *o)
{
	struct ulma_profile *p = f->profile;
	if (!p->memory || o->thread >= p->nthreads)
		return 0;
	return ulma_profile_object(p, o->thread, o->type, o->kind == ULMA_EXT_OBJ_NEW);
}
