/* ring_drain.h - a ring seed (ring_seeds.h) drained as the monitor drains
 * a session, and the checks every drain must pass: shared by fuzz_rings
 * and the unit tests that replay what it found
 * (tests/unit/test_collector_hostile.c).  Header-only; include in one file.
 *
 * The collector runs as `ulma run` runs it: polls while the definition
 * area fills, a reap when the slots' process is gone, the final polls, the
 * end, the trace (when the seed asks for one) and both summaries.  Then:
 *   - the collector has no error (a hostile ring is refused record by
 *     record, never an error of the whole run);
 *   - the trace reads back with the real reader, complete, and its
 *     profile equals the live one (threads, functions, each function's
 *     calls, events, lost and refused records, the processes' names): a
 *     report of the file must equal the live summary.
 */
#ifndef ULMA_FUZZ_RING_DRAIN_H
#define ULMA_FUZZ_RING_DRAIN_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analysis/profile.h"
#include "analysis/profile_feed.h"
#include "analysis/profile_memory.h"
#include "analysis/summary.h"
#include "core/session.h"
#include "core/trace_reader.h"
#include "core/trace_writer.h"
#include "monitor/collector.h"
#include "monitor/record_options.h"
#include "ring_seeds.h"
#include "ulma/shm.h"

/* A drained seed: the session and the collector, for the caller to look at. */
struct ulma_ring_drained {
	struct ulma_session session;
	struct ulma_collector col;
	char why[512]; /* what went wrong, or "" */
};

