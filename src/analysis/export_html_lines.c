/* export_html_lines.c - the data of the HTML report's line view: for each
 * function with lines (recorded with `ulma run --lines`), its line rows,
 * the calls made on each line and the source the view shows.
 *
 * Nothing here aggregates: the rows are profile_lines.c's, of the profile
 * the walk fed with the passing threads' events (export_walk.h), so the
 * page shows what `ulma report --lines` prints: the same times, corrected
 * for the hook's cost and split by ulma_summary_line_times, and the same
 * lines, the function's block from the trace's copy of its file or its
 * rows' lines only (ulma_summary_line_block).
 *
 * The data stays bounded whatever the trace: the MAX_FUNCS functions
 * with lines that took longest, as long as their rows fit in MAX_ROWS (a
 * function with more is left out and counted); the MAX_CALLS longest
 * calls of a line, MAX_CALLS_ALL in all (the rest counted); source lines
 * cut at MAX_LINE_BYTES, and MAX_SOURCE bytes of source in all: functions
 * past it show line numbers, and the data says so.  Strings go through ulma_sbuf_json, which keeps them inside
 * their <script> element; the page puts them on screen as text.
 */
#include "export_html_lines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile_lines.h"
#include "summary_parts.h"
#include "ulma/trace_format.h"

#define MAX_FUNCS 2000u
#define MAX_CALLS 16u
#define MAX_LINE_BYTES 1000u
#define MAX_SOURCE (1u << 19)
#define MAX_ROWS 5000u
#define MAX_CALLS_ALL 10000u

/* What the data may still take. */
struct room {
	size_t source;   /* bytes of source */
	uint32_t rows;
	uint32_t calls;
	bool source_left_out; /* a function's source did not fit */
};

/* One source line (text[0..len), up to its newline) as a JSON string. */
static void put_line(struct ulma_sbuf *b, const char *p, const char *end)
{
	char buf[MAX_LINE_BYTES + 1];
	size_t n = 0;
	while (p < end && *p != '\n' && *p != '\r' && *p != 0 && n < MAX_LINE_BYTES)
		buf[n++] = *p++;
	buf[n] = 0;
	ulma_sbuf_json(b, buf);
}

/* [callee row, name, calls, ns] of the longest calls of a line (at most
 * MAX_CALLS, and what room is left), then how many more. */
static void put_calls(struct ulma_sbuf *b, const struct ulma_summary *s, const struct ulma_walk *w, uint32_t row,
		      const uint32_t *row_of, struct room *room)
{
	const struct ulma_profile_lines *l = s->profile->lines;
	uint32_t best[MAX_CALLS], nbest = 0, more = 0, most = room->calls < MAX_CALLS ? room->calls : MAX_CALLS;
	for (uint32_t i = l->rows[row].first_call; i != UINT32_MAX; i = l->calls[i].next) {
		uint32_t k = nbest < most ? nbest++ : most;
		if (k == most) { /* full: this one or the shortest kept is one more */
			more++;
			if (most == 0 || l->calls[i].ticks <= l->calls[best[k - 1]].ticks)
				continue;
			k--;
		}
		for (; k > 0 && l->calls[best[k - 1]].ticks < l->calls[i].ticks; k--)
			best[k] = best[k - 1];
		best[k] = i;
	}
	room->calls -= nbest;
	ulma_sbuf_puts(b, ",[");
	for (uint32_t k = 0; k < nbest; k++) {
		const struct ulma_line_call *c = &l->calls[best[k]];
		uint32_t callee = c->callee < w->nfuncs ? row_of[w->funcs[c->callee].key] : UINT32_MAX;
		ulma_sbuf_printf(b, "%s[%d,", k ? "," : "", callee == UINT32_MAX ? -1 : (int)callee);
		ulma_sbuf_json(b, s->profile->funcs[c->callee].name ? s->profile->funcs[c->callee].name : "?");
		ulma_sbuf_printf(b, ",%llu,%llu]", (unsigned long long)c->calls,
				 (unsigned long long)ulma_summary_call_ns(s, c));
	}
	ulma_sbuf_printf(b, "],%u", more);
}

