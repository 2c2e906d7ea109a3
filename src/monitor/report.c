/* report.c - `ulma report TRACE`: the run summary, rebuilt from a trace file. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/lane.h"
#include "../analysis/mpi_view.h"
#include "../analysis/profile.h"
#include "../analysis/profile_feed.h"
#include "../analysis/profile_lines.h"
#include "../analysis/profile_memory.h"
#include "../analysis/schedline.h"
#include "../analysis/summary.h"
#include "../core/trace_reader.h"
#include "commands.h"
#include "ulma/trace_format.h"

struct report_ctx {
	struct ulma_profile profile;
	struct ulma_profile_feed events; /* the trace into the profile, with each thread's schedstat samples */
	struct ulma_lane *lanes;      /* per thread */
	struct lane_feed *feed;       /* per thread */
	uint32_t nsched;              /* threads with a lane */
	double ns_per_tick;
	struct ulma_trace_meta meta;
	struct ulma_trace_end end;
	struct ulma_mpi_view mpi; /* a merged MPI trace's ranks and messages */
	int error;
};

/* What a thread's lane has been told, for feeding it at the moments that
 * change it (a CPU change, time off the CPU) rather than at every event. */
struct lane_feed {
	uint64_t off_ns; /* off the CPU so far */
	uint64_t first_ticks;
	uint32_t cpu;
	int started;
};

static int on_meta(void *ctx, const struct ulma_trace_meta *m)
{
	struct report_ctx *r = ctx;
	r->meta = *m;
	r->meta.command = NULL; /* not kept past the callback */
	r->ns_per_tick = (m->flags & ULMA_META_TSC) && m->tick_hz ? 1e9 / (double)m->tick_hz : 1.0;
	ulma_profile_feed_meta(&r->events, m);
	if (!(m->flags & ULMA_META_MEMORY))
		return 0;
	int err = ulma_profile_memory_enable(&r->profile);
	if (!err)
		r->profile.memory->sample_bytes = m->mem_sample_bytes;
	return err;
}

static int on_mpi(void *ctx, const struct ulma_trace_mpi *m)
{
	struct report_ctx *r = ctx;
	return ulma_mpi_view_mpi(&r->mpi, m);
}

static int on_mpi_rank(void *ctx, const struct ulma_trace_rank *rank)
{
	struct report_ctx *r = ctx;
	return ulma_mpi_view_rank(&r->mpi, rank);
}

static int on_mpi_merge(void *ctx, const struct ulma_trace_merge *m)
{
	struct report_ctx *r = ctx;
	return ulma_mpi_view_merge(&r->mpi, m);
}

static int on_func(void *ctx, const struct ulma_trace_func *f)
{
	struct report_ctx *r = ctx;
	if (ulma_mpi_view_func(&r->mpi, f) < 0)
		return -ENOMEM;
	return ulma_profile_add_func(&r->profile, f->index, f->kind, f->name, f->name_len, f->file,
				     f->file_len, f->line);
}

static int on_process(void *ctx, const struct ulma_trace_process *proc)
{
	struct report_ctx *r = ctx;
	return ulma_pid_names_set(&r->profile.names, proc->pid, proc->name, proc->name_len);
}

static int on_thread(void *ctx, const struct ulma_trace_thread *t)
{
	struct report_ctx *r = ctx;
	if (t->index >= r->nsched) {
		uint32_t n = t->index + 1;
		struct ulma_lane *lv = realloc(r->lanes, n * sizeof(*lv));
		if (!lv)
			return -ENOMEM;
		r->lanes = lv;
		struct lane_feed *fv = realloc(r->feed, n * sizeof(*fv));
		if (!fv)
			return -ENOMEM;
		memset(fv + r->nsched, 0, (n - r->nsched) * sizeof(*fv));
		r->feed = fv;
		for (uint32_t i = r->nsched; i < n; i++) /* bins of 1 ms at first */
			ulma_lane_init(&lv[i], r->meta.start_ticks, ulma_u64_from_double(1e6 / r->ns_per_tick));
		r->nsched = n;
	}
	if (ulma_mpi_view_thread(&r->mpi, t) < 0)
		return -ENOMEM;
	return ulma_profile_feed_thread(&r->events, t);
}

