/* diff_report.c - the diff of two runs as a table for a terminal and as
 * JSON for tools (see diff.h; docs/diff.md, docs/json.md).
 *
 * Names and paths are the traced programs' to choose: the table prints
 * them through the summary's filter for terminals, the JSON through its
 * string escaping, so neither can carry a control character out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "summary_parts.h"

/* ns as signed ms: B less A. */
static double delta_ms(uint64_t a, uint64_t b)
{
	return ((double)b - (double)a) / 1e6;
}

/* "+12.3%", "new", "gone", or "" for no change, into buf. */
static const char *change_text(const struct ulma_diff_row *r, char *buf, size_t cap)
{
	if (r->a == ULMA_DIFF_ABSENT)
		return "new";
	if (r->b == ULMA_DIFF_ABSENT)
		return "gone";
	uint64_t ta = r->fa.total.wall_ns, tb = r->fb.total.wall_ns;
	if (ta == 0)
		return tb ? "+inf" : "0%";
	double pct = 100.0 * ((double)tb - (double)ta) / (double)ta;
	snprintf(buf, cap, pct >= 9999.5 ? "%+.0e%%" : "%+.1f%%", pct);
	return buf;
}

static uint64_t time_sum(const struct ulma_diff *d, int side)
{
	uint64_t t = 0;
	for (uint32_t i = 0; i < d->nrows; i++)
		t += side ? d->rows[i].fb.self.wall_ns : d->rows[i].fa.self.wall_ns;
	return t;
}

static int64_t magnitude_sort_key(const struct ulma_diff_row *r)
{
	int64_t g = (int64_t)(r->fb.total.wall_ns - r->fa.total.wall_ns);
	return g < 0 ? -g : g;
}

static const struct ulma_diff *sort_diff;

static int by_magnitude(const void *p, const void *q)
{
	uint32_t x = *(const uint32_t *)p, y = *(const uint32_t *)q;
	int64_t mx = magnitude_sort_key(&sort_diff->rows[x]), my = magnitude_sort_key(&sort_diff->rows[y]);
	if (mx != my)
		return mx > my ? -1 : 1;
	return x < y ? -1 : 1;
}

static int by_index(const void *p, const void *q)
{
	uint32_t x = *(const uint32_t *)p, y = *(const uint32_t *)q;
	return x < y ? -1 : x > y;
}

static void run_line(FILE *out, const char *label, const char *path, const struct ulma_diff_side *s, uint64_t time)
{
	fprintf(out, "%s: ", label);
	ulma_summary_put_printable(out, path ? path : "-", 200);
	fprintf(out, "  %.3f s wall, %.3f s in functions, %llu events%s\n", (double)s->walk.duration_ns / 1e9,
		(double)time / 1e9, (unsigned long long)s->walk.events,
		s->walk.complete ? "" : " (incomplete: cut short before its end record)");
}

/* Columns: always calls and totals with the change; self times and the
 * split of the change when the width leaves 30 columns for the name. */
#define COLS_BASE 64
#define COLS_SELF 24
#define COLS_SPLIT 33
#define NAME_MIN 30