/* [line, hits, total, on_cpu, runnable, blocked, gil, % of the function, calls, more calls,
 *  bytes allocated, allocations (both 0 without --memory)] */
static void put_row(struct ulma_sbuf *b, const struct ulma_summary *s, const struct ulma_walk *w, uint64_t lines_ns,
		    uint32_t row, const uint32_t *row_of, struct room *room)
{
	const struct ulma_line_row *r = &s->profile->lines->rows[row];
	struct ulma_time_split t;
	ulma_summary_line_times(s, r, &t);
	ulma_sbuf_printf(b, "[%u,%llu,%llu,%llu,%llu,%llu,%llu,%.1f", r->line, (unsigned long long)r->hits,
			 (unsigned long long)t.wall_ns, (unsigned long long)t.on_cpu_ns,
			 (unsigned long long)t.runnable_ns, (unsigned long long)t.blocked_ns,
			 (unsigned long long)t.gil_ns,
			 lines_ns ? 100.0 * (double)t.wall_ns / (double)lines_ns : 0.0);
	put_calls(b, s, w, row, row_of, room);
	ulma_sbuf_printf(b, ",%llu,%llu]", (unsigned long long)r->alloc_bytes, (unsigned long long)r->alloc_count);
}

/* The source the view shows of function func (rows sorted by line): the
 * block first..last ("first":N, "text":[every line]), or the rows' lines
 * ("text":[one per row]), if it fits in the room left. */
static int put_source(struct ulma_sbuf *b, const struct ulma_profile *p, uint32_t func, const uint32_t *rows, int n,
		      struct room *room)
{
	const struct ulma_func_row *f = &p->funcs[func];
	const struct ulma_line_row *lr = p->lines->rows;
	const struct ulma_profile_source *src = f->file ? ulma_profile_source_of(p, f->file) : NULL;
	if (!src) {
		ulma_sbuf_puts(b, ",\"source\":\"none\"");
		return 0;
	}
	ulma_sbuf_printf(b, ",\"changed\":%s,\"cut\":%s", src->flags & ULMA_SOURCE_CHANGED ? "true" : "false",
			 src->flags & ULMA_SOURCE_CUT ? "true" : "false");
	uint32_t nlines, first, last;
	size_t *starts = ulma_summary_split_lines(src->text, src->len, &nlines);
	if (!starts)
		return -ENOMEM;
	bool whole = ulma_summary_line_block(f, src->text, starts, nlines, lr[rows[0]].line, lr[rows[n - 1]].line,
					     &first, &last);
	size_t need = 0;
	if (whole)
		need = starts[last] - starts[first - 1];
	else
		for (int k = 0; k < n; k++)
			if (lr[rows[k]].line >= 1 && lr[rows[k]].line <= nlines)
				need += starts[lr[rows[k]].line] - starts[lr[rows[k]].line - 1];
	if (need > room->source) {
		room->source_left_out = true;
		ulma_sbuf_puts(b, ",\"source\":\"left out\"");
		free(starts);
		return 0;
	}
	room->source -= need;
	ulma_sbuf_puts(b, ",\"source\":\"copy\"");
	if (whole) {
		ulma_sbuf_printf(b, ",\"first\":%u,\"text\":[", first);
		for (uint32_t line = first; line <= last; line++) {
			if (line > first)
				ulma_sbuf_put(b, ",", 1);
			put_line(b, src->text + starts[line - 1], src->text + starts[line]);
		}
	} else {
		ulma_sbuf_puts(b, ",\"text\":[");
		for (int k = 0; k < n; k++) {
			uint32_t line = lr[rows[k]].line;
			if (k)
				ulma_sbuf_put(b, ",", 1);
			if (line >= 1 && line <= nlines)
				put_line(b, src->text + starts[line - 1], src->text + starts[line]);
			else
				ulma_sbuf_puts(b, "null");
		}
	}
	ulma_sbuf_put(b, "]", 1);
	free(starts);
	return 0;
}