static void ulma_ring_drain_fail(struct ulma_ring_drained *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ulma_ring_drain_fail(struct ulma_ring_drained *d, const char *fmt, ...)
{
	if (d->why[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->why, sizeof(d->why), fmt, ap);
	va_end(ap);
}

/* The trace read back into a profile, as `ulma report` does. */
struct ulma_ring_readback {
	struct ulma_profile profile;
	struct ulma_profile_feed feed;
	struct ulma_trace_end end;
};

static int ulma_ring_rb_meta(void *ctx, const struct ulma_trace_meta *m)
{
	struct ulma_ring_readback *r = ctx;
	ulma_profile_feed_meta(&r->feed, m);
	return (m->flags & ULMA_META_MEMORY) ? ulma_profile_memory_enable(&r->profile) : 0;
}

static int ulma_ring_rb_func(void *ctx, const struct ulma_trace_func *f)
{
	struct ulma_ring_readback *r = ctx;
	return ulma_profile_add_func(&r->profile, f->index, f->kind, f->name, f->name_len, f->file, f->file_len,
				     f->line);
}

static int ulma_ring_rb_thread(void *ctx, const struct ulma_trace_thread *t)
{
	struct ulma_ring_readback *r = ctx;
	return ulma_profile_feed_thread(&r->feed, t);
}

static int ulma_ring_rb_events(void *ctx, uint32_t thread, const struct ulma_trace_event *ev, size_t n)
{
	struct ulma_ring_readback *r = ctx;
	return ulma_profile_feed_events(&r->feed, thread, ev, n);
}

static int ulma_ring_rb_memory(void *ctx, const struct ulma_trace_memory *m)
{
	struct ulma_ring_readback *r = ctx;
	return ulma_profile_feed_memory(&r->feed, m);
}

static int ulma_ring_rb_object(void *ctx, const struct ulma_trace_object *o)
{
	struct ulma_ring_readback *r = ctx;
	return ulma_profile_feed_object(&r->feed, o);
}

static int ulma_ring_rb_process(void *ctx, const struct ulma_trace_process *proc)
{
	struct ulma_ring_readback *r = ctx;
	return ulma_pid_names_set(&r->profile.names, proc->pid, proc->name, proc->name_len);
}

static int ulma_ring_rb_end(void *ctx, const struct ulma_trace_end *e)
{
	struct ulma_ring_readback *r = ctx;
	r->end = *e;
	return 0;
}

/* The trace at path must read back to the live profile's figures. */
static void ulma_ring_drain_check_trace(struct ulma_ring_drained *d, const char *path)
{
	struct ulma_ring_readback r;
	memset(&r, 0, sizeof(r));
	ulma_profile_init(&r.profile);
	ulma_profile_feed_init(&r.feed, &r.profile);
	struct ulma_trace_visitor v = {.ctx = &r, .on_meta = ulma_ring_rb_meta, .on_func = ulma_ring_rb_func,
				       .on_thread = ulma_ring_rb_thread, .on_events = ulma_ring_rb_events,
				       .on_memory = ulma_ring_rb_memory, .on_object = ulma_ring_rb_object,
				       .on_process = ulma_ring_rb_process, .on_end = ulma_ring_rb_end};
	struct ulma_trace_status st;
	int err = ulma_trace_read_path(path, &v, &st);
	const struct ulma_profile *live = &d->col.profile, *file = &r.profile;
	if (err)
		ulma_ring_drain_fail(d, "the monitor's trace does not read back: %s",
				     err == -EPROTO ? st.error : strerror(-err));
	else if (!st.complete)
		ulma_ring_drain_fail(d, "the monitor's trace has no END");
	if (!err)
		ulma_profile_feed_finish(&r.feed, &r.end, st.last_ticks);
	if (!err && live->nthreads != file->nthreads)
		ulma_ring_drain_fail(d, "threads: %u live, %u in the trace", live->nthreads, file->nthreads);
	if (!err && live->nfuncs != file->nfuncs)
		ulma_ring_drain_fail(d, "functions: %u live, %u in the trace", live->nfuncs, file->nfuncs);
	if (!err && ulma_profile_events(live) != ulma_profile_events(file))
		ulma_ring_drain_fail(d, "events: %llu live, %llu in the trace",
				     (unsigned long long)ulma_profile_events(live),
				     (unsigned long long)ulma_profile_events(file));
	if (!err && live->lost != file->lost)
		ulma_ring_drain_fail(d, "lost: %llu live, %llu in the trace", (unsigned long long)live->lost,
				     (unsigned long long)file->lost);
	if (!err && d->col.refused != r.end.refused)
		ulma_ring_drain_fail(d, "refused: %llu live, %llu in the trace", (unsigned long long)d->col.refused,
				     (unsigned long long)r.end.refused);
	for (uint32_t i = 0; !err && i < live->nthreads && i < file->nthreads; i++) {
		const char *a = ulma_pid_names_get(&live->names, live->threads[i].pid);
		const char *b = ulma_pid_names_get(&file->names, live->threads[i].pid);
		if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
			ulma_ring_drain_fail(d, "process %u: \"%s\" live, \"%s\" in the trace", live->threads[i].pid,
					     a ? a : "(none)", b ? b : "(none)");
	}
	for (uint32_t i = 0; !err && i < live->nfuncs && i < file->nfuncs; i++)
		if (live->funcs[i].calls != file->funcs[i].calls)
			ulma_ring_drain_fail(d, "calls of %s: %llu live, %llu in the trace", live->funcs[i].name,
					     (unsigned long long)live->funcs[i].calls,
					     (unsigned long long)file->funcs[i].calls);
	ulma_profile_feed_free(&r.feed);
	ulma_profile_free(&r.profile);
}

/* A session's configuration for a seed: its slots, rings and definitions
 * sizes, the clock in ns. */
static void ulma_ring_seed_config(struct ulma_session_config *cfg)
{
	ulma_session_config_default(cfg);
	cfg->slot_count = ULMA_RING_SEED_SLOTS;
	cfg->ring_records = ULMA_RING_SEED_RECORDS;
	cfg->defs_size = ULMA_RING_SEED_DEFS;
	cfg->use_tsc = false;
}

/* Drain seed into d (free with ulma_ring_drained_free); its trace, if the
 * seed asks for one, at trace_path.  Summaries go to `out`.  Returns true
 * if every check passed, else false with d->why. */
static bool ulma_ring_seed_drain(const struct ulma_ring_seed *seed, const char *trace_path, FILE *out,
				 struct ulma_ring_drained *d)
{
	memset(d, 0, sizeof(*d));
	struct ulma_session_config cfg;
	ulma_ring_seed_config(&cfg);
	cfg.memory = (seed->options & ULMA_RING_SEED_MEMORY) != 0;
	int err = ulma_session_create(&cfg, &d->session);
	if (err) {
		ulma_ring_drain_fail(d, "no session: %s", strerror(-err));
		return false;
	}
	bool gone = (seed->options & ULMA_RING_SEED_GONE) != 0, traced = (seed->options & ULMA_RING_SEED_TRACE) != 0;
	uint32_t pid = gone ? ULMA_RING_SEED_GONE_PID : (uint32_t)getpid();
	ulma_ring_seed_fill(seed, &d->session, pid);

	struct ulma_record_options o;
	ulma_record_options_init(&o);
	o.output = trace_path;
	struct ulma_trace_writer *w = NULL;
	struct ulma_trace_meta meta = {.flags = cfg.memory ? ULMA_META_MEMORY : 0, .pid = pid,
				       .tick_hz = 1000000000u, .command = "ring seed"};
	if (traced && (err = ulma_trace_writer_open(trace_path, &meta, &w))) {
		ulma_ring_drain_fail(d, "cannot write the trace %s: %s", trace_path, strerror(-err));
		return false;
	}
	if (ulma_collector_init(&d->col, &d->session, w)) {
		ulma_ring_drain_fail(d, "out of memory");
		ulma_trace_writer_abandon(w);
		return false;
	}
	struct ulma_clock_pair start = {0, 0}, end = {UINT64_MAX / 2, 1000000000u};
	ulma_collector_split(&d->col, ULMA_SPLIT_NONE, NULL, &start, 1000000000u);
	ulma_collector_poll(&d->col, false);
	ulma_ring_seed_publish_defs(seed, &d->session);
	ulma_collector_poll(&d->col, false);
	if (gone)
		ulma_collector_reap(&d->col, end.ticks);
	for (int i = 0; i < 8 && ulma_collector_poll(&d->col, true) > 0; i++)
		;
	if (d->col.error)
		ulma_ring_drain_fail(d, "the collector failed: %s", strerror(-d->col.error));
	ulma_collector_close_all(&d->col, end.ticks);
	if (traced && ulma_record_close_trace(&o, &d->col, w, &end, 0, 0))
		ulma_ring_drain_fail(d, "the trace could not be closed");
	struct ulma_summary sum;
	ulma_record_summary(&sum, &d->col, traced ? trace_path : NULL, false, 1000000000u, &start, &end, 0, 0, false);
	ulma_summary_text(out, &sum, 25);
	ulma_summary_json(out, &sum);
	if (traced && !d->why[0])
		ulma_ring_drain_check_trace(d, trace_path);
	return !d->why[0];
}

static void ulma_ring_drained_free(struct ulma_ring_drained *d)
{
	ulma_collector_free(&d->col);
	ulma_session_unmap(&d->session);
}

#endif
