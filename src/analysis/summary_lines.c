/* summary_lines.c - the line tables of the code chosen with --lines, in
 * the text summary (a table like line_profiler's, beside the source) and
 * in the JSON (docs/json.md, "lines").
 *
 * The source comes from the copy the monitor took during the run
 * (profile_lines.h), never from the disk now.  A function's block is its
 * first line (a decorator's, where it has one) down to the last line
 * indented deeper than it, and further down to its last line with a hit;
 * a block longer than MAX_BLOCK lines, a module's body and code without a
 * copy show their lines with hits only.  Times are corrected for the
 * hook's cost like the function table's (overhead.h); the calls listed
 * under a line are as measured.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "overhead.h"
#include "profile_lines.h"
#include "summary_parts.h"
#include "ulma/trace_format.h"

#define MAX_BLOCK 400   /* lines of source shown around a function's hits, at most */
#define SOURCE_CHARS 100 /* of a source line, in the table */
#define CALLS_SHOWN 3   /* functions listed under a line */

void ulma_summary_line_times(const struct ulma_summary *s, const struct ulma_line_row *r, struct ulma_time_split *out)
{
	uint64_t wall = ulma_summary_ns(s, r->ticks), off = r->blocked_ns + r->runnable_ns;
	ulma_overhead_split(wall, wall > off ? wall - off : 0, r->runnable_ns, r->gil_ns,
			    ulma_overhead_cost(r->events, ulma_summary_cost_per_event(s)), out);
}

uint64_t ulma_summary_call_ns(const struct ulma_summary *s, const struct ulma_line_call *c)
{
	uint64_t ns = ulma_summary_ns(s, c->ticks), cost = ulma_overhead_cost(c->events, ulma_summary_cost_per_event(s));
	return ns > cost ? ns - cost : 0;
}

uint64_t ulma_summary_lines_ns(const struct ulma_summary *s, uint32_t func)
{
	const struct ulma_profile *p = s->profile;
	uint64_t sum = 0;
	if (!ulma_profile_has_lines(p, func))
		return 0;
	for (uint32_t i = p->funcs[func].first_line_row; i != UINT32_MAX; i = p->lines->rows[i].next) {
		struct ulma_time_split t;
		ulma_summary_line_times(s, &p->lines->rows[i], &t);
		sum += t.wall_ns;
	}
	return sum;
}

size_t *ulma_summary_split_lines(const char *text, size_t len, uint32_t *n)
{
	uint32_t count = 1;
	for (size_t i = 0; i < len; i++)
		count += text[i] == '\n' && i + 1 < len;
	size_t *starts = malloc(((size_t)count + 1) * sizeof(*starts));
	if (!starts)
		return NULL;
	uint32_t k = 0;
	starts[k++] = 0;
	for (size_t i = 0; i < len; i++)
		if (text[i] == '\n' && i + 1 < len)
			starts[k++] = i + 1;
	starts[k] = len;
	*n = count;
	return starts;
}

/* Indentation of a line (tabs to the next multiple of 8); -1 if blank or a comment. */
static int indent_of(const char *p, const char *end)
{
	int col = 0;
	for (; p < end && (*p == ' ' || *p == '\t'); p++)
		col = *p == '\t' ? (col / 8 + 1) * 8 : col + 1;
	return p == end || *p == '\n' || *p == '\r' || *p == '#' ? -1 : col;
}

static char first_char(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p < end ? *p : 0;
}

static bool starts_word(const char *p, const char *end, const char *word)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	size_t n = strlen(word);
	return (size_t)(end - p) > n && memcmp(p, word, n) == 0 && (p[n] == ' ' || p[n] == '(' || p[n] == ':');
}

