/* test_export_walk.c - the decoding step shared by the exporters
 * (src/analysis/export_walk.h) and its helpers: on a hand-written trace,
 * the exact open/close stream with no filter, with --exclude, --include,
 * --min-duration, a time window, thread and process filters; merged keys
 * for functions defined twice; frames open at the end closed at END; the
 * stream invariants (well nested, time-ordered, self time conserved) under
 * random filters on a long random trace; the batched edges (on_edges)
 * equal the frames' opens and closes; cProfile-style call-graph totals
 * (src/analysis/callgraph.h); time parsing; escaping
 * (src/analysis/export_text.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/callgraph.h"
#include "analysis/export_text.h"
#include "analysis/export_walk.h"
#include "core/trace_writer.h"
#include "tap.h"
#include "ulma/shm.h"

/* the writer's direct-recursion flag, from the parent's id as the tests state it */
static bool same_fn(uint32_t id, uint32_t parent)
{
	return id == parent && id != 0;
}

/* ---------- a recorded stream ---------- */

struct rec {
	char kind; /* 'O' or 'C' */
	uint32_t thread, func, parent, depth, cpu;
	uint64_t start, end, self;
	bool edge; /* an on_edges edge, not an on_open / on_close frame */
};

struct recorder {
	struct rec *r;
	size_t n, cap;
	uint32_t threads_seen; /* bit per thread announced */
};

static int rec_add(struct recorder *rc, char kind, uint32_t thread, const struct ulma_walk_frame *f)
{
	if (rc->n == rc->cap) {
		rc->cap = rc->cap ? rc->cap * 2 : 64;
		rc->r = realloc(rc->r, rc->cap * sizeof(*rc->r));
		if (!rc->r)
			return -ENOMEM;
	}
	rc->r[rc->n++] =
		(struct rec){kind, thread, f->func, f->parent, f->depth, f->cpu, f->start_ns, f->end_ns, f->self_ns, false};
	return 0;
}

static int on_open(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	(void)w;
	return rec_add(ctx, 'O', thread, f);
}

static int on_close(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	(void)w;
	return rec_add(ctx, 'C', thread, f);
}

static int on_thread(void *ctx, const struct ulma_walk *w, uint32_t thread)
{
	struct recorder *rc = ctx;
	(void)w;
	rc->threads_seen |= 1u << thread;
	return 0;
}

/* The records of one thread as text: "O0@0 O1@10 C2@35/15 ..." (func@time,
 * closes with /self). */
static const char *render(const struct recorder *rc, uint32_t thread)
{
	static char buf[2048];
	size_t len = 0;
	buf[0] = 0;
	for (size_t i = 0; i < rc->n && len < sizeof(buf) - 64; i++) {
		const struct rec *r = &rc->r[i];
		if (r->thread != thread)
			continue;
		if (r->kind == 'O')
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%sO%u@%llu", len ? " " : "", r->func,
						(unsigned long long)r->start);
		else
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%sC%u@%llu/%llu", len ? " " : "",
						r->func, (unsigned long long)r->end, (unsigned long long)r->self);
	}
	return buf;
}

/* ---------- the hand-written trace ---------- */

/* A new empty file for a test's trace, its path in path: true, or false
 * after a failed check. */
static bool make_temp(char *path, size_t cap, const char *stem)
{
	const char *dir = getenv("TMPDIR");
	snprintf(path, cap, "%s/ulma-test-walk-%s-XXXXXX", dir && *dir ? dir : "/tmp", stem);
	int fd = mkstemp(path);
	if (!CHECK(fd >= 0, "temp file for %s", stem))
		return false;
	close(fd);
	return true;
}

static char trace_path[4096];

/* Times are ns since the start (ticks are ns: no TSC flag; start ticks 1000).
 * thread 0 (pid 10, tid 10): A[0,100] { B[10,50] { C[20,35] }  C[60,70] }
 * thread 1 (pid 10, tid 11): D[5,25] (a C function)
 * thread 2 (pid 20, tid 20): A'[0,8] (A defined again), E[90, -) still open at END (200)
 * dense function indices: A 0, B 1, C 2, D 3, E 4, A' 5 */
