/* clock.c - TSC detection, paired sampling and calibration (see clock.h). */
#include "clock.h"

#include <stdlib.h>
#include <string.h>
#if ULMA_HAVE_RDTSCP
#include <cpuid.h>
#endif

bool ulma_clock_tsc_usable(void)
{
	const char *force = getenv("ULMA_CLOCK");
	if (force && strcmp(force, "monotonic") == 0)
		return false;
#if ULMA_HAVE_RDTSCP
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return false;
	if (!__get_cpuid(0x80000001u, &a, &b, &c, &d) || !(d & (1u << 27))) /* RDTSCP */
		return false;
	if (!__get_cpuid(0x80000007u, &a, &b, &c, &d) || !(d & (1u << 8))) /* invariant TSC */
		return false;
	return true;
#else
	return false;
#endif
}

void ulma_clock_sample(bool use_tsc, struct ulma_clock_pair *out)
{
	uint64_t best_width = UINT64_MAX;
	uint32_t cpu;
	out->ticks = 0;
	out->ns = 0;
	for (int i = 0; i < 16; i++) {
		uint64_t t0 = ulma_clock_now(use_tsc, &cpu);
		uint64_t ns = ulma_clock_monotonic_ns();
		uint64_t t1 = ulma_clock_now(use_tsc, &cpu);
		if (t1 >= t0 && t1 - t0 < best_width) {
			best_width = t1 - t0;
			out->ticks = t0 + (t1 - t0) / 2;
			out->ns = ns;
		}
	}
}

uint64_t ulma_clock_measure_hz(bool use_tsc)
{
	struct ulma_clock_pair a, b;
	if (!use_tsc)
		return 1000000000u;
	ulma_clock_sample(true, &a);
	do
		ulma_clock_sample(true, &b);
	while (b.ns - a.ns < 2000000);
	return (uint64_t)((double)(b.ticks - a.ticks) * 1e9 / (double)(b.ns - a.ns) + 0.5);
}

void ulma_clock_calibrate(bool use_tsc, const struct ulma_clock_pair *start,
			  const struct ulma_clock_pair *end, uint64_t fallback_hz,
			  struct ulma_clock_calibration *out)
{
	out->ticks0 = start->ticks;
	out->ns0 = start->ns;
	if (!use_tsc) {
		out->ns_per_tick = 1.0;
		return;
	}
	if (end && end->ns > start->ns + 1000000 && end->ticks > start->ticks)
		out->ns_per_tick = (double)(end->ns - start->ns) / (double)(end->ticks - start->ticks);
	else
		out->ns_per_tick = fallback_hz ? 1e9 / (double)fallback_hz : 1.0;
}

void ulma_clock_track_init(struct ulma_clock_track *t, bool use_tsc, const struct ulma_clock_pair *start,
			   uint64_t hz)
{
	memset(t, 0, sizeof(*t));
	t->use_tsc = use_tsc;
	t->start = *start;
	t->pair[0] = *start;
	t->npairs = 1;
	t->next = 1;
	t->ticks_per_ns = use_tsc && hz ? (double)hz / 1e9 : 1.0;
}

void ulma_clock_track_update(struct ulma_clock_track *t)
{
	struct ulma_clock_pair p;
	if (!t->use_tsc)
		return;
	const struct ulma_clock_pair *last = &t->pair[(t->next + ULMA_CLOCK_TRACK_PAIRS - 1) % ULMA_CLOCK_TRACK_PAIRS];
	uint64_t now = ulma_clock_monotonic_ns();
	if (now < last->ns + ULMA_CLOCK_TRACK_EVERY_NS)
		return; /* the pair in hand is recent enough */
	ulma_clock_sample(true, &p);
	t->pair[t->next] = p;
	t->next = (t->next + 1) % ULMA_CLOCK_TRACK_PAIRS;
	if (t->npairs < ULMA_CLOCK_TRACK_PAIRS)
		t->npairs++;
	/* the longer the span, the better the rate: after 10 ms, use it */
	if (p.ns > t->start.ns + 10000000 && p.ticks > t->start.ticks)
		t->ticks_per_ns = (double)(p.ticks - t->start.ticks) / (double)(p.ns - t->start.ns);
}

/* The pair nearest v.  The ring holds the pairs in time order (the newest
 * just before `next`), so from the newest back the distance falls until
 * the pairs pass v and rises after: stop there.  A switch record is most
 * often newer than all but the last pair or two. */
static const struct ulma_clock_pair *nearest(const struct ulma_clock_track *t, uint64_t v, bool by_ns)
{
	unsigned k = (t->next + ULMA_CLOCK_TRACK_PAIRS - 1) % ULMA_CLOCK_TRACK_PAIRS;
	const struct ulma_clock_pair *best = &t->pair[k];
	uint64_t best_d = UINT64_MAX;
	for (unsigned i = 0; i < t->npairs; i++, k = (k + ULMA_CLOCK_TRACK_PAIRS - 1) % ULMA_CLOCK_TRACK_PAIRS) {
		uint64_t x = by_ns ? t->pair[k].ns : t->pair[k].ticks;
		uint64_t d = x > v ? x - v : v - x;
		if (d >= best_d)
			break;
		best_d = d;
		best = &t->pair[k];
	}
	return best;
}

uint64_t ulma_clock_track_ticks(const struct ulma_clock_track *t, uint64_t ns)
{
	if (!t->use_tsc)
		return ns;
	const struct ulma_clock_pair *p = nearest(t, ns, true);
	double d = ((double)ns - (double)p->ns) * t->ticks_per_ns;
	double ticks = (double)p->ticks + d;
	return ulma_u64_from_double(ticks + 0.5);
}

uint64_t ulma_clock_track_ns(const struct ulma_clock_track *t, uint64_t ticks)
{
	if (!t->use_tsc)
		return ticks;
	const struct ulma_clock_pair *p = nearest(t, ticks, false);
	double d = ((double)ticks - (double)p->ticks) / t->ticks_per_ns;
	return ulma_u64_from_double((double)p->ns + d + 0.5);
}