int ulma_diff_text(FILE *out, const struct ulma_diff *d, uint32_t limit, unsigned width)
{
	uint32_t n = d->nrows < limit ? d->nrows : limit;
	uint32_t *shown = malloc((d->nrows ? d->nrows : 1) * sizeof(*shown));
	if (!shown)
		return -ENOMEM;
	for (uint32_t i = 0; i < d->nrows; i++)
		shown[i] = i;
	/* the rows that changed most either way, shown in the order of growth */
	sort_diff = d;
	qsort(shown, d->nrows, sizeof(*shown), by_magnitude);
	sort_diff = NULL;
	qsort(shown, n, sizeof(*shown), by_index);

	bool self = width >= COLS_BASE + COLS_SELF + NAME_MIN;
	bool split = d->split && width >= COLS_BASE + COLS_SELF + COLS_SPLIT + NAME_MIN;
	unsigned name_w = width - COLS_BASE - (self ? COLS_SELF : 0) - (split ? COLS_SPLIT : 0);
	if (width < COLS_BASE + NAME_MIN)
		name_w = NAME_MIN;
	uint64_t sum_a = time_sum(d, 0), sum_b = time_sum(d, 1);
	run_line(out, "A", d->path_a, d->a, sum_a);
	run_line(out, "B", d->path_b, d->b, sum_b);
	fprintf(out, "\n%10s %10s %11s %11s %11s %7s", "calls A", "calls B", "total A ms", "total B ms", "change ms",
		"change");
	if (self)
		fprintf(out, " %11s %11s", "self A ms", "self B ms");
	if (split)
		fprintf(out, " %10s %10s %10s", "cpu ms", "run ms", "blk ms");
	fprintf(out, "  %s\n", "function (file:line)");
	for (uint32_t k = 0; k < n; k++) {
		const struct ulma_diff_row *r = &d->rows[shown[k]];
		const struct ulma_walk_func *f = ulma_diff_func(d, r);
		char pct[32], pbuf[256];
		fprintf(out, "%10llu %10llu %11.3f %11.3f %+11.3f %7s", (unsigned long long)r->fa.calls,
			(unsigned long long)r->fb.calls, (double)r->fa.total.wall_ns / 1e6,
			(double)r->fb.total.wall_ns / 1e6, delta_ms(r->fa.total.wall_ns, r->fb.total.wall_ns),
			change_text(r, pct, sizeof(pct)));
		if (self)
			fprintf(out, " %11.3f %11.3f", (double)r->fa.self.wall_ns / 1e6, (double)r->fb.self.wall_ns / 1e6);
		if (split)
			fprintf(out, " %+10.3f %+10.3f %+10.3f", delta_ms(r->fa.total.on_cpu_ns, r->fb.total.on_cpu_ns),
				delta_ms(r->fa.total.runnable_ns, r->fb.total.runnable_ns),
				delta_ms(r->fa.total.blocked_ns, r->fb.total.blocked_ns));
		fputs("  ", out);
		size_t used = ulma_summary_put_printable(out, f->name[0] ? f->name : "?", name_w > 40 ? name_w - 20 : 20);
		if (f->file[0] && strcmp(f->file, "~") != 0 && used + 16 < name_w) {
			fputs(" (", out);
			/* the path's tail, where its file name is, in what the row has left */
			size_t room = name_w - used - 10, cap = room + 1 < sizeof(pbuf) ? room + 1 : sizeof(pbuf);
			used += 2 + ulma_summary_put_printable(out, ulma_summary_short_path(f->file, pbuf, cap),
							       room > 4 ? room : 4);
			fprintf(out, ":%u)", f->line);
		}
		fputc('\n', out);
	}
	if (n < d->nrows)
		fprintf(out, "(%u more functions changed less: --limit, or --format json for all)\n", d->nrows - n);
	uint32_t only_a = 0, only_b = 0;
	for (uint32_t i = 0; i < d->nrows; i++) {
		only_a += d->rows[i].b == ULMA_DIFF_ABSENT;
		only_b += d->rows[i].a == ULMA_DIFF_ABSENT;
	}
	fprintf(out, "\nin functions: %.3f s -> %.3f s (%+.3f s); %u functions, %u only in A (gone), %u only in B (new)\n",
		(double)sum_a / 1e9, (double)sum_b / 1e9, ((double)sum_b - (double)sum_a) / 1e9, d->nrows, only_a, only_b);
	if (split)
		fputs("cpu, run, blk: the change of the total on a CPU, waiting for one, blocked (docs/time-split.md)\n", out);
	else if (!d->split)
		fputs("no on-CPU / blocked split: a run was recorded without it (docs/time-split.md)\n", out);
	const struct ulma_walk *wa = &d->a->walk, *wb = &d->b->walk;
	if (wb->filter.no_correction)
		fputs("times: as measured, the hook's cost included (--no-correction)\n", out);
	else
		fprintf(out, "times: less the hook's measured cost per event, as in the summary: %.1f ns in A, %.1f ns in B%s\n",
			(double)wa->cost_ps / 1e3, (double)wb->cost_ps / 1e3,
			wa->cost_ps && wb->cost_ps ? "" : " (0: the trace does not say, nothing taken out)");
	free(shown);
	return ferror(out) ? -EIO : 0;
}

