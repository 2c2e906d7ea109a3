/* profile_lines.c - line rows and the calls under them (see profile_lines.h). */
#include "profile_lines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../core/array.h"

#define NO_ROW UINT32_MAX

static uint64_t grown(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

#define MAX_SPAN 65536u /* lines a function's direct table covers; beyond, the hash map */

/* Slow path of row_of: find or add the row, and cover its line in the
 * function's direct table where the span allows. */
static uint32_t row_of_slow(struct ulma_profile *p, struct ulma_profile_lines *l, uint32_t func, uint32_t line)
{
	struct ulma_func_row *f = &p->funcs[func];
	uint64_t key = (uint64_t)(func + 1u) << 32 | line;
	uint32_t row;
	if (!ulma_idmap_get(&l->row_of, key, &row)) {
		row = l->nrows;
		if (ulma_array_grow((void **)&l->rows, &l->cap_rows, row, sizeof(*l->rows)) ||
		    ulma_idmap_put(&l->row_of, key, row))
			return NO_ROW;
		l->rows[row] = (struct ulma_line_row){.func = func,
						      .line = line,
						      .next = f->line_rows ? f->first_line_row : NO_ROW,
						      .first_call = NO_ROW};
		l->nrows++;
		f->first_line_row = row;
		f->line_rows++;
	}
	/* the direct table: [line_base, line_base + line_span), in 64 bits:
	 * a line near 2^32 must not wrap its end around to 0 */
	uint64_t end = (uint64_t)f->line_base + f->line_span;
	uint64_t lo = f->line_span && f->line_base < line ? f->line_base : line;
	uint64_t hi = f->line_span && end > (uint64_t)line + 1 ? end : (uint64_t)line + 1;
	if (hi - lo > MAX_SPAN)
		return row;
	if (lo != f->line_base || hi - lo != f->line_span) {
		uint32_t *t = malloc((size_t)(hi - lo) * sizeof(*t));
		if (!t)
			return row;
		for (uint64_t i = 0; i < hi - lo; i++)
			t[i] = NO_ROW;
		for (uint32_t i = 0; i < f->line_span; i++)
			t[f->line_base - lo + i] = f->line_row_of[i];
		free(f->line_row_of);
		f->line_row_of = t;
		f->line_base = (uint32_t)lo;
		f->line_span = (uint32_t)(hi - lo);
	}
	f->line_row_of[line - lo] = row;
	return row;
}

/* The row of (func, line), added if new; NO_ROW if out of memory. */
static inline uint32_t row_of(struct ulma_profile *p, struct ulma_profile_lines *l, uint32_t func, uint32_t line)
{
	const struct ulma_func_row *f = &p->funcs[func];
	uint32_t at = line - f->line_base;
	if (ULMA_LIKELY(at < f->line_span && f->line_row_of[at] != NO_ROW))
		return f->line_row_of[at];
	return row_of_slow(p, l, func, line);
}

static int add_call(struct ulma_profile_lines *l, uint32_t row, uint32_t callee, uint64_t ticks, uint64_t events)
{
	uint64_t key = (uint64_t)(row + 1u) << 32 | callee;
	uint32_t call;
	if (!ulma_idmap_get(&l->call_of, key, &call)) {
		call = l->ncalls;
		if (ulma_array_grow((void **)&l->calls, &l->cap_calls, call, sizeof(*l->calls)) ||
		    ulma_idmap_put(&l->call_of, key, call))
			return -ENOMEM;
		l->calls[call] = (struct ulma_line_call){.row = row, .callee = callee, .next = l->rows[row].first_call};
		l->rows[row].first_call = call;
		l->ncalls++;
	}
	l->calls[call].calls++;
	l->calls[call].ticks += ticks;
	l->calls[call].events += events;
	return 0;
}

/* The open line `o` of a frame of thread t ends at the thread's last event. */
static void close_line(struct ulma_profile_lines *l, const struct ulma_thread_row *t, struct ulma_line_open *o)
{
	struct ulma_line_row *r = &l->rows[o->row];
	r->ticks += grown(t->last_ticks, o->start);
	r->events += grown(t->events, o->events0);
	r->alloc_count += grown(t->alloc_count, o->alloc_count0);
	r->alloc_bytes += grown(t->alloc_bytes, o->alloc_bytes0);
	if (t->now.offs != o->at.offs) {
		r->blocked_ns += grown(t->now.blocked_ns, o->at.blocked_ns);
		r->runnable_ns += grown(t->now.runnable_ns, o->at.runnable_ns);
		r->gil_ns += grown(t->now.gil_ns, o->at.gil_ns);
	}
	o->row = NO_ROW;
}

/* The line state of the frame at depth index d, if it has one. */
static struct ulma_line_open *open_line(const struct ulma_thread_row *t, uint32_t d)
{
	if (d >= t->lines_cap)
		return NULL;
	struct ulma_line_open *o = &t->lines[d];
	return o->frame == t->stack[d].events0 && o->row != NO_ROW ? o : NULL;
}

static struct ulma_profile_lines *need_lines(struct ulma_profile *p)
{
	if (!p->lines)
		p->lines = calloc(1, sizeof(*p->lines));
	return p->lines;
}

int ulma_profile_line(struct ulma_profile *p, uint32_t thread, uint64_t ticks, uint32_t line, bool hit)
{
	struct ulma_thread_row *t = &p->threads[thread];
	ulma_profile_charge(p, t, ticks);
	t->events++;
	if (t->depth == 0)
		return 0;
	if (!need_lines(p))
		return -ENOMEM;
	uint32_t d = t->depth - 1;
	if (d >= t->lines_cap) {
		uint32_t old = t->lines_cap;
		if (ulma_array_grow((void **)&t->lines, &t->lines_cap, d, sizeof(*t->lines)))
			return -ENOMEM;
		for (uint32_t i = old; i < t->lines_cap; i++)
			t->lines[i] = (struct ulma_line_open){.frame = 0, .row = NO_ROW};
	}
	struct ulma_line_open *o = open_line(t, d);
	if (o)
		close_line(p->lines, t, o);
	uint32_t row = row_of(p, p->lines, t->stack[d].func, line);
	if (row == NO_ROW)
		return -ENOMEM;
	if (hit)
		p->lines->rows[row].hits++;
	t->lines[d] = (struct ulma_line_open){
		.frame = t->stack[d].events0,
		.row = row,
		.start = t->last_ticks,
		.events0 = t->events,
		.at = t->now,
		.alloc_count0 = t->alloc_count,
		.alloc_bytes0 = t->alloc_bytes};
	return 0;
}

void ulma_profile_lines_pop(struct ulma_profile *p, struct ulma_thread_row *t, const struct ulma_frame *f)
{
	uint32_t d = (uint32_t)(f - t->stack);
	struct ulma_line_open *o = open_line(t, d);
	if (o)
		close_line(p->lines, t, o);
	struct ulma_line_open *caller = d ? open_line(t, d - 1) : NULL;
	if (caller && add_call(p->lines, caller->row, f->func, grown(t->last_ticks, f->start),
					grown(t->events, f->events0)))
		p->lines_failed = true;
}

static const struct ulma_line_row *sort_rows;

static int by_line(const void *a, const void *b)
{
	uint32_t x = sort_rows[*(const uint32_t *)a].line, y = sort_rows[*(const uint32_t *)b].line;
	return x < y ? -1 : x > y;
}

int ulma_profile_lines_of(const struct ulma_profile *p, uint32_t func, uint32_t **out)
{
	*out = NULL;
	if (!ulma_profile_has_lines(p, func))
		return 0;
	uint32_t n = p->funcs[func].line_rows, k = 0;
	uint32_t *rows = malloc(n * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (uint32_t i = p->funcs[func].first_line_row; i != NO_ROW && k < n; i = p->lines->rows[i].next)
		rows[k++] = i;
	sort_rows = p->lines->rows;
	qsort(rows, k, sizeof(*rows), by_line);
	*out = rows;
	return (int)k;
}

bool ulma_profile_has_lines(const struct ulma_profile *p, uint32_t func)
{
	return p->lines && func < p->nfuncs && p->funcs[func].line_rows;
}

int ulma_profile_add_source(struct ulma_profile *p, const char *path, size_t path_len, const char *text, size_t len,
			    unsigned flags)
{
	struct ulma_profile_lines *l = need_lines(p);
	char *pa = ulma_strndup(path, path_len), *tx = ulma_strndup(text, len);
	if (!l || !pa || !tx ||
	    ulma_array_grow((void **)&l->sources, &l->cap_sources, l->nsources, sizeof(*l->sources))) {
		free(pa);
		free(tx);
		return -ENOMEM;
	}
	struct ulma_profile_source *old = (struct ulma_profile_source *)ulma_profile_source_of(p, pa);
	if (!old)
		old = &l->sources[l->nsources++];
	else {
		free(old->path);
		free(old->text);
	}
	*old = (struct ulma_profile_source){pa, tx, len, flags};
	return 0;
}

const struct ulma_profile_source *ulma_profile_source_of(const struct ulma_profile *p, const char *path)
{
	for (uint32_t i = 0; p->lines && i < p->lines->nsources; i++)
		if (strcmp(p->lines->sources[i].path, path) == 0)
			return &p->lines->sources[i];
	return NULL;
}

void ulma_profile_lines_free(struct ulma_profile_lines *l)
{
	if (!l)
		return;
	for (uint32_t i = 0; i < l->nsources; i++) {
		free(l->sources[i].path);
		free(l->sources[i].text);
	}
	free(l->sources);
	free(l->rows);
	free(l->calls);
	ulma_idmap_free(&l->row_of);
	ulma_idmap_free(&l->call_of);
	free(l);
}
