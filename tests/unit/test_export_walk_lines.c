/* test_export_walk_lines.c - the profile the exports' walk feeds for the
 * line view (export_walk.h: sink.profile; profile_feed.h), with known
 * answers on a hand-written trace: the line rows, their calls and off-CPU
 * time, the source copy, the split; the thread filter keeps a thread's
 * lines out, the patterns and the time window do not cut them; and the
 * rows are exactly those of a profile fed straight from the reader, as
 * `ulma report` feeds one, with switch records and with schedstat samples. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/export_walk.h"
#include "analysis/profile_feed.h"
#include "analysis/profile_lines.h"
#include "core/trace_writer.h"
#include "tap.h"
#include "ulma/shm.h"
#include "ulma/trace_format.h"

static const char source[] = "def f():\n    a = 1\n    g()\n\ndef g():\n    return 2\n";

/* Ticks are ns (start 1000).  Thread 0 (tid 10):
 *   f [1000, 1100]: line 2 at 1000 and 1080, line 3 at 1010 calling
 *   g [1020, 1040] (its line 6 at 1020), off its CPU 30 ns from 1045.
 * Thread 1 (tid 11): f [1000, 1005], line 2 at 1000.
 * sampled: schedstat samples of thread 0 instead of switch records. */
static int write_trace(const char *path, bool sampled)
{
	struct ulma_trace_meta meta = {.flags = 0, .pid = 10, .start_ticks = 1000, .start_ns = 1000,
				       .tick_hz = 1000000000, .command = "python m.py"};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *a, *b;
	int err = ulma_trace_writer_open(path, &meta, &w);
	if (err)
		return err;
	ulma_trace_define_file(w, 0, "/src/m.py", 9);
	ulma_trace_define_source(w, 0, 0, source, sizeof(source) - 1);
	ulma_trace_define_func(w, 1, ULMA_DEF_PY, 0, 1, "f", 1);
	ulma_trace_define_func(w, 2, ULMA_DEF_PY, 0, 5, "g", 1);
	if ((err = ulma_trace_stream_open(w, 0, 10, 10, &a)) || (err = ulma_trace_stream_open(w, 1, 10, 11, &b))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	if (sampled) {
		struct ulma_trace_sched s0 = {1000, 0, 0, 0, false}, s1 = {1100, 60, 10, 0, false};
		ulma_trace_sched(a, &s0);
		ulma_trace_sched(a, &s1);
	}
	ulma_trace_enter(a, 1000, 0, 1, false);
	ulma_trace_line(a, 1000, 2, false);
	ulma_trace_line(a, 1010, 3, false);
	ulma_trace_enter(a, 1020, 0, 2, false);
	ulma_trace_line(a, 1020, 6, false);
	ulma_trace_exit(a, 1040, 0);
	if (!sampled)
		ulma_trace_off(a, 1045, ULMA_TRACE_SAME_CPU, ULMA_OFF_BLOCKED, 30);
	ulma_trace_line(a, 1080, 2, false);
	ulma_trace_exit(a, 1100, 0);
	ulma_trace_enter(b, 1000, 1, 1, false);
	ulma_trace_line(b, 1000, 2, false);
	ulma_trace_exit(b, 1005, 1);
	struct ulma_trace_end end = {.end_ticks = 1200, .end_ns = 1200, .events = 13, .exit_status = 0,
				     .split = sampled ? ULMA_SPLIT_SCHEDSTAT : ULMA_SPLIT_SWITCHES};
	return ulma_trace_writer_close(w, &end);
}

static const struct ulma_line_row *row(const struct ulma_profile *p, uint32_t func, uint32_t line)
{
	for (uint32_t i = 0; p->lines && i < p->lines->nrows; i++)
		if (p->lines->rows[i].func == func && p->lines->rows[i].line == line)
			return &p->lines->rows[i];
	return NULL;
}

/* The walk over path with filter f feeding profile p.  Returns its result. */
static int walk(const char *path, const struct ulma_walk_filter *f, struct ulma_profile *p)
{
	struct ulma_walk w;
	struct ulma_walk_sink sink = {0};
	struct ulma_trace_status st;
	sink.profile = p;
	ulma_walk_init(&w, f);
	FILE *in = fopen(path, "rb");
	int err = in ? ulma_walk_run(&w, in, &sink, &st) : -errno;
	if (in)
		fclose(in);
	ulma_walk_free(&w);
	return err;
}

/* ---- a profile fed straight from the reader, as ulma report feeds one ---- */

struct direct {
	struct ulma_profile *p;
	struct ulma_profile_feed feed;
	struct ulma_trace_end end;
};

static int d_meta(void *ctx, const struct ulma_trace_meta *m)
{
	ulma_profile_feed_meta(&((struct direct *)ctx)->feed, m);
	return 0;
}

static int d_func(void *ctx, const struct ulma_trace_func *f)
{
	return ulma_profile_add_func(((struct direct *)ctx)->p, f->index, f->kind, f->name, f->name_len, f->file,
				     f->file_len, f->line);
}

static int d_thread(void *ctx, const struct ulma_trace_thread *t)
{
	return ulma_profile_feed_thread(&((struct direct *)ctx)->feed, t);
}

static int d_sched(void *ctx, uint32_t thread, const struct ulma_trace_sched *s)
{
	return ulma_profile_feed_sched(&((struct direct *)ctx)->feed, thread, s);
}

static int d_events(void *ctx, uint32_t thread, const struct ulma_trace_event *ev, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ulma_profile_feed_event(&((struct direct *)ctx)->feed, thread, &ev[i]))
			return -ENOMEM;
	return 0;
}

