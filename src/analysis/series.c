/* series.c - a bounded time series keeping its extremes (see series.h). */
#include "series.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void ulma_series_init(struct ulma_series *s, uint32_t cap)
{
	memset(s, 0, sizeof(*s));
	s->cap = cap < 2 ? 2 : cap & ~1u;
	s->per = 1;
}

void ulma_series_free(struct ulma_series *s)
{
	free(s->b);
	s->b = NULL;
	s->nb = 0;
}

static struct ulma_series_bucket merged(const struct ulma_series_bucket *x, const struct ulma_series_bucket *y)
{
	struct ulma_series_bucket m;
	m.lo = y->lo.v < x->lo.v ? y->lo : x->lo; /* the earlier of equal values */
	m.hi = y->hi.v > x->hi.v ? y->hi : x->hi;
	return m;
}

int ulma_series_add(struct ulma_series *s, uint64_t at, double v)
{
	if (!s->b && !(s->b = malloc((size_t)s->cap * sizeof(*s->b))))
		return -ENOMEM;
	if (s->values && at < s->last.at)
		at = s->last.at;
	struct ulma_series_point p = {at, v};
	if (s->values % s->per == 0) { /* a new bucket */
		if (s->nb == s->cap) { /* full: halve the buckets, each takes twice as many values */
			for (uint32_t i = 0; i < s->cap / 2; i++)
				s->b[i] = merged(&s->b[2 * i], &s->b[2 * i + 1]);
			s->nb = s->cap / 2;
			s->per *= 2;
		}
	}
	if (s->values % s->per == 0) {
		s->b[s->nb++] = (struct ulma_series_bucket){p, p};
	} else {
		struct ulma_series_bucket *b = &s->b[s->nb - 1];
		if (v < b->lo.v)
			b->lo = p;
		if (v > b->hi.v)
			b->hi = p;
	}
	if (!s->values || v < s->min)
		s->min = v;
	if (!s->values || v > s->max)
		s->max = v;
	s->values++;
	s->last = p;
	return 0;
}

uint32_t ulma_series_points(const struct ulma_series *s, struct ulma_series_point *out)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < s->nb; i++) {
		const struct ulma_series_bucket *b = &s->b[i];
		const struct ulma_series_point *first = b->lo.at <= b->hi.at ? &b->lo : &b->hi;
		const struct ulma_series_point *second = first == &b->lo ? &b->hi : &b->lo;
		out[n++] = *first;
		if (second->at != first->at || second->v != first->v)
			out[n++] = *second;
	}
	if (s->values && (n == 0 || out[n - 1].at != s->last.at || out[n - 1].v != s->last.v))
		out[n++] = s->last;
	return n;
}