/* One function's object. */
static int put_function(struct ulma_sbuf *b, const struct ulma_summary *s, const struct ulma_walk *w, uint32_t func,
			const uint32_t *row_of, struct room *room)
{
	const struct ulma_profile *p = s->profile;
	const struct ulma_func_row *f = &p->funcs[func];
	uint32_t *rows;
	int n = ulma_profile_lines_of(p, func, &rows);
	if (n <= 0)
		return n;
	struct ulma_time_split self, total;
	ulma_summary_times(s, f, &self, &total);
	uint32_t row = row_of[w->funcs[func].key];
	ulma_sbuf_puts(b, "{\"name\":");
	ulma_sbuf_json(b, f->name ? f->name : "?");
	ulma_sbuf_puts(b, ",\"file\":");
	ulma_sbuf_json(b, f->file ? f->file : "?");
	ulma_sbuf_printf(b, ",\"line\":%u,\"row\":%d,\"calls\":%llu,\"total_ns\":%llu", f->line,
			 row == UINT32_MAX ? -1 : (int)row, (unsigned long long)f->calls,
			 (unsigned long long)total.wall_ns);
	int err = put_source(b, p, func, rows, n, room);
	room->rows -= (uint32_t)n;
	ulma_sbuf_puts(b, ",\"rows\":[");
	uint64_t lines_ns = ulma_summary_lines_ns(s, func);
	for (int k = 0; k < n && !err; k++) {
		if (k)
			ulma_sbuf_put(b, ",", 1);
		put_row(b, s, w, lines_ns, rows[k], row_of, room);
	}
	ulma_sbuf_puts(b, "]}");
	free(rows);
	return err;
}

int ulma_html_lines(struct ulma_sbuf *b, const struct ulma_walk *w, const struct ulma_profile *p,
		    const uint32_t *row_of)
{
	uint32_t with = 0;
	for (uint32_t i = 0; i < p->nfuncs && i < w->nfuncs; i++)
		with += ulma_profile_has_lines(p, i) && w->funcs[i].pass;
	if (!with) {
		ulma_sbuf_puts(b, ",\n\"lines\":null");
		return 0;
	}
	uint64_t *key = malloc(p->nfuncs * sizeof(*key));
	if (!key)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nfuncs; i++)
		key[i] = i < w->nfuncs && w->funcs[i].pass && ulma_profile_has_lines(p, i) ? p->funcs[i].total_ticks + 1 : 0;
	uint32_t *order = ulma_profile_sorted_by_key(p, key);
	free(key);
	if (!order)
		return -ENOMEM;
	/* the summary's view of the walk's clock and correction */
	struct ulma_summary s = {.profile = p,
				 .cal = {.ns_per_tick = w->ns_per_tick},
				 .overhead_ps = w->cost_ps,
				 .no_correction = w->filter.no_correction};
	struct room room = {MAX_SOURCE, MAX_ROWS, MAX_CALLS_ALL, false};
	int err = 0;
	uint32_t shown = 0;
	ulma_sbuf_printf(b, ",\n\"lines\":{\"split\":%s,\"gil\":%s,\"memory\":%s,\"funcs\":[",
			 p->split != ULMA_PROFILE_SPLIT_NONE ? "true" : "false", p->has_gil ? "true" : "false",
			 p->memory ? "true" : "false");
	for (uint32_t k = 0; k < p->nfuncs && shown < MAX_FUNCS && !err; k++) {
		uint32_t i = order[k];
		if (i >= w->nfuncs || !w->funcs[i].pass || !ulma_profile_has_lines(p, i) ||
		    p->funcs[i].line_rows > room.rows)
			continue;
		ulma_sbuf_puts(b, shown ? ",\n" : "\n");
		err = put_function(b, &s, w, i, row_of, &room);
		shown++;
	}
	ulma_sbuf_printf(b,
			 "],\"funcs_left_out\":%u,\"source_left_out\":%s,\"source_max\":%u,\"rows_max\":%u,"
			 "\"calls_left_out\":%s}",
			 with - shown, room.source_left_out ? "true" : "false", MAX_SOURCE, MAX_ROWS,
			 room.calls == 0 ? "true" : "false");
	free(order);
	return err;
}