static int d_source(void *ctx, const struct ulma_trace_source *s)
{
	return ulma_profile_add_source(((struct direct *)ctx)->p, s->path, s->path_len, s->text, s->text_len, s->flags);
}

static int d_end(void *ctx, const struct ulma_trace_end *e)
{
	((struct direct *)ctx)->end = *e;
	return 0;
}

static int read_direct(const char *path, struct ulma_profile *p)
{
	struct direct d = {.p = p};
	ulma_profile_feed_init(&d.feed, p);
	struct ulma_trace_visitor v = {.ctx = &d, .on_meta = d_meta, .on_func = d_func, .on_thread = d_thread,
				       .on_sched = d_sched, .on_events = d_events, .on_source = d_source,
				       .on_end = d_end};
	struct ulma_trace_status st;
	int err = ulma_trace_read_path(path, &v, &st);
	if (!err)
		ulma_profile_feed_finish(&d.feed, st.complete ? &d.end : NULL, st.last_ticks);
	ulma_profile_feed_free(&d.feed);
	return err;
}

/* Every row and call of a equals b's. */
static void check_same(const struct ulma_profile *a, const struct ulma_profile *b, const char *what)
{
	if (!CHECK(a->lines && b->lines && a->lines->nrows == b->lines->nrows && a->lines->ncalls == b->lines->ncalls,
		   "%s: as many rows and calls", what))
		return;
	bool same = a->split == b->split;
	for (uint32_t i = 0; i < a->lines->nrows; i++) {
		const struct ulma_line_row *x = &a->lines->rows[i], *y = row(b, x->func, x->line);
		same = same && y && x->hits == y->hits && x->ticks == y->ticks && x->events == y->events &&
		       x->blocked_ns == y->blocked_ns && x->runnable_ns == y->runnable_ns && x->gil_ns == y->gil_ns;
	}
	for (uint32_t i = 0; i < a->lines->ncalls; i++)
		same = same && a->lines->calls[i].calls == b->lines->calls[i].calls &&
		       a->lines->calls[i].ticks == b->lines->calls[i].ticks;
	CHECK(same, "%s: the walk's rows are the reader's, fed as ulma report feeds them", what);
}