/* The last line of the block that starts at `first` (1-based). */
static uint32_t block_end(const char *text, const size_t *starts, uint32_t nlines, uint32_t first)
{
	const char *line = text + starts[first - 1], *end = text + starts[first];
	int base = indent_of(line, end);
	if (base < 0)
		return first;
	uint32_t i = first;
	/* decorators, then the def or class line; its signature may run on */
	while (i < nlines && first_char(text + starts[i - 1], text + starts[i]) == '@')
		i++;
	if (!(starts_word(text + starts[i - 1], text + starts[i], "def") ||
	      starts_word(text + starts[i - 1], text + starts[i], "async") ||
	      starts_word(text + starts[i - 1], text + starts[i], "class")))
		return first; /* a lambda, a comprehension: its own line */
	uint32_t last = i;
	for (i++; i <= nlines; i++) {
		int ind = indent_of(text + starts[i - 1], text + starts[i]);
		if (ind < 0)
			continue;
		if (ind <= base)
			break;
		last = i;
	}
	return last;
}

bool ulma_summary_line_block(const struct ulma_func_row *f, const char *text, const size_t *starts, uint32_t nlines,
			     uint32_t first_row, uint32_t last_row, uint32_t *first, uint32_t *last)
{
	*first = f->line ? f->line : first_row;
	*last = last_row;
	if (*first == 0 || *first > nlines || strcmp(f->name ? f->name : "", "<module>") == 0)
		return false;
	uint32_t end = block_end(text, starts, nlines, *first);
	if (end > *last)
		*last = end;
	if (*last > nlines)
		*last = nlines;
	return first_row >= *first && *last - *first < MAX_BLOCK;
}

static void put_source_line(FILE *out, const char *p, const char *end)
{
	char buf[4 * SOURCE_CHARS + 8];
	size_t n = 0;
	while (p < end && *p != '\n' && *p != '\r' && n < sizeof(buf) - 1)
		buf[n++] = *p++;
	buf[n] = 0;
	ulma_summary_put_printable(out, buf, SOURCE_CHARS);
}

/* The calls made on line row r, the CALLS_SHOWN longest. */
static void print_calls(FILE *out, const struct ulma_summary *s, uint32_t row)
{
	const struct ulma_profile_lines *l = s->profile->lines;
	uint32_t best[CALLS_SHOWN], nbest = 0, more = 0;
	for (uint32_t i = l->rows[row].first_call; i != UINT32_MAX; i = l->calls[i].next) {
		uint32_t k = nbest < CALLS_SHOWN ? nbest++ : CALLS_SHOWN;
		if (k == CALLS_SHOWN) {
			more++;
			if (l->calls[i].ticks <= l->calls[best[k - 1]].ticks)
				continue;
			k--;
		}
		for (; k > 0 && l->calls[best[k - 1]].ticks < l->calls[i].ticks; k--)
			best[k] = best[k - 1];
		best[k] = i;
	}
	for (uint32_t k = 0; k < nbest; k++) {
		const struct ulma_line_call *c = &l->calls[best[k]];
		fprintf(out, "%8s %10s %12.3f %10s %6s  %18s-> ", "", "", (double)ulma_summary_call_ns(s, c) / 1e6, "",
			"", "");
		ulma_summary_put_printable(out, s->profile->funcs[c->callee].name ? s->profile->funcs[c->callee].name : "?",
					   60);
		fprintf(out, " (%llu call%s)\n", (unsigned long long)c->calls, c->calls == 1 ? "" : "s");
	}
	if (more)
		fprintf(out, "%8s %10s %12s %10s %6s  %18s-> %u more\n", "", "", "", "", "", "", more);
}