static int on_sched(void *ctx, uint32_t thread, const struct ulma_trace_sched *s)
{
	struct report_ctx *r = ctx;
	return ulma_profile_feed_sched(&r->events, thread, s);
}

/* The lane's on-CPU clock at `ticks`: wall time since the thread's first
 * event less the time off the CPU so far. */
static void feed_lane(struct report_ctx *r, uint32_t thread, uint64_t ticks, uint32_t cpu)
{
	struct lane_feed *f = &r->feed[thread];
	if (!f->started) {
		f->started = 1;
		f->first_ticks = ticks;
	}
	uint64_t wall = ulma_u64_from_double((double)(ticks - f->first_ticks) * r->ns_per_tick);
	ulma_lane_event(&r->lanes[thread], ticks, cpu, wall > f->off_ns ? wall - f->off_ns : 0, r->ns_per_tick);
	f->cpu = cpu;
}

/* A batch of one thread's events into the profile (profile_feed.h) and
 * its lane.  With schedstat samples the lane reads the thread's clocks at
 * every event; with switch records it is told of each time off the CPU. */
static int on_events(void *ctx, uint32_t thread, const struct ulma_trace_event *ev, size_t n)
{
	struct report_ctx *r = ctx;
	struct ulma_schedline *line = ulma_profile_feed_schedline(&r->events, thread);
	struct lane_feed *feed = &r->feed[thread];
	bool sampled = !ulma_schedline_empty(line);
	if (r->mpi.merged && ulma_mpi_view_events(&r->mpi, thread, ev, n) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct ulma_trace_event *e = &ev[i];
		if (sampled) {
			struct ulma_sched_clocks at;
			ulma_schedline_at(line, e->ticks, &at);
			ulma_lane_event(&r->lanes[thread], e->ticks, e->cpu, at.cpu_ns, r->ns_per_tick);
		} else if (!feed->started || e->cpu != feed->cpu) {
			feed_lane(r, thread, e->ticks, e->cpu);
		}
		if (e->kind == ULMA_EV_OFF) {
			uint32_t cpu = feed->started ? feed->cpu : e->cpu;
			/* on its CPU up to the switch-out, off it for the interval */
			feed_lane(r, thread, e->ticks, cpu);
			feed->off_ns += e->count;
			feed_lane(r, thread, e->ticks + ulma_u64_from_double((double)e->count / r->ns_per_tick), cpu);
		}
		/* sampled, the lane and the profile read the schedstat line in turn */
		if (sampled && ulma_profile_feed_event(&r->events, thread, e))
			return -ENOMEM;
	}
	/* else the profile after the lane, a batch at a time (its thread in locals) */
	return !sampled && ulma_profile_feed_events(&r->events, thread, ev, n) ? -ENOMEM : 0;
}

/* A copy of a source file, for the line tables. */
static int on_source(void *ctx, const struct ulma_trace_source *src)
{
	struct report_ctx *r = ctx;
	return ulma_profile_add_source(&r->profile, src->path, src->path_len, src->text, src->text_len, src->flags);
}

/* A thread's name and a process's RSS, as the live summary has them;
 * instants and other counters are for the timeline exports. */
static int on_mark(void *ctx, const struct ulma_trace_mark *m)
{
	struct report_ctx *r = ctx;
	if (m->name >= r->profile.nfuncs || m->thread >= r->profile.nthreads)
		return 0;
	if (m->kind == ULMA_EXT_COUNTER && !strcmp(r->profile.funcs[m->name].name, ULMA_MEM_RSS_COUNTER))
		return ulma_profile_mem_rss(&r->profile, r->profile.threads[m->thread].pid, (uint64_t)m->value);
	if (m->kind != ULMA_EXT_THREAD_NAME)
		return 0;
	return ulma_profile_thread_name(&r->profile, m->thread, r->profile.funcs[m->name].name);
}