static int write_small_trace(void)
{
	const char *dir = getenv("TMPDIR");
	snprintf(trace_path, sizeof(trace_path), "%s/ulma-test-walk-XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(trace_path);
	if (fd < 0)
		return -errno;
	close(fd);
	struct ulma_trace_meta meta = {.flags = 0, .pid = 10, .start_ticks = 1000, .start_ns = 1000,
				       .tick_hz = 1000000000, .command = "python app.py"};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *s0, *s1, *s2;
	int err = ulma_trace_writer_open(trace_path, &meta, &w);
	if (err)
		return err;
	ulma_trace_define_file(w, 0, "/src/app.py", 11);
	ulma_trace_define_file(w, 1, "/src/lib/x.py", 13);
	ulma_trace_define_file(w, 2, "~", 1);
	ulma_trace_define_func(w, 1, ULMA_DEF_PY, 0, 1, "A", 1);
	ulma_trace_define_func(w, 2, ULMA_DEF_PY, 0, 5, "B", 1);
	ulma_trace_define_func(w, 3, ULMA_DEF_PY, 1, 9, "C", 1);
	ulma_trace_define_func(w, 4, ULMA_DEF_C, 2, 0, "builtins.len", 12);
	ulma_trace_define_func(w, 5, ULMA_DEF_PY, 0, 20, "E", 1);
	ulma_trace_define_func(w, 6, ULMA_DEF_PY, 0, 1, "A", 1);
	if ((err = ulma_trace_stream_open(w, 0, 10, 10, &s0)) || (err = ulma_trace_stream_open(w, 1, 10, 11, &s1)) ||
	    (err = ulma_trace_stream_open(w, 2, 20, 20, &s2))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	ulma_trace_enter(s0, 1000, 0, 1, same_fn(1, 0));
	ulma_trace_enter(s0, 1010, 0, 2, same_fn(2, 1));
	ulma_trace_enter(s0, 1020, 0, 3, same_fn(3, 2));
	ulma_trace_exit(s0, 1035, 0);
	ulma_trace_exit(s0, 1050, 3); /* B leaves on cpu 3 */
	ulma_trace_enter(s1, 1005, 1, 4, same_fn(4, 0));
	ulma_trace_exit(s1, 1025, 1);
	ulma_trace_enter(s0, 1060, 0, 3, same_fn(3, 1));
	ulma_trace_exit(s0, 1070, 0);
	ulma_trace_exit(s0, 1100, 0);
	ulma_trace_enter(s2, 1000, 1, 6, same_fn(6, 0));
	ulma_trace_exit(s2, 1008, 1);
	ulma_trace_enter(s2, 1090, 1, 5, same_fn(5, 0));
	struct ulma_trace_end end = {.end_ticks = 1200, .end_ns = 1200, .events = 13, .exit_status = 0};
	return ulma_trace_writer_close(w, &end);
}

/* Walk the small trace with filter f; fills rc.  Returns the walk's result. */
static int walk_small(const struct ulma_walk_filter *f, struct recorder *rc, struct ulma_walk *w)
{
	struct ulma_walk_sink sink = {rc, NULL, on_thread, on_open, on_close, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
	struct ulma_trace_status st;
	memset(rc, 0, sizeof(*rc));
	ulma_walk_init(w, f);
	FILE *in = fopen(trace_path, "rb");
	if (!in)
		return -errno;
	int err = ulma_walk_run(w, in, &sink, &st);
	fclose(in);
	return err;
}

static void test_unfiltered(void)
{
	struct recorder rc;
	struct ulma_walk w;
	int err = walk_small(NULL, &rc, &w);
	CHECK_EQ_I64(err, 0, "walk of the small trace");
	CHECK(strcmp(render(&rc, 0), "O0@0 O1@10 O2@20 C2@35/15 C1@50/25 O2@60 C2@70/10 C0@100/50") == 0,
	      "thread 0, unfiltered: %s", render(&rc, 0));
	CHECK(strcmp(render(&rc, 1), "O3@5 C3@25/20") == 0, "thread 1: %s", render(&rc, 1));
	CHECK(strcmp(render(&rc, 2), "O5@0 C5@8/8 O4@90 C4@200/110") == 0,
	      "thread 2: the frame open at the end closes at END: %s", render(&rc, 2));
	CHECK(w.nfuncs == 6 && w.funcs[5].key == 0 && w.funcs[0].key == 0 && w.funcs[4].key == 4,
	      "A defined twice shares one key");
	CHECK(strcmp(w.funcs[3].name, "builtins.len") == 0 && w.funcs[3].kind == ULMA_DEF_C &&
		      strcmp(w.funcs[2].file, "/src/lib/x.py") == 0 && w.funcs[1].line == 5,
	      "function table");
	CHECK(w.complete && w.duration_ns == 200 && w.pid == 10 && strcmp(w.command, "python app.py") == 0,
	      "session facts");
	CHECK(w.frames == 7 && rc.threads_seen == 7, "7 frames, 3 threads announced");
	size_t i;
	for (i = 0; i < rc.n; i++)
		if (rc.r[i].kind == 'O' && rc.r[i].func == 2)
			break;
	CHECK(i < rc.n && rc.r[i].parent == 1 && rc.r[i].depth == 2, "C's parent is B at depth 2");
	uint32_t open_cpu = 99, close_cpu = 99;
	for (i = 0; i < rc.n; i++)
		if (rc.r[i].thread == 0 && rc.r[i].func == 1)
			*(rc.r[i].kind == 'O' ? &open_cpu : &close_cpu) = rc.r[i].cpu;
	CHECK(open_cpu == 0 && close_cpu == 3, "an open carries the CPU of the entry, a close that of the exit");
	free(rc.r);
	ulma_walk_free(&w);
}

static void test_filters(void)
{
	struct ulma_walk_filter f;
	struct recorder rc;
	struct ulma_walk w;
	const char *pats[2];

	ulma_walk_filter_init(&f);
	pats[0] = "B";
	f.exclude = pats;
	f.nexclude = 1;
	walk_small(&f, &rc, &w);
	CHECK(strcmp(render(&rc, 0), "O0@0 O2@20 C2@35/15 O2@60 C2@70/10 C0@100/75") == 0,
	      "--exclude B: its time goes to A: %s", render(&rc, 0));
	CHECK(rc.n > 1 && rc.r[1].parent == 0 && rc.r[1].depth == 1, "C hangs from A");
	free(rc.r);
	ulma_walk_free(&w);

	ulma_walk_filter_init(&f);
	pats[0] = "*/lib/*";
	f.include = pats;
	f.ninclude = 1;
	walk_small(&f, &rc, &w);
	CHECK(strcmp(render(&rc, 0), "O2@20 C2@35/15 O2@60 C2@70/10") == 0, "--include on the path: %s",
	      render(&rc, 0));
	CHECK(rc.r[0].parent == ULMA_WALK_NONE && rc.r[0].depth == 0, "an included frame without kept ancestors is a root");
	CHECK(strcmp(render(&rc, 1), "") == 0 && strcmp(render(&rc, 2), "") == 0, "nothing else");
	free(rc.r);
	ulma_walk_free(&w);

	ulma_walk_filter_init(&f);
	pats[0] = "builtins.*";
	pats[1] = "E";
	f.include = pats;
	f.ninclude = 2;
	walk_small(&f, &rc, &w);
	CHECK(strcmp(render(&rc, 1), "O3@5 C3@25/20") == 0 && strcmp(render(&rc, 2), "O4@90 C4@200/110") == 0 &&
		      strcmp(render(&rc, 0), "") == 0,
	      "two --include patterns on names");
	free(rc.r);
	ulma_walk_free(&w);

	ulma_walk_filter_init(&f);
	f.min_duration_ns = 20;
	walk_small(&f, &rc, &w);
	CHECK(strcmp(render(&rc, 0), "O0@0 O1@10 C1@50/40 C0@100/60") == 0,
	      "--min-duration 20: the Cs go, their time to their parents: %s", render(&rc, 0));
	CHECK(strcmp(render(&rc, 1), "O3@5 C3@25/20") == 0, "a frame of exactly 20 stays");
	CHECK(strcmp(render(&rc, 2), "O4@90 C4@200/110") == 0, "A' (8) goes");
	free(rc.r);
	ulma_walk_free(&w);

	ulma_walk_filter_init(&f);
	f.from_ns = 30;
	f.to_ns = 65;
	walk_small(&f, &rc, &w);
	CHECK(strcmp(render(&rc, 0), "O0@30 O1@30 O2@30 C2@35/5 C1@50/15 O2@60 C2@65/5 C0@65/10") == 0,
	      "window [30, 65]: frames clipped: %s", render(&rc, 0));
	CHECK(strcmp(render(&rc, 1), "") == 0 && strcmp(render(&rc, 2), "") == 0, "frames outside the window go");
	free(rc.r);
	ulma_walk_free(&w);

	ulma_walk_filter_init(&f);
	f.tid = 11;
	walk_small(&f, &rc, &w);
	CHECK(rc.threads_seen == 2 && strcmp(render(&rc, 1), "O3@5 C3@25/20") == 0 && rc.n == 2,
	      "--thread 11: that thread only");
	free(rc.r);
	ulma_walk_free(&w);

	ulma_walk_filter_init(&f);
	f.pid = 20;
	walk_small(&f, &rc, &w);
	CHECK(rc.threads_seen == 4 && rc.n == 4 && w.events == 13, "--process 20: its one thread; all events decoded");
	free(rc.r);
	ulma_walk_free(&w);
}

/* ---------- invariants on a random trace ---------- */

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* The clocks of the random traces. */
enum clock_kind {
	CLOCK_NS,       /* ticks are ns from 0 */
	CLOCK_TSC,      /* TSC ticks before and after the first tick, the hook's cost measured */
	CLOCK_TSC_FREE, /* the same without the cost */
};
static const char *const clock_names[] = {"ns", "TSC, with the hook's cost", "TSC, no cost"};

/* A random trace of three threads, in ns; or in ticks of 2.4 GHz (21 ns
 * apart on average) whose first events come before the trace's first
 * tick in chunks of a few events, with the hook's cost (12 ns an event)
 * above the gaps between many events or none: the walker's clock then
 * clamps times at the start (to 0 before the first tick, or where the
 * cost taken out exceeds the time) and holds events closer than the cost
 * at the previous one's time (local_clock's plain steps: the batches
 * where nothing clamps).  Each thread moves between CPUs now and then. */
static int write_random_trace_clock(const char *path, uint64_t *frames, enum clock_kind clock)
{
	bool tsc = clock != CLOCK_NS;
	struct ulma_trace_meta meta = {.flags = tsc ? ULMA_META_TSC : 0, .pid = 1, .start_ticks = tsc ? 100000 : 0,
				       .start_ns = tsc ? 5000 : 0, .tick_hz = tsc ? 2400000000u : 1000000000};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *s[3];
	int err = ulma_trace_writer_open(path, &meta, &w);
	if (err)
		return err;
	if (clock == CLOCK_TSC && (err = ulma_trace_overhead(w, 12000))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	static const char *const names[] = {"f0", "f1", "f2", "f3", "f4", "f5"};
	ulma_trace_define_file(w, 0, "/r.py", 5);
	for (uint32_t i = 0; i < 6; i++)
		ulma_trace_define_func(w, i + 1, ULMA_DEF_PY, 0, i + 1, names[i], 2);
	for (uint32_t t = 0; t < 3; t++)
		if ((err = ulma_trace_stream_open(w, t, 1, 100 + t, &s[t]))) {
			ulma_trace_writer_abandon(w);
			return err;
		}
	uint32_t stack[3][64], depth[3] = {0, 0, 0}, cpu[3] = {0, 0, 0};
	static const uint32_t cpus[4] = {0, 1, 2, UINT32_MAX - 3}; /* the last as a damaged trace may have it */
	uint64_t t0 = tsc ? 99000 : 0, now[3] = {t0, t0, t0}, records[3] = {0, 0, 0};
	*frames = 0;
	for (int i = 0; i < 60000; i++) {
		uint32_t t = rnd(3);
		now[t] += rnd(tsc ? 100 : 50);
		if (rnd(300) == 0) /* the thread migrates */
			cpu[t] = cpus[rnd(4)];
		/* early chunks of a few events: batches of a thread already seen
		 * whose times lie before the first tick, or below the cost taken out */
		if (tsc && (++records[t] % 8 == 0 && records[t] < 400) && (err = ulma_trace_stream_flush(s[t]))) {
			ulma_trace_writer_abandon(w);
			return err;
		}
		if (depth[t] < 64 && (depth[t] == 0 || rnd(2))) {
			uint32_t id = rnd(6) + 1;
			ulma_trace_enter(s[t], now[t], cpu[t], id, same_fn(id, depth[t] ? stack[t][depth[t] - 1] : 0));
			stack[t][depth[t]++] = id;
			(*frames)++;
		} else if (depth[t]) {
			ulma_trace_exit(s[t], now[t], cpu[t]);
			depth[t]--;
		}
	}
	uint64_t end = now[0] > now[1] ? now[0] : now[1];
	end = end > now[2] ? end : now[2];
	struct ulma_trace_end e = {.end_ticks = end, .end_ns = tsc ? meta.start_ns + (end - meta.start_ticks) * 10 / 24 : end};
	return ulma_trace_writer_close(w, &e);
}

static int write_random_trace(const char *path, uint64_t *frames)
{
	return write_random_trace_clock(path, frames, CLOCK_NS);
}

/* Check the stream's contract; returns a description of the first breach. */
static const char *check_stream(const struct recorder *rc, uint64_t *self_sum, uint64_t *root_sum)
{
	struct rec open[3][70];
	uint32_t depth[3] = {0, 0, 0};
	uint64_t last[3] = {0, 0, 0};
	*self_sum = *root_sum = 0;
	for (size_t i = 0; i < rc->n; i++) {
		const struct rec *r = &rc->r[i];
		uint32_t t = r->thread;
		uint64_t at = r->kind == 'O' ? r->start : r->end;
		if (t >= 3)
			return "bad thread";
		if (at < last[t])
			return "time goes backwards";
		last[t] = at;
		if (r->kind == 'O') {
			if (depth[t] >= 70 || r->depth != depth[t])
				return "open at the wrong depth";
			if (depth[t] && r->parent != open[t][depth[t] - 1].func)
				return "parent is not the enclosing frame";
			if (!depth[t] && r->parent != ULMA_WALK_NONE)
				return "root with a parent";
			open[t][depth[t]++] = *r;
		} else {
			if (!depth[t])
				return "close without open";
			const struct rec *o = &open[t][--depth[t]];
			if (o->func != r->func || o->start != r->start || r->end < r->start)
				return "close does not match its open";
			if (r->self > r->end - r->start)
				return "self longer than the frame";
			*self_sum += r->self;
			if (r->depth == 0)
				*root_sum += r->end - r->start;
		}
	}
	for (int t = 0; t < 3; t++)
		if (depth[t])
			return "frame left open";
	return NULL;
}

static void test_random_invariants(void)
{
	char path[4096];
	if (!make_temp(path, sizeof(path), "rand"))
		return;
	uint64_t frames = 0;
	if (!CHECK(write_random_trace(path, &frames) == 0, "random trace written"))
		return;
	static const char *const pats[] = {"f1", "f[23]", "*/r.py", "f5"};
	int bad = 0;
	for (int round = 0; round < 40; round++) {
		struct ulma_walk_filter f;
		ulma_walk_filter_init(&f);
		if (round > 0) {
			if (rnd(2)) {
				f.from_ns = rnd(200000);
				f.to_ns = f.from_ns + rnd(400000);
			}
			f.min_duration_ns = rnd(3) ? rnd(400) : 0;
			if (rnd(2)) {
				f.exclude = pats + rnd(2);
				f.nexclude = 1 + rnd(2);
			}
			if (rnd(3) == 0) {
				f.include = pats + 1 + rnd(3);
				f.ninclude = 1;
			}
		}
		struct recorder rc;
		struct ulma_walk w;
		struct ulma_walk_sink sink = {&rc, NULL, NULL, on_open, on_close, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
		struct ulma_trace_status st;
		memset(&rc, 0, sizeof(rc));
		ulma_walk_init(&w, &f);
		FILE *in = fopen(path, "rb");
		int err = in ? ulma_walk_run(&w, in, &sink, &st) : -errno;
		if (in)
			fclose(in);
		uint64_t self_sum, root_sum;
		const char *why = err ? "walk failed" : check_stream(&rc, &self_sum, &root_sum);
		if (!why && self_sum != root_sum)
			why = "self times do not add up to the roots' durations";
		if (!why && round == 0 && w.frames != frames)
			why = "unfiltered walk lost frames";
		if (!why && f.min_duration_ns == 0 && f.nexclude == 0 && f.ninclude == 0 && f.to_ns == UINT64_MAX &&
		    w.frames != frames)
			why = "filters that remove nothing removed frames";
		if (why) {
			tap_diag("round %d (from %llu to %llu min %llu excl %zu incl %zu): %s", round,
				 (unsigned long long)f.from_ns, (unsigned long long)f.to_ns,
				 (unsigned long long)f.min_duration_ns, f.nexclude, f.ninclude, why);
			bad++;
		}
		free(rc.r);
		ulma_walk_free(&w);
	}
	CHECK(bad == 0, "40 random filters on a 60000-event trace: nested, ordered, self time conserved");
	unlink(path);
}

static int on_edges(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_edge *e, size_t n)
{
	(void)w;
	for (size_t i = 0; i < n; i++) {
		struct ulma_walk_frame f = {.func = e[i].func, .cpu = e[i].cpu, .start_ns = e[i].ns, .end_ns = e[i].ns};
		int err = rec_add(ctx, e[i].open ? 'O' : 'C', thread, &f);
		if (err)
			return err;
		struct recorder *rc = ctx;
		rc->r[rc->n - 1].edge = true;
	}
	return 0;
}

/* Walk path with sink; fills rc (freed by the caller). */
static int walk_path(const char *path, struct ulma_walk_sink *sink, struct recorder *rc, struct ulma_walk *w)
{
	struct ulma_trace_status st;
	memset(rc, 0, sizeof(*rc));
	sink->ctx = rc;
	ulma_walk_init(w, NULL);
	FILE *in = fopen(path, "rb");
	int err = in ? ulma_walk_run(w, in, sink, &st) : -errno;
	if (in)
		fclose(in);
	return err;
}

/* Walk path twice: frame by frame into a (ea its result), and with a sink
 * that takes edges into b (eb). */
static void walk_frames_and_edges(const char *path, struct recorder *a, struct ulma_walk *wa, int *ea,
				  struct recorder *b, struct ulma_walk *wb, int *eb)
{
	struct ulma_walk_sink frame_sink = {.on_open = on_open, .on_close = on_close};
	struct ulma_walk_sink edge_sink = {.on_open = on_open, .on_close = on_close, .on_edges = on_edges};
	*ea = walk_path(path, &frame_sink, a, wa);
	*eb = walk_path(path, &edge_sink, b, wb);
}

static void free_both(struct recorder *a, struct ulma_walk *wa, struct recorder *b, struct ulma_walk *wb)
{
	free(a->r);
	free(b->r);
	ulma_walk_free(wa);
	ulma_walk_free(wb);
}

/* A sink taking batches of edges (on_edges: perfetto) gets, unfiltered,
 * the opens and closes on_open and on_close get, in the same order, with
 * the same functions and times: on the random trace (thousands of edges
 * per thread's chunk, so many batches; frames left open at its end, which
 * come to on_close). */
static void test_edges_match_frames(enum clock_kind clock)
{
	char path[4096];
	if (!make_temp(path, sizeof(path), "edges"))
		return;
	uint64_t frames = 0;
	if (!CHECK(write_random_trace_clock(path, &frames, clock) == 0, "random trace written (%s)", clock_names[clock]))
		return;
	struct recorder a, b;
	struct ulma_walk wa, wb;
	int ea, eb;
	walk_frames_and_edges(path, &a, &wa, &ea, &b, &wb, &eb);
	size_t same = 0, closed_at_end = 0;
	unsigned cpus = 0; /* bit per CPU seen: 0, 1, 2 and UINT32_MAX - 3 */
	if (CHECK(ea == 0 && eb == 0 && a.n == b.n && a.n == 2 * frames, "both walks: %zu and %zu edges, %llu frames",
		  a.n, b.n, (unsigned long long)frames)) {
		for (; same < a.n; same++) {
			const struct rec *x = &a.r[same], *y = &b.r[same];
			uint64_t at = x->kind == 'O' ? x->start : x->end;
			if (x->kind != y->kind || x->thread != y->thread || x->func != y->func || x->cpu != y->cpu ||
			    at != (y->kind == 'O' ? y->start : y->end))
				break;
			closed_at_end += y->kind == 'C' && !y->edge; /* a frame on_close took */
			cpus |= 1u << (y->cpu == UINT32_MAX - 3 ? 3 : y->cpu & 3);
		}
	}
	CHECK(same == a.n && a.n > 0, "the edges equal the frames' opens and closes, CPUs included (first difference at %zu)",
	      same);
	CHECK(cpus == 15, "edges on every CPU the trace has, 2^32 - 4 included (%#x)", cpus);
	CHECK(closed_at_end > 0, "frames open at the end still closed, through on_close (%zu)", closed_at_end);
	CHECK(wa.frames == wb.frames && wa.events == wb.events && wa.duration_ns == wb.duration_ns,
	      "the same walk totals");
	free_both(&a, &wa, &b, &wb);
	unlink(path);
}

/* A damaged trace's times are capped at 9.2e18 ns, so 63 bits hold them
 * (an edge's ns, ulma_walk_edge): on a clock of ns as on the TSC.  A
 * trace without a TSC whose thread jumps to ticks near 2^64 gave frames
 * past 2^63 ns, which the edges cut to 63 bits (the fuzzer found the ctf
 * export's times differing from the walk's). */
static void test_times_past_63_bits(void)
{
	char path[4096];
	if (!make_temp(path, sizeof(path), "far"))
		return;
	struct ulma_trace_meta meta = {.flags = 0, .pid = 1, .start_ticks = 1000, .start_ns = 1000, .tick_hz = 1000000000};
	struct ulma_trace_writer *tw;
	struct ulma_trace_stream *s;
	int err = ulma_trace_writer_open(path, &meta, &tw);
	if (!CHECK(err == 0, "trace opened (%d)", err))
		return;
	ulma_trace_define_file(tw, 0, "/a.py", 5);
	ulma_trace_define_func(tw, 1, ULMA_DEF_PY, 0, 1, "f", 1);
	if (!CHECK(ulma_trace_stream_open(tw, 0, 1, 1, &s) == 0, "stream opened")) {
		ulma_trace_writer_abandon(tw);
		return;
	}
	ulma_trace_enter(s, 1000, 0, 1, same_fn(1, 0));
	ulma_trace_exit(s, 1010, 0);
	ulma_trace_enter(s, UINT64_MAX - 300, 0, 1, same_fn(1, 0));
	ulma_trace_exit(s, UINT64_MAX - 200, 0);
	struct ulma_trace_end end = {.end_ticks = UINT64_MAX - 100, .end_ns = 2000, .events = 4};
	if (!CHECK(ulma_trace_writer_close(tw, &end) == 0, "trace closed"))
		return;
	struct recorder a, b;
	struct ulma_walk wa, wb;
	int ea, eb;
	walk_frames_and_edges(path, &a, &wa, &ea, &b, &wb, &eb);
	if (CHECK(ea == 0 && eb == 0 && a.n == 4 && b.n == 4, "both walks: %zu and %zu edges", a.n, b.n)) {
		uint64_t last_a = a.r[3].end, last_b = b.r[3].end;
		CHECK(last_a == UINT64_C(9200000000000000000), "the far exit at the cap, 9.2e18 ns (%llu)",
		      (unsigned long long)last_a);
		CHECK(last_b == last_a && b.r[2].start == a.r[2].start, "the edges' times equal the frames' (%llu, %llu)",
		      (unsigned long long)last_b, (unsigned long long)last_a);
	}
	free_both(&a, &wa, &b, &wb);
	unlink(path);
}

/* A call tree fed straight from the events (the sink's tree: folded,
 * pstats, callgrind) equals one fed frame by frame, node for node, on the
 * random trace with frames left open at its end. */
static void test_tree_fed_directly(enum clock_kind clock)
{
	char path[4096];
	const char *dir = getenv("TMPDIR");
	snprintf(path, sizeof(path), "%s/ulma-test-walk-tree-XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(path);
	uint64_t frames;
	if (fd >= 0)
		close(fd);
	if (!CHECK(fd >= 0 && write_random_trace_clock(path, &frames, clock) == 0, "random trace written (%s)",
		   clock_names[clock]))
		return;
	struct ulma_calltree direct, framed, threaded;
	ulma_calltree_init(&direct);
	ulma_calltree_init(&framed);
	ulma_calltree_init(&threaded);
	threaded.per_thread = true;
	struct ulma_walk_sink by_events = ulma_calltree_sink_template, by_frames = ulma_calltree_sink_template;
	struct ulma_walk_sink by_thread = ulma_calltree_sink_template;
	by_events.ctx = by_events.tree = &direct;
	by_frames.ctx = &framed;
	by_thread.ctx = by_thread.tree = &threaded;
	const struct ulma_walk_sink *sinks[] = {&by_events, &by_frames, &by_thread};
	uint32_t nthreads = 0;
	int err = 0;
	for (int k = 0; k < 3 && !err; k++) {
		struct ulma_walk w;
		struct ulma_trace_status st;
		FILE *f = fopen(path, "rb");
		ulma_walk_init(&w, NULL);
		err = f ? ulma_walk_run(&w, f, sinks[k], &st) : -EIO;
		nthreads = w.nthreads;
		if (f)
			fclose(f);
		CHECK(err == 0 && w.frames == frames, "walk %d: %llu frames (%d)", k, (unsigned long long)w.frames, err);
		ulma_walk_free(&w);
	}
	int same = direct.nnodes == framed.nnodes;
	for (uint32_t i = 0; same && i < direct.nnodes; i++) {
		const struct ulma_ct_node *a = &direct.nodes[i], *b = &framed.nodes[i];
		same = a->key == b->key && a->parent == b->parent && a->calls == b->calls && a->self_ns == b->self_ns &&
		       a->total_ns == b->total_ns;
		if (!same)
			tap_diag("node %u: calls %llu/%llu self %llu/%llu total %llu/%llu", i, (unsigned long long)a->calls,
				 (unsigned long long)b->calls, (unsigned long long)a->self_ns,
				 (unsigned long long)b->self_ns, (unsigned long long)a->total_ns,
				 (unsigned long long)b->total_ns);
	}
	CHECK(same && direct.nnodes > 100, "the same %u nodes, with the same calls, self and total", direct.nnodes);

	/* per thread: the root's children are the threads, each thread's frames under its own node */
	uint32_t thread_nodes = 0, misplaced = 0;
	for (uint32_t c = threaded.nodes[0].first_child; c; c = threaded.nodes[c].next_sibling) {
		uint32_t th = ULMA_CALLTREE_THREAD_OF(threaded.nodes[c].key);
		thread_nodes++;
		misplaced += th >= nthreads || threaded.nodes[c].calls != 0;
	}
	for (uint32_t i = 1; i < threaded.nnodes; i++)
		misplaced += threaded.nodes[i].parent != 0 && threaded.nodes[i].key > UINT32_MAX / 2;
	CHECK(thread_nodes > 1 && misplaced == 0, "per thread: %u thread nodes under the root, none elsewhere",
	      thread_nodes);
	/* and the functions' totals are the merged tree's */
	uint32_t nkeys = 0;
	for (uint32_t i = 1; i < direct.nnodes; i++)
		nkeys = direct.nodes[i].key + 1 > nkeys ? direct.nodes[i].key + 1 : nkeys;
	struct ulma_ct_totals *ta = calloc(nkeys, sizeof(*ta)), *tb = calloc(nkeys, sizeof(*tb));
	same = ta && tb && ulma_calltree_totals(&direct, nkeys, ta) == 0 && ulma_calltree_totals(&threaded, nkeys, tb) == 0;
	uint32_t differ = 0;
	for (uint32_t k = 0; same && k < nkeys; k++)
		differ += ta[k].calls != tb[k].calls || ta[k].self_ns != tb[k].self_ns;
	CHECK(same && differ == 0 && nkeys > 0, "per thread: calls and self of %u functions as in the merged tree",
	      nkeys);
	free(ta);
	free(tb);
	ulma_calltree_free(&direct);
	ulma_calltree_free(&framed);
	ulma_calltree_free(&threaded);
	unlink(path);
}

/* ---------- call graph ---------- */

static void test_callgraph(void)
{
	/* main -> fib -> fib -> fib (leaf), fib's outer frame also calls len:
	 * main[0,100] { fib[10,90] { fib[20,60] { fib[30,40] }  len[70,80] } } */
	struct ulma_walk w;
	memset(&w, 0, sizeof(w));
	struct ulma_walk_func funcs[3] = {{.name = "main", .key = 0}, {.name = "fib", .key = 1}, {.name = "len", .key = 2}};
	w.funcs = funcs;
	w.nfuncs = 3;
	struct ulma_callgraph g;
	struct ulma_calltree tree;
	ulma_callgraph_init(&g);
	ulma_calltree_init(&tree);
	struct step {
		char kind;
		uint32_t func, parent;
		uint64_t start, end, self;
	} steps[] = {
		{'O', 0, ULMA_WALK_NONE, 0, 0, 0}, {'O', 1, 0, 10, 0, 0},  {'O', 1, 1, 20, 0, 0},
		{'O', 1, 1, 30, 0, 0},             {'C', 1, 1, 30, 40, 10}, {'C', 1, 1, 20, 60, 30},
		{'O', 2, 1, 70, 0, 0},             {'C', 2, 1, 70, 80, 10}, {'C', 1, 0, 10, 90, 30},
		{'C', 0, ULMA_WALK_NONE, 0, 100, 20},
	};
	int err = 0;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]) && !err; i++) {
		struct ulma_walk_frame f = {steps[i].func, steps[i].parent, 0, 0, steps[i].start, steps[i].end,
					    steps[i].self};
		err = steps[i].kind == 'O' ? ulma_calltree_open(&tree, &w, 0, &f) : ulma_calltree_close(&tree, &w, 0, &f);
	}
	CHECK_EQ_I64(err, 0, "call tree fed");
	CHECK_EQ_I64(ulma_callgraph_from_tree(&g, &w, &tree), 0, "call graph made from the tree");
	const struct ulma_cg_func *fib = &g.funcs[1], *mainf = &g.funcs[0];
	CHECK(fib->calls == 3 && fib->reccalls == 2 && fib->self_ns == 70 && fib->total_ns == 80,
	      "fib: 3 calls, 2 recursive, self 70, total 80 (outermost only)");
	CHECK(mainf->calls == 1 && mainf->reccalls == 0 && mainf->self_ns == 20 && mainf->total_ns == 100 &&
		      mainf->root_calls == 1 && mainf->root_ns == 100 && fib->root_calls == 0,
	      "main: one root call of 100");
	const struct ulma_cg_edge *ff = NULL, *mf = NULL, *fl = NULL;
	for (uint32_t e = 0; e < g.nedges; e++) {
		const struct ulma_cg_edge *x = &g.edges[e];
		if (x->caller == 1 && x->callee == 1)
			ff = x;
		else if (x->caller == 0 && x->callee == 1)
			mf = x;
		else if (x->caller == 1 && x->callee == 2)
			fl = x;
	}
	CHECK(g.nedges == 3 && ff && mf && fl, "three edges");
	if (!ff || !mf || !fl)
		return;
	CHECK(ff->calls == 2 && ff->reccalls == 1 && ff->total_ns == 40 && ff->self_ns == 40 && ff->incl_ns == 0,
	      "fib->fib: 2 calls, 1 recursive pair, total 40 (outer pair), incl 0 (fib already active)");
	CHECK(mf->calls == 1 && mf->reccalls == 0 && mf->total_ns == 80 && mf->incl_ns == 80, "main->fib");
	CHECK(fl->calls == 1 && fl->incl_ns == 10 && fl->total_ns == 10, "fib->len");
	/* callgrind's identity: self + outgoing incl = total */
	CHECK(fib->self_ns + ff->incl_ns + fl->incl_ns == fib->total_ns &&
		      mainf->self_ns + mf->incl_ns == mainf->total_ns,
	      "self plus outgoing inclusive cost is total time");
	uint32_t in = 0;
	for (uint32_t e = g.funcs[1].first_in; e != ULMA_WALK_NONE; e = g.edges[e].next_in)
		in++;
	CHECK(in == 2 && g.funcs[0].first_in == ULMA_WALK_NONE, "fib has two callers, main none");
	struct ulma_walk_frame stray = {0, ULMA_WALK_NONE, 0, 0, 0, 1, 1};
	CHECK(ulma_calltree_close(&tree, &w, 0, &stray) == -EINVAL, "a close without an open is refused");
	ulma_calltree_free(&tree);
	ulma_callgraph_free(&g);
}

/* ---------- helpers ---------- */

static void test_parse_ns(void)
{
	uint64_t v = 0;
	CHECK(ulma_walk_parse_ns("1500", &v) == 0 && v == 1500, "plain ns");
	CHECK(ulma_walk_parse_ns("20ns", &v) == 0 && v == 20, "ns suffix");
	CHECK(ulma_walk_parse_ns("3us", &v) == 0 && v == 3000, "us");
	CHECK(ulma_walk_parse_ns("1.5ms", &v) == 0 && v == 1500000, "fractional ms");
	CHECK(ulma_walk_parse_ns("2s", &v) == 0 && v == 2000000000u, "s");
	CHECK(ulma_walk_parse_ns("0", &v) == 0 && v == 0, "zero");
	const char *bad[] = {"", "-1", "+3", "ms", "5 ms", "5m", "1e400", "nan", "inf", "1e20s", "0x10"};
	int rejected = 0;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		rejected += ulma_walk_parse_ns(bad[i], &v) == -EINVAL;
	CHECK(rejected == (int)(sizeof(bad) / sizeof(bad[0])), "malformed times rejected (%d of %zu)", rejected,
	      sizeof(bad) / sizeof(bad[0]));
}

static void test_escaping(void)
{
	struct ulma_sbuf b = {0};
	ulma_sbuf_json(&b, "a\"b\\c\n<script>&\x01 \xc3\xa9 \xe2\x80\xa8 \xff\xfe end");
	CHECK(b.p && strcmp(b.p, "\"a\\\"b\\\\c\\n\\u003cscript\\u003e\\u0026\\u0001 \xc3\xa9 \\u2028 \\ufffd\\ufffd end\"") ==
			     0,
	      "JSON: quotes, controls, HTML-special, U+2028 and invalid bytes: %s", b.p ? b.p : "(null)");
	ulma_sbuf_free(&b);
	ulma_sbuf_html(&b, "<img src=x onerror='a()'>&\xc0\x80");
	CHECK(b.p && strcmp(b.p, "&lt;img src=x onerror=&#39;a()&#39;&gt;&amp;\xef\xbf\xbd\xef\xbf\xbd") == 0,
	      "HTML: markup and an overlong encoding: %s", b.p ? b.p : "(null)");
	ulma_sbuf_free(&b);
	ulma_sbuf_utf8(&b, "ok \xed\xa0\x80 \xf4\x90\x80\x80 \xf0\x9f\x98\x80");
	CHECK(b.p && strcmp(b.p, "ok \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
				 "\xf0\x9f\x98\x80") == 0,
	      "UTF-8: surrogates and > U+10FFFF replaced, an emoji kept");
	ulma_sbuf_free(&b);
	ulma_sbuf_printf(&b, "%s-%d", "long enough to need more than the small buffer of one hundred and twenty "
				      "eight bytes that printf tries first, yes",
			 42);
	CHECK(b.p && b.len == strlen(b.p) && strstr(b.p, "yes-42"), "printf past its small buffer");
	ulma_sbuf_free(&b);
}

int main(void)
{
	for (int c = CLOCK_NS; c <= CLOCK_TSC_FREE; c++)
		test_tree_fed_directly(c);
	int err = write_small_trace();
	if (CHECK(err == 0, "small trace written (%d)", err)) {
		test_unfiltered();
		test_filters();
		unlink(trace_path);
	}
	test_random_invariants();
	for (int c = CLOCK_NS; c <= CLOCK_TSC_FREE; c++)
		test_edges_match_frames(c);
	test_times_past_63_bits();
	test_callgraph();
	test_parse_ns();
	test_escaping();
	return tap_done();
}
