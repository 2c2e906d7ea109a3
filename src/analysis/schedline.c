/* schedline.c - interpolation of sampled CPU and run-queue time (see schedline.h). */
#include "schedline.h"

#include "../core/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ulma_schedline_add(struct ulma_schedline *l, const struct ulma_trace_sched *sample)
{
	if (!ulma_schedline_empty(l)) {
		const struct ulma_trace_sched *last = &l->s[l->n - 1];
		if (sample->ticks <= last->ticks || sample->cpu_ns < last->cpu_ns || sample->wait_ns < last->wait_ns ||
		    sample->gil_ns < last->gil_ns)
			return 0;
	}
	if (l->n == l->first + 1)
		l->rated = false; /* a second sample: the first interval gets its rates */
	if (l->n == l->cap) {
		if (l->first > 0) { /* slide the kept samples to the front */
			memmove(l->s, l->s + l->first, (l->n - l->first) * sizeof(*l->s));
			l->n -= l->first;
			l->first = 0;
		} else {
			size_t cap = l->cap ? l->cap * 2 : 16;
			struct ulma_trace_sched *s = realloc(l->s, cap * sizeof(*s));
			if (!s)
				return -ENOMEM;
			l->s = s;
			l->cap = cap;
		}
	}
	l->s[l->n++] = *sample;
	return 0;
}

void ulma_schedline_at(struct ulma_schedline *l, uint64_t ticks, struct ulma_sched_clocks *at)
{
	if (ulma_schedline_empty(l)) {
		*at = (struct ulma_sched_clocks){0, 0, 0};
		return;
	}
	/* keep the newest sample at or before ticks as the oldest we hold */
	while (l->n - l->first >= 2 && l->s[l->first + 1].ticks <= ticks) {
		l->first++;
		l->rated = false;
	}
	const struct ulma_trace_sched *a = &l->s[l->first];
	if (ticks <= a->ticks || l->n - l->first == 1) {
		*at = (struct ulma_sched_clocks){a->cpu_ns, a->wait_ns, a->gil_ns};
		return;
	}
	if (!l->rated) { /* once per interval, not per event */
		const struct ulma_trace_sched *b = a + 1;
		double span = (double)(b->ticks - a->ticks);
		l->cpu_per_tick = (double)(b->cpu_ns - a->cpu_ns) / span;
		l->wait_per_tick = (double)(b->wait_ns - a->wait_ns) / span;
		l->gil_per_tick = (double)(b->gil_ns - a->gil_ns) / span;
		l->rated = true;
	}
	double into = (double)(ticks - a->ticks);
	at->cpu_ns = a->cpu_ns + ulma_u64_from_double(l->cpu_per_tick * into + 0.5);
	at->wait_ns = a->wait_ns + ulma_u64_from_double(l->wait_per_tick * into + 0.5);
	at->gil_ns = a->gil_ns + ulma_u64_from_double(l->gil_per_tick * into + 0.5);
}

static uint64_t growth(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

bool ulma_schedline_off(struct ulma_schedline *l, uint64_t ticks, double ns_per_tick, struct ulma_schedline_off *out)
{
	*out = (struct ulma_schedline_off){0, 0, 0};
	if (ulma_schedline_empty(l))
		return false;
	struct ulma_sched_clocks at;
	ulma_schedline_at(l, ticks, &at);
	if (!l->queried) {
		l->queried = true;
		l->first_ticks = ticks;
		l->first_at = l->prev = at;
		return false;
	}
	/* blocked time since the first query, whole: rounding once, not per event */
	uint64_t wall = ticks > l->first_ticks
				? ulma_u64_from_double((double)(ticks - l->first_ticks) * ns_per_tick + 0.5)
				: 0;
	uint64_t busy = growth(at.cpu_ns, l->first_at.cpu_ns) + growth(at.wait_ns, l->first_at.wait_ns);
	uint64_t blocked = growth(wall, busy);
	if (blocked < l->prev_blocked_ns)
		blocked = l->prev_blocked_ns;
	out->blocked_ns = blocked - l->prev_blocked_ns;
	out->runnable_ns = growth(at.wait_ns, l->prev.wait_ns);
	out->gil_ns = growth(at.gil_ns, l->prev.gil_ns); /* may run ahead of blocked: outputs clamp */
	l->prev_blocked_ns = blocked;
	l->prev = at;
	return out->blocked_ns || out->runnable_ns || out->gil_ns;
}

void ulma_schedline_free(struct ulma_schedline *l)
{
	free(l->s);
	memset(l, 0, sizeof(*l));
}