static void print_row(FILE *out, const struct ulma_summary *s, uint64_t lines_ns, uint32_t line,
		      const struct ulma_line_row *r, const char *src, const char *src_end)
{
	fprintf(out, "%8u ", line);
	if (r) {
		struct ulma_time_split t;
		ulma_summary_line_times(s, r, &t);
		double d = t.wall_ns ? (double)t.wall_ns / 100.0 : 1.0;
		fprintf(out, "%10llu %12.3f ", (unsigned long long)r->hits, (double)t.wall_ns / 1e6);
		if (r->hits)
			fprintf(out, "%10.3f ", (double)t.wall_ns / 1e3 / (double)r->hits);
		else
			fprintf(out, "%10s ", "-");
		fprintf(out, "%6.1f ", lines_ns ? 100.0 * (double)t.wall_ns / (double)lines_ns : 0.0);
		if (s->profile->split != ULMA_PROFILE_SPLIT_NONE)
			fprintf(out, "%5.0f %5.0f %5.0f ", (double)t.on_cpu_ns / d, (double)t.runnable_ns / d,
				(double)t.blocked_ns / d);
		else
			fprintf(out, "%17s ", "");
		if (s->profile->memory)
			fprintf(out, "%10.1f ", (double)r->alloc_bytes / 1024.0);
	} else {
		fprintf(out, "%10s %12s %10s %6s %17s ", "", "", "", "", "");
		if (s->profile->memory)
			fprintf(out, "%10s ", "");
	}
	fputs(" ", out);
	if (src)
		put_source_line(out, src, src_end);
	fputc('\n', out);
}

/* One function's table. */
static int print_function(FILE *out, const struct ulma_summary *s, uint32_t func)
{
	const struct ulma_profile *p = s->profile;
	const struct ulma_func_row *f = &p->funcs[func];
	uint32_t *rows;
	int n = ulma_profile_lines_of(p, func, &rows);
	if (n <= 0)
		return n;
	const struct ulma_line_row *lr = p->lines->rows;
	char pbuf[64];
	fputs("\nlines of ", out);
	ulma_summary_put_printable(out, f->name ? f->name : "?", 80);
	fputs("  ", out);
	ulma_summary_put_printable(out, ulma_summary_short_path(f->file ? f->file : "?", pbuf, sizeof(pbuf)), 64);
	struct ulma_time_split self, total;
	ulma_summary_times(s, f, &self, &total);
	uint64_t lines_ns = ulma_summary_lines_ns(s, func);
	fprintf(out, ":%u  (%llu call%s, %.3f ms in all, %.3f ms in its lines)\n", f->line,
		(unsigned long long)f->calls, f->calls == 1 ? "" : "s", (double)total.wall_ns / 1e6,
		(double)lines_ns / 1e6);
	const struct ulma_profile_source *src = f->file ? ulma_profile_source_of(p, f->file) : NULL;
	uint32_t nlines = 0;
	size_t *starts = src ? ulma_summary_split_lines(src->text, src->len, &nlines) : NULL;
	if (src && !starts) {
		free(rows);
		return -ENOMEM;
	}
	if (!src)
		fputs("  (no copy of the source: lines by number)\n", out);
	else if (src->flags & ULMA_SOURCE_CHANGED)
		fputs("  (the file changed while the program ran: the source shown may not be what ran)\n", out);
	if (src && (src->flags & ULMA_SOURCE_CUT))
		fputs("  (the file is longer than the copy kept: lines past it show by number)\n", out);
	fprintf(out, "%8s %10s %12s %10s %6s %5s %5s %5s ", "line", "hits", "total ms", "us/hit", "%func", "cpu%", "run%",
		"blk%");
	if (p->memory)
		fprintf(out, "%10s ", "alloc KiB");
	fputs(" source\n", out);
	uint32_t first, last;
	bool whole = starts && ulma_summary_line_block(f, src->text, starts, nlines, lr[rows[0]].line,
						       lr[rows[n - 1]].line, &first, &last);
	int k = 0;
	if (whole) {
		for (uint32_t line = first; line <= last; line++) {
			const struct ulma_line_row *r = k < n && lr[rows[k]].line == line ? &lr[rows[k]] : NULL;
			print_row(out, s, lines_ns, line, r, src->text + starts[line - 1], src->text + starts[line]);
			if (r)
				print_calls(out, s, rows[k++]);
		}
	}
	for (; k < n; k++) { /* lines with hits only */
		uint32_t line = lr[rows[k]].line;
		bool have = starts && line >= 1 && line <= nlines;
		print_row(out, s, lines_ns, line, &lr[rows[k]], have ? src->text + starts[line - 1] : NULL,
			  have ? src->text + starts[line] : NULL);
		print_calls(out, s, rows[k]);
	}
	free(starts);
	free(rows);
	return 0;
}

