/* test_diff.c - two runs compared (src/analysis/diff.h) on hand-written
 * traces whose ticks are ns and which carry no hook cost, so every figure
 * is exact: functions matched exactly, by a moved line when that is
 * unique, not when it is ambiguous; definitions repeated in one trace
 * summed; functions in one run only; rows in order of growth; the CI
 * threshold; the JSON's keys; the flame graph's merged tree. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/diff.h"
#include "core/trace_writer.h"
#include "tap.h"
#include "ulma/shm.h"

struct span {
	uint32_t func;
	uint64_t start, end;
};

/* Write a trace at path: funcs (name, line; ids from 1) in file "/p/a.py",
 * main (id 1) from 0 to main_end on thread 0 around `spans` (each a call
 * of its own at depth 2), and `extra` on thread 1 of another process. */
static int write_trace(const char *path, const char *const *names, const uint32_t *lines, uint32_t nfuncs,
		       uint64_t main_end, const struct span *spans, size_t nspans, const struct span *extra)
{
	struct ulma_trace_meta meta = {.pid = 1, .tick_hz = 1000000000u, .command = "test"};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *s, *t;
	int err = ulma_trace_writer_open(path, &meta, &w);
	if (err)
		return err;
	ulma_trace_define_file(w, 0, "/p/a.py", 7);
	for (uint32_t i = 0; i < nfuncs; i++)
		ulma_trace_define_func(w, 1 + i, ULMA_DEF_PY, 0, lines[i], names[i], strlen(names[i]));
	if ((err = ulma_trace_stream_open(w, 0, 1, 1, &s)) || (err = ulma_trace_stream_open(w, 1, 2, 2, &t))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	ulma_trace_enter(s, 0, 0, 1, false);
	for (size_t i = 0; i < nspans; i++) {
		ulma_trace_enter(s, spans[i].start, 0, spans[i].func, false);
		ulma_trace_exit(s, spans[i].end, 0);
	}
	ulma_trace_exit(s, main_end, 0);
	uint64_t events = 2 + 2 * nspans;
	if (extra) {
		ulma_trace_enter(t, extra->start, 0, extra->func, false);
		ulma_trace_exit(t, extra->end, 0);
		events += 2;
	}
	struct ulma_trace_end end = {.end_ticks = main_end + 10, .end_ns = main_end + 10, .events = events,
				     .exit_status = 0};
	return ulma_trace_writer_close(w, &end);
}

static int read_side(struct ulma_diff_side *side, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -errno;
	int err = ulma_diff_side_read(side, f, false, true);
	fclose(f);
	return err;
}

static const struct ulma_diff_row *row_named(const struct ulma_diff *d, const char *name, uint32_t line)
{
	for (uint32_t i = 0; i < d->nrows; i++) {
		const struct ulma_walk_func *f = ulma_diff_func(d, &d->rows[i]);
		if (strcmp(f->name, name) == 0 && (line == 0 || f->line == line))
			return &d->rows[i];
	}
	return NULL;
}

static char *render(int (*fn)(FILE *, const struct ulma_diff *, const void *), const struct ulma_diff *d,
		    const void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	int err = fn(f, d, arg);
	fclose(f);
	if (err) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int json_fn(FILE *f, const struct ulma_diff *d, const void *arg)
{
	return ulma_diff_json(f, d, arg);
}

static int html_fn(FILE *f, const struct ulma_diff *d, const void *arg)
{
	(void)arg;
	return ulma_diff_html(f, d, "a.trace", "b.trace");
}

static int text_fn(FILE *f, const struct ulma_diff *d, const void *arg)
{
	(void)arg;
	return ulma_diff_text(f, d, 30, 200);
}

int main(void)
{
	char pa[] = "/tmp/ulma-test-diff-a-XXXXXX", pb[] = "/tmp/ulma-test-diff-b-XXXXXX";
	int fa = mkstemp(pa), fb = mkstemp(pb);
	if (!CHECK(fa >= 0 && fb >= 0, "temporary files"))
		return tap_done();
	close(fa);
	close(fb);
	/* A: f at line 10, and again as id 7 in another process; h twice (lines 50, 60) */
	static const char *const names_a[] = {"main", "f", "g", "gone", "h", "h", "f"};
	static const uint32_t lines_a[] = {1, 10, 20, 30, 50, 60, 10};
	static const struct span spans_a[] = {{2, 100, 200}, {3, 300, 600}, {4, 700, 750}, {5, 800, 810}, {6, 820, 830}};
	static const struct span extra_a = {7, 0, 50};
	/* B: f moved to line 12 and called twice; h at other lines (ambiguous); new */
	static const char *const names_b[] = {"main", "f", "g", "new", "h", "h"};
	static const uint32_t lines_b[] = {1, 12, 20, 40, 51, 61};
	static const struct span spans_b[] = {{2, 100, 300}, {2, 400, 600}, {3, 700, 900}, {4, 1000, 1100},
					      {5, 1200, 1210}, {6, 1220, 1230}};
	int err = write_trace(pa, names_a, lines_a, 7, 1000, spans_a, 5, &extra_a);
	if (!err)
		err = write_trace(pb, names_b, lines_b, 6, 2000, spans_b, 6, NULL);
	if (!CHECK(err == 0, "traces written (%d)", err))
		return tap_done();

	struct ulma_diff_side a, b;
	CHECK_EQ_I64(read_side(&a, pa), 0, "A read");
	CHECK_EQ_I64(read_side(&b, pb), 0, "B read");
	struct ulma_diff d;
	if (!CHECK(ulma_diff_build(&d, &a, &b) == 0, "diff built"))
		return tap_done();
	d.path_a = "a.trace";
	d.path_b = "b.trace";
	CHECK_EQ_U64(d.nrows, 9, "rows: main, f, g, gone, new, and h four times (ambiguous)");

	const struct ulma_diff_row *main_r = row_named(&d, "main", 0), *f = row_named(&d, "f", 0),
				   *g = row_named(&d, "g", 0), *gone = row_named(&d, "gone", 0),
				   *nw = row_named(&d, "new", 0);
	if (CHECK(main_r && f && g && gone && nw, "rows found")) {
		CHECK_EQ_U64(main_r->fa.total.wall_ns, 1000, "main A");
		CHECK_EQ_U64(main_r->fb.total.wall_ns, 2000, "main B");
		CHECK(f->a != ULMA_DIFF_ABSENT && f->b != ULMA_DIFF_ABSENT, "f matched though its line moved");
		CHECK_EQ_U64(f->fa.calls, 2, "f in A: both definitions summed");
		CHECK_EQ_U64(f->fa.total.wall_ns, 150, "f A total: 100 + 50");
		CHECK_EQ_U64(f->fb.calls, 2, "f B calls");
		CHECK_EQ_U64(f->fb.total.wall_ns, 400, "f B total");
		CHECK_EQ_U64(g->fa.total.wall_ns, 300, "g A");
		CHECK_EQ_U64(g->fb.total.wall_ns, 200, "g B");
		CHECK(gone->b == ULMA_DIFF_ABSENT && gone->fb.calls == 0 && gone->fa.calls == 1, "gone: A only");
		CHECK(nw->a == ULMA_DIFF_ABSENT && nw->fb.total.wall_ns == 100, "new: B only");
		CHECK(d.rows[0].fb.total.wall_ns == 2000 && &d.rows[1] == f && &d.rows[d.nrows - 1] == g,
		      "order of growth: main +1000, f +250, ..., g -100 last");
	}
	uint32_t h_rows = 0;
	for (uint32_t i = 0; i < d.nrows; i++)
		if (strcmp(ulma_diff_func(&d, &d.rows[i])->name, "h") == 0)
			h_rows += (d.rows[i].a == ULMA_DIFF_ABSENT) != (d.rows[i].b == ULMA_DIFF_ABSENT);
	CHECK_EQ_U64(h_rows, 4, "h moved ambiguously: four one-sided rows, none guessed");

	struct ulma_diff_threshold th = {50, 100, false};
	CHECK_EQ_U64(ulma_diff_regressions(&d, &th), 2, "past 50% and 100 ns: main and f");
	CHECK_EQ_U64(ulma_diff_regressions(&d, &(struct ulma_diff_threshold){150, 0, false}), 1, "past 150%: f");
	CHECK_EQ_U64(ulma_diff_regressions(&d, &(struct ulma_diff_threshold){50, 300, false}), 1,
		     "past 50% and 300 ns: main");
	CHECK_EQ_U64(ulma_diff_regressions(&d, &(struct ulma_diff_threshold){1000, 0, false}), 0,
		     "past 1000%: none (new is not counted)");
	CHECK_EQ_U64(ulma_diff_regressions(&d, &(struct ulma_diff_threshold){50, 100, true}), 2,
		     "on-CPU without a split: the wall time, as the CLI refuses it");
	char *json = render(json_fn, &d, &th);
	if (CHECK(json != NULL, "JSON written")) {
		CHECK(strstr(json, "\"name\": \"f\", \"file\": \"/p/a.py\", \"line\": 12, \"kind\": \"python\", \"in\": "
				   "\"both\", \"line_a\": 10, \"delta_calls\": 0, \"delta_total_ns\": 250") != NULL,
		      "f's row: moved line and exact change");
		CHECK(strstr(json, "\"in\": \"a\"") && strstr(json, "\"b\": null"), "gone: in a, b null");
		CHECK(strstr(json, "\"regressions\": 2") != NULL, "threshold in the JSON");
		CHECK(strstr(json, "\"delta_time_ns\": ") != NULL && strstr(json, "\"time_split\": false") != NULL,
		      "top-level keys");
		free(json);
	}
	char *text = render(text_fn, &d, NULL);
	if (CHECK(text != NULL, "text written")) {
		CHECK(strstr(text, " new ") && strstr(text, " gone ") && strstr(text, "+250.0%") == NULL &&
			      strstr(text, "+166.7%"),
		      "text: new, gone, f's change of +166.7%%");
		free(text);
	}
	char *html = render(html_fn, &d, NULL);
	if (CHECK(html != NULL, "HTML written")) {
		CHECK(strncmp(html, "<!DOCTYPE html>", 15) == 0, "a page");
		/* root, main, f (its two paths merge: main->f in both, f alone in A's
		 * second process), g, gone, new, four h */
		CHECK(strstr(html, "\"nodes_total\":11,") != NULL, "merged tree: one node per path of matched functions");
		CHECK(strstr(html, "\"ta\":[1050,") != NULL && strstr(html, "\"tb\":[2000,") != NULL,
		      "root totals: every thread's outermost frames");
		free(html);
	}
	ulma_diff_free(&d);
	ulma_diff_side_free(&a);
	ulma_diff_side_free(&b);
	unlink(pa);
	unlink(pb);
	return tap_done();
}