/* An allocation or a free (--memory), as the monitor applied it. */
static int on_memory(void *ctx, const struct ulma_trace_memory *m)
{
	struct report_ctx *r = ctx;
	return ulma_profile_feed_memory(&r->events, m);
}

/* An object created or destroyed (--memory on 3.13+). */
static int on_object(void *ctx, const struct ulma_trace_object *o)
{
	struct report_ctx *r = ctx;
	return ulma_profile_feed_object(&r->events, o);
}

static int on_end(void *ctx, const struct ulma_trace_end *e)
{
	struct report_ctx *r = ctx;
	r->end = *e;
	return 0;
}

static const char report_usage[] =
	"usage: ulma report TRACE [--format text|json] [--limit N] [--lines] [--no-correction] [--html OUT.html]\n"
	"  --format F       text (default) or json (see docs/json.md)\n"
	"  --limit N        rows in the text table (default 25)\n"
	"  --lines          the line tables of every function recorded with --lines (docs/lines.md)\n"
	"  --no-correction  show times as measured, the hook's own cost included (docs/overhead.md)\n"
	"  --html OUT   write a self-contained HTML report instead (docs/exports.md)\n";

int ulma_cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{"format", required_argument, NULL, 'f'},
		{"limit", required_argument, NULL, 'n'},
		{"html", required_argument, NULL, 'H'},
		{"no-correction", no_argument, NULL, 'C'},
		{"lines", no_argument, NULL, 'l'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *format = "text", *html = NULL;
	long limit = 25;
	bool no_correction = false, lines = false;
	int c;
	optind = 0;
	while ((c = getopt_long(argc + 1, argv - 1, "f:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			format = optarg;
			break;
		case 'n':
			if (ulma_parse_limit(optarg, &limit) < 0)
				return ULMA_EXIT_USAGE;
			break;
		case 'H':
			html = optarg;
			break;
		case 'C':
			no_correction = true;
			break;
		case 'l':
			lines = true;
			break;
		case 'h':
			fputs(report_usage, stdout);
			return 0;
		default:
			fputs(report_usage, stderr);
			return ULMA_EXIT_USAGE;
		}
	}
	if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0) {
		ulma_die_msg("unknown format '%s' (choose text or json)", format);
		return ULMA_EXIT_USAGE;
	}
	if (optind != argc) {
		ulma_die_msg(optind > argc ? "report needs a trace file" : "report takes one trace file");
		fputs(report_usage, stderr);
		return ULMA_EXIT_USAGE;
	}
	const char *path = argv[optind - 1];
	if (html)
		return ulma_report_html(path, html, no_correction);

	struct report_ctx r;
	memset(&r, 0, sizeof(r));
	r.end.exit_status = -1;
	ulma_profile_init(&r.profile);
	ulma_profile_feed_init(&r.events, &r.profile);
	ulma_mpi_view_init(&r.mpi);
	struct ulma_trace_visitor v = {.ctx = &r,
				       .on_meta = on_meta,
				       .on_func = on_func,
				       .on_thread = on_thread,
				       .on_events = on_events,
				       .on_mark = on_mark,
				       .on_source = on_source,
				       .on_memory = on_memory,
				       .on_object = on_object,
				       .on_end = on_end,
				       .on_sched = on_sched,
				       .on_process = on_process,
				       .on_mpi = on_mpi,
				       .on_mpi_rank = on_mpi_rank,
				       .on_mpi_merge = on_mpi_merge};
	struct ulma_trace_status st;
	FILE *f;
	const char *why;
	int open_err = ulma_trace_open(path, &f, &why);
	if (open_err) {
		ulma_die_msg("cannot open trace '%s': %s", path, why ? why : strerror(-open_err));
		return 1;
	}
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	rewind(f);
	int err = ulma_trace_read(f, &v, &st);
	fclose(f);
	if (err) {
		if (err == -EPROTO)
			ulma_die_msg("%s: not a readable ulma trace: %s", path, st.error);
		else
			ulma_die_msg("%s: %s", path, strerror(-err));
		ulma_profile_feed_free(&r.events);
		ulma_profile_free(&r.profile);
		ulma_mpi_view_free(&r.mpi);
		free(r.lanes);
		free(r.feed);
		return 1;
	}
	bool tsc = (r.meta.flags & ULMA_META_TSC) != 0;
	struct ulma_clock_pair start = {r.meta.start_ticks, r.meta.start_ns};
	struct ulma_clock_pair endp = {r.end.end_ticks, r.end.end_ns};
	struct ulma_summary s = {.profile = &r.profile,
				 .trace_bytes = size > 0 ? (uint64_t)size : 0,
				 .trace_path = path,
				 .failures = r.end.failures,
				 .complete = st.complete,
				 .exit_status = st.complete ? r.end.exit_status : -1,
				 .overhead_ps = st.overhead_ps,
				 .no_correction = no_correction,
				 .mpi = &r.mpi};
	ulma_mpi_view_finish(&r.mpi);
	ulma_clock_calibrate(tsc, &start, st.complete ? &endp : NULL, r.meta.tick_hz, &s.cal);
	s.monitor_cpu_ns = r.end.monitor_cpu_ns;
	s.switches_lost = r.end.switches_lost;
	s.resynced = r.end.resynced;
	s.refused = r.end.refused;
	uint64_t end_ticks = st.complete ? r.end.end_ticks : st.last_ticks;
	ulma_profile_feed_finish(&r.events, st.complete ? &r.end : NULL, st.last_ticks);
	s.duration_ns = st.complete && r.end.end_ns > r.meta.start_ns
				? r.end.end_ns - r.meta.start_ns
				: ulma_clock_ticks_to_ns(&s.cal, end_ticks > start.ticks ? end_ticks - start.ticks : 0);
	enum { LANE_COLS = 64 };
	char (*lane_text)[LANE_COLS + 1] = calloc(r.nsched ? r.nsched : 1, sizeof(*lane_text));
	const char **lane_ptrs = calloc(r.nsched ? r.nsched : 1, sizeof(*lane_ptrs));
	for (uint32_t i = 0; i < r.nsched && i < r.profile.nthreads; i++) /* up to each thread's last event */
		if (r.feed[i].started && ulma_schedline_empty(ulma_profile_feed_schedline(&r.events, i)))
			feed_lane(&r, i, r.profile.threads[i].last_ticks, r.feed[i].cpu);
	if (lane_text && lane_ptrs && end_ticks > r.meta.start_ticks) {
		for (uint32_t i = 0; i < r.nsched; i++) {
			ulma_lane_render(&r.lanes[i], r.meta.start_ticks, end_ticks, lane_text[i], LANE_COLS);
			lane_ptrs[i] = lane_text[i];
		}
		s.lanes = lane_ptrs;
	}
	if (!st.complete)
		ulma_die_msg("warning: %s is incomplete (cut short at byte %llu); showing the %llu events it holds",
			     path, (unsigned long long)st.bytes, (unsigned long long)st.events);
	bool no_lines = false;
	if (lines && strcmp(format, "text") == 0) {
		err = 0;
		no_lines = ulma_summary_lines_text(stdout, &s, UINT32_MAX) == 0;
	} else {
		err = strcmp(format, "json") == 0 ? ulma_summary_json(stdout, &s)
						  : ulma_summary_text(stdout, &s, (uint32_t)limit);
	}
	ulma_profile_feed_free(&r.events);
	ulma_profile_free(&r.profile);
	ulma_mpi_view_free(&r.mpi);
	free(r.lanes);
	free(r.feed);
	free(lane_text);
	free(lane_ptrs);
	if (no_lines) {
		ulma_die_msg("%s has no lines: record them with `ulma run --lines PATTERN` (docs/lines.md)", path);
		return 1;
	}
	if (fflush(stdout) != 0 || err) {
		ulma_die_msg("cannot write the report: %s", strerror(errno ? errno : EIO));
		return 1;
	}
	return 0;
}