/* {"calls": ..., ...} of one side, or null. */
static void figures_json(FILE *out, const struct ulma_diff *d, const struct ulma_diff_figures *f, bool present)
{
	if (!present) {
		fputs("null", out);
		return;
	}
	fprintf(out, "{\"calls\": %llu, \"total_ns\": %llu, \"self_ns\": %llu", (unsigned long long)f->calls,
		(unsigned long long)f->total.wall_ns, (unsigned long long)f->self.wall_ns);
	if (d->split)
		fprintf(out,
			", \"on_cpu_ns\": %llu, \"runnable_ns\": %llu, \"blocked_ns\": %llu, "
			"\"total_on_cpu_ns\": %llu, \"total_runnable_ns\": %llu, \"total_blocked_ns\": %llu",
			(unsigned long long)f->self.on_cpu_ns, (unsigned long long)f->self.runnable_ns,
			(unsigned long long)f->self.blocked_ns, (unsigned long long)f->total.on_cpu_ns,
			(unsigned long long)f->total.runnable_ns, (unsigned long long)f->total.blocked_ns);
	if (d->gil)
		fprintf(out, ", \"gil_ns\": %llu, \"total_gil_ns\": %llu", (unsigned long long)f->self.gil_ns,
			(unsigned long long)f->total.gil_ns);
	fputc('}', out);
}

static void run_json(FILE *out, const char *path, const struct ulma_diff_side *s, uint64_t time)
{
	fputs("{\"trace\": ", out);
	ulma_summary_json_string(out, path ? path : "");
	fprintf(out,
		", \"duration_ns\": %llu, \"time_ns\": %llu, \"events\": %llu, \"lost\": %llu, \"complete\": %s, "
		"\"time_split\": %s, \"corrected\": %s}",
		(unsigned long long)s->walk.duration_ns, (unsigned long long)time, (unsigned long long)s->walk.events,
		(unsigned long long)s->walk.lost, s->walk.complete ? "true" : "false",
		s->profile.split != ULMA_PROFILE_SPLIT_NONE ? "true" : "false", s->walk.cost_ps ? "true" : "false");
}

int ulma_diff_json(FILE *out, const struct ulma_diff *d, const struct ulma_diff_threshold *threshold)
{
	uint64_t sum_a = time_sum(d, 0), sum_b = time_sum(d, 1);
	fputs("{\"a\": ", out);
	run_json(out, d->path_a, d->a, sum_a);
	fputs(",\n\"b\": ", out);
	run_json(out, d->path_b, d->b, sum_b);
	fprintf(out, ",\n\"time_split\": %s, \"gil_split\": %s, \"delta_time_ns\": %lld,\n\"functions\": [",
		d->split ? "true" : "false", d->gil ? "true" : "false", (long long)(sum_b - sum_a));
	for (uint32_t i = 0; i < d->nrows; i++) {
		const struct ulma_diff_row *r = &d->rows[i];
		const struct ulma_walk_func *f = ulma_diff_func(d, r);
		bool in_a = r->a != ULMA_DIFF_ABSENT, in_b = r->b != ULMA_DIFF_ABSENT;
		fputs(i ? ",\n  {\"name\": " : "\n  {\"name\": ", out);
		ulma_summary_json_string(out, f->name[0] ? f->name : "?");
		fputs(", \"file\": ", out);
		ulma_summary_json_string(out, f->file[0] ? f->file : "?");
		fprintf(out, ", \"line\": %u, \"kind\": \"%s\", \"in\": \"%s\"", f->line, ulma_walk_kind_name(f->kind),
			in_a && in_b ? "both" : in_a ? "a" : "b");
		if (in_a && in_b && d->a->walk.funcs[r->a].line != f->line)
			fprintf(out, ", \"line_a\": %u", d->a->walk.funcs[r->a].line);
		fprintf(out, ", \"delta_calls\": %lld, \"delta_total_ns\": %lld, \"delta_self_ns\": %lld",
			(long long)(r->fb.calls - r->fa.calls), (long long)(r->fb.total.wall_ns - r->fa.total.wall_ns),
			(long long)(r->fb.self.wall_ns - r->fa.self.wall_ns));
		if (in_a && in_b && r->fa.total.wall_ns)
			fprintf(out, ", \"total_ratio\": %.6g", (double)r->fb.total.wall_ns / (double)r->fa.total.wall_ns);
		else
			fputs(", \"total_ratio\": null", out);
		fputs(", \"a\": ", out);
		figures_json(out, d, &r->fa, in_a);
		fputs(", \"b\": ", out);
		figures_json(out, d, &r->fb, in_b);
		fputc('}', out);
	}
	fputs("\n],\n\"threshold\": ", out);
	if (threshold && threshold->percent >= 0)
		fprintf(out, "{\"percent\": %.6g, \"min_ns\": %llu, \"of\": \"%s\", \"regressions\": %u}",
			threshold->percent, (unsigned long long)threshold->min_ns, threshold->on_cpu ? "on_cpu" : "wall",
			ulma_diff_regressions(d, threshold));
	else
		fputs("null", out);
	fputs("}\n", out);
	return ferror(out) ? -EIO : 0;
}