uint32_t ulma_summary_lines_text(FILE *out, const struct ulma_summary *s, uint32_t limit)
{
	const struct ulma_profile *p = s->profile;
	uint32_t with = 0;
	for (uint32_t i = 0; i < p->nfuncs; i++)
		with += ulma_profile_has_lines(p, i);
	if (!with)
		return 0;
	uint64_t *key = malloc(p->nfuncs * sizeof(*key));
	uint32_t *order = NULL;
	if (key) {
		for (uint32_t i = 0; i < p->nfuncs; i++)
			key[i] = ulma_profile_has_lines(p, i) ? p->funcs[i].total_ticks + 1 : 0;
		order = ulma_profile_sorted_by_key(p, key);
	}
	free(key);
	if (!order) {
		fputs("\n(line tables left out: out of memory)\n", out);
		return with;
	}
	uint32_t shown = 0;
	for (uint32_t k = 0; k < p->nfuncs && shown < limit; k++) {
		if (!ulma_profile_has_lines(p, order[k]))
			continue;
		if (print_function(out, s, order[k]) < 0) {
			fputs("(line table left out: out of memory)\n", out);
			break;
		}
		shown++;
	}
	free(order);
	if (p->lines_failed)
		fputs("\n(out of memory: some calls under lines were not counted)\n", out);
	if (shown < with)
		fprintf(out, "\n%u more function%s with lines: `ulma report --lines TRACE` shows them all\n", with - shown,
			with - shown == 1 ? "" : "s");
	return with;
}

void ulma_summary_lines_json(FILE *out, const struct ulma_summary *s, uint32_t func)
{
	const struct ulma_profile *p = s->profile;
	uint32_t *rows;
	int n = ulma_profile_lines_of(p, func, &rows);
	if (n <= 0)
		return;
	const struct ulma_profile_source *src = p->funcs[func].file ? ulma_profile_source_of(p, p->funcs[func].file)
								    : NULL;
	if (src && (src->flags & ULMA_SOURCE_CHANGED))
		fputs(", \"source_changed\": true", out);
	fputs(", \"lines\": [", out);
	const struct ulma_profile_lines *l = p->lines;
	for (int k = 0; k < n; k++) {
		const struct ulma_line_row *r = &l->rows[rows[k]];
		struct ulma_time_split t;
		ulma_summary_line_times(s, r, &t);
		fprintf(out,
			"%s{\"line\": %u, \"hits\": %llu, \"total_ns\": %llu, \"on_cpu_ns\": %llu, \"runnable_ns\": %llu, "
			"\"blocked_ns\": %llu",
			k ? ", " : "", r->line, (unsigned long long)r->hits, (unsigned long long)t.wall_ns,
			(unsigned long long)t.on_cpu_ns, (unsigned long long)t.runnable_ns,
			(unsigned long long)t.blocked_ns);
		if (p->has_gil)
			fprintf(out, ", \"gil_ns\": %llu", (unsigned long long)t.gil_ns);
		if (p->memory)
			fprintf(out, ", \"alloc_count\": %llu, \"alloc_bytes\": %llu", (unsigned long long)r->alloc_count,
				(unsigned long long)r->alloc_bytes);
		fputs(", \"calls\": [", out);
		bool first = true;
		for (uint32_t i = r->first_call; i != UINT32_MAX; i = l->calls[i].next) {
			const struct ulma_line_call *c = &l->calls[i];
			const struct ulma_func_row *callee = &p->funcs[c->callee];
			fputs(first ? "{\"name\": " : ", {\"name\": ", out);
			first = false;
			ulma_summary_json_string(out, callee->name ? callee->name : "?");
			fputs(", \"file\": ", out);
			ulma_summary_json_string(out, callee->file ? callee->file : "?");
			fprintf(out, ", \"line\": %u, \"calls\": %llu, \"total_ns\": %llu}", callee->line,
				(unsigned long long)c->calls, (unsigned long long)ulma_summary_call_ns(s, c));
		}
		fputs("]}", out);
	}
	fputc(']', out);
	free(rows);
}