static void test_known_answers(const char *path)
{
	struct ulma_profile p;
	ulma_profile_init(&p);
	CHECK_EQ_I64(walk(path, NULL, &p), 0, "the walk feeds a profile");
	const struct ulma_line_row *f2 = row(&p, 0, 2), *f3 = row(&p, 0, 3), *g6 = row(&p, 1, 6);
	if (CHECK(f2 && f3 && g6, "rows for f's lines 2, 3 and g's 6")) {
		CHECK_EQ_U64(f2->hits, 3, "line 2: twice on thread 0, once on thread 1");
		CHECK_EQ_U64(f2->ticks, 10 + 20 + 5, "line 2: to line 3, to f's end, and thread 1's");
		CHECK_EQ_U64(f3->hits, 1, "line 3: one hit");
		CHECK_EQ_U64(f3->ticks, 70, "line 3: up to line 2, g's call inside");
		CHECK_EQ_U64(f3->blocked_ns, 30, "line 3: the 30 ns off the CPU");
		CHECK_EQ_U64(g6->ticks, 20, "g's line: to g's end");
		const struct ulma_line_call *c = f3->first_call != UINT32_MAX ? &p.lines->calls[f3->first_call] : NULL;
		CHECK(c && c->callee == 1 && c->calls == 1 && c->ticks == 20, "line 3 called g once, for 20 ticks");
	}
	const struct ulma_profile_source *s = ulma_profile_source_of(&p, "/src/m.py");
	CHECK(s && s->len == sizeof(source) - 1 && memcmp(s->text, source, s->len) == 0, "the source copy");
	CHECK_EQ_U64(p.split, ULMA_PROFILE_SPLIT_SWITCHES, "split by switch records");
	struct ulma_profile d;
	ulma_profile_init(&d);
	CHECK_EQ_I64(read_direct(path, &d), 0, "read straight");
	check_same(&p, &d, "switch records");
	ulma_profile_free(&d);
	ulma_profile_free(&p);
}

static void test_filters(const char *path)
{
	static const char *const include[] = {"g"};
	struct ulma_walk_filter f;
	ulma_walk_filter_init(&f);
	f.tid = 10;
	f.include = include;
	f.ninclude = 1;
	f.from_ns = 50;
	struct ulma_profile p;
	ulma_profile_init(&p);
	CHECK_EQ_I64(walk(path, &f, &p), 0, "a filtered walk feeds a profile");
	const struct ulma_line_row *f2 = row(&p, 0, 2);
	CHECK(f2 && f2->hits == 2 && f2->ticks == 30, "thread 11's line is out; the pattern and window cut nothing");
	ulma_profile_free(&p);
}

static void test_schedstat(const char *path)
{
	struct ulma_profile p, d;
	ulma_profile_init(&p);
	ulma_profile_init(&d);
	CHECK_EQ_I64(walk(path, NULL, &p), 0, "the walk feeds a profile (schedstat)");
	CHECK_EQ_I64(read_direct(path, &d), 0, "read straight (schedstat)");
	const struct ulma_line_row *f3 = row(&p, 0, 3);
	CHECK(f3 && f3->blocked_ns + f3->runnable_ns > 0, "line 3's time is split by the samples");
	CHECK_EQ_U64(p.split, ULMA_PROFILE_SPLIT_SCHEDSTAT, "split by schedstat samples");
	check_same(&p, &d, "schedstat samples");
	ulma_profile_free(&d);
	ulma_profile_free(&p);
}

int main(void)
{
	const char *dir = getenv("TMPDIR");
	char path[2][4096];
	for (int k = 0; k < 2; k++) {
		snprintf(path[k], sizeof(path[k]), "%s/ulma-test-walk-lines-XXXXXX", dir && *dir ? dir : "/tmp");
		int fd = mkstemp(path[k]);
		if (!CHECK(fd >= 0, "a temporary file") || !CHECK(write_trace(path[k], k == 1) == 0, "the trace is written"))
			return tap_done();
		close(fd);
	}
	test_known_answers(path[0]);
	test_filters(path[0]);
	test_schedstat(path[1]);
	unlink(path[0]);
	unlink(path[1]);
	return tap_done();
}
