/* export_walk_defs.c - the walk's side of everything in a trace but its
 * events: the definitions (META's clock, functions and their merge keys
 * and pattern verdicts, processes, threads and their filter verdicts), the
 * records that are not events (marks, held until their thread's frames are
 * announced; MPI events; allocations and objects; sched samples; sources;
 * the hook's cost), and the END pair and last cost found before decoding.  Each record
 * gets its thread's corrected time (export_walk_internal.h's record_ns)
 * and goes to the profile the walk feeds and to the sink, if they take it.
 * The frames and events are export_walk.c's.
 */
#include "../core/array.h"
#include "export_walk_internal.h"

#include "profile_lines.h"
#include "profile_memory.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "../core/clock.h"
#include "../core/crc32c.h"
#include "../core/varint.h"
#include "ulma/trace_format.h"

/* ---------- the END pair and the last OVERHEAD, found before decoding ---------- */

static uint32_t get_u32le(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Skip from chunk header to chunk header, reading END and OVERHEAD. */
void ulma_walk_scan_ahead(struct ulma_walk *w, FILE *f)
{
	long pos = ftell(f);
	uint8_t buf[ULMA_TRACE_CHUNK_HEADER > 64 ? ULMA_TRACE_CHUNK_HEADER : 64];
	if (pos < 0 || fseek(f, pos + (long)ULMA_TRACE_FILE_HEADER, SEEK_SET) != 0)
		goto out;
	for (;;) {
		if (fread(buf, 1, ULMA_TRACE_CHUNK_HEADER, f) != ULMA_TRACE_CHUNK_HEADER)
			break;
		uint32_t type = get_u32le(buf), len = get_u32le(buf + 4), crc = get_u32le(buf + 8);
		if (len > ULMA_TRACE_MAX_CHUNK)
			break;
		if ((type != ULMA_CHUNK_END && type != ULMA_CHUNK_OVERHEAD) || len > sizeof(buf)) {
			if (fseek(f, (long)len, SEEK_CUR) != 0)
				break;
			continue;
		}
		if (fread(buf, 1, len, f) != len || ulma_crc32c(0, buf, len) != crc)
			break;
		const uint8_t *p = buf;
		if (type == ULMA_CHUNK_OVERHEAD) {
			uint64_t ps;
			if (ulma_varint_get(&p, buf + len, &ps) == 0 && p == buf + len) {
				w->last_cost_ps = ps;
				w->have_last_cost = true;
			}
			continue;
		}
		if (ulma_varint_get(&p, buf + len, &w->end_ticks) == 0 &&
		    ulma_varint_get(&p, buf + len, &w->end_ns) == 0)
			w->have_end = true;
		break;
	}
out:
	clearerr(f);
	if (pos >= 0)
		fseek(f, pos, SEEK_SET);
}

/* ---------- definitions ---------- */

static bool matches(const char *const *pats, size_t n, const char *name, const char *file)
{
	for (size_t i = 0; i < n; i++)
		if (fnmatch(pats[i], name, 0) == 0 || fnmatch(pats[i], file, 0) == 0)
			return true;
	return false;
}

static int on_meta(void *ctx, const struct ulma_trace_meta *m)
{
	struct ulma_walk *w = ctx;
	struct ulma_clock_calibration cal;
	struct ulma_clock_pair start = {m->start_ticks, m->start_ns};
	struct ulma_clock_pair end = {w->end_ticks, w->end_ns};
	w->tsc = (m->flags & ULMA_META_TSC) != 0;
	ulma_clock_calibrate(w->tsc, &start, w->have_end ? &end : NULL, m->tick_hz, &cal);
	w->ticks0 = m->start_ticks;
	w->ns_per_tick = cal.ns_per_tick;
	w->ns_per_tick_fp = ulma_u64_from_double(cal.ns_per_tick * 4294967296.0 + 0.5);
	w->pid = m->pid;
	w->start_ns = m->start_ns;
	free(w->command);
	w->command = m->command ? strdup(m->command) : NULL;
	if (m->command && !w->command)
		return -ENOMEM;
	ulma_profile_feed_meta(&w->feed, m);
	if (!w->sink->profile || !(m->flags & ULMA_META_MEMORY))
		return 0;
	int err = ulma_profile_memory_enable(w->sink->profile);
	if (!err) /* as `ulma report` has it: sampled blocks are estimates */
		w->sink->profile->memory->sample_bytes = m->mem_sample_bytes;
	return err;
}

/* FNV-1a over kind, line, name and file; never 0 (idmap's empty key). */
static uint64_t func_hash(const struct ulma_walk_func *d)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	const unsigned char *parts[2] = {(const unsigned char *)d->name, (const unsigned char *)d->file};
	h = (h ^ d->kind) * UINT64_C(0x100000001b3);
	h = (h ^ d->line) * UINT64_C(0x100000001b3);
	for (int i = 0; i < 2; i++) {
		for (const unsigned char *p = parts[i]; *p; p++)
			h = (h ^ *p) * UINT64_C(0x100000001b3);
		h = (h ^ 0xff) * UINT64_C(0x100000001b3);
	}
	return h ? h : 1;
}

/* Give d its merge key; a hash collision just leaves it unmerged. */
static int assign_key(struct ulma_walk *w, uint32_t index)
{
	struct ulma_walk_func *d = &w->funcs[index];
	uint64_t h = func_hash(d);
	uint32_t other;
	d->key = index;
	if (ulma_idmap_get(&w->keys, h, &other)) {
		const struct ulma_walk_func *o = &w->funcs[other];
		if (other != index && o->kind == d->kind && o->line == d->line && strcmp(o->name, d->name) == 0 &&
		    strcmp(o->file, d->file) == 0)
			d->key = o->key;
		return 0;
	}
	return ulma_idmap_put(&w->keys, h, index);
}

static int on_func(void *ctx, const struct ulma_trace_func *f)
{
	struct ulma_walk *w = ctx;
	const struct ulma_walk_filter *flt = &w->filter;
	if (ulma_array_grow((void **)&w->funcs, &w->cap_funcs, f->index, sizeof(*w->funcs)))
		return -ENOMEM;
	struct ulma_walk_func *d = &w->funcs[f->index];
	char *name = ulma_strndup(f->name, f->name_len), *file = ulma_strndup(f->file, f->file_len);
	if (!name || !file) {
		free(name);
		free(file);
		return -ENOMEM;
	}
	free(d->name);
	free(d->file);
	d->name = name;
	d->file = file;
	d->line = f->line;
	d->kind = f->kind;
	d->pass = (flt->ninclude == 0 || matches(flt->include, flt->ninclude, name, file)) &&
		  !matches(flt->exclude, flt->nexclude, name, file);
	if (f->index >= w->nfuncs)
		w->nfuncs = f->index + 1;
	int err = assign_key(w, f->index);
	if (!err && w->sink->profile)
		err = ulma_profile_add_func(w->sink->profile, f->index, f->kind, f->name, f->name_len, f->file, f->file_len,
					    f->line);
	if (err)
		return err;
	return w->sink->on_func ? w->sink->on_func(w->sink->ctx, w, f->index) : 0;
}

static int on_process(void *ctx, const struct ulma_trace_process *p)
{
	struct ulma_walk *w = ctx;
	int err = ulma_pid_names_set(&w->names, p->pid, p->name, p->name_len);
	if (!err && p->ppid)
		err = ulma_idmap_put(&w->parent_of_pid, (uint64_t)p->pid + 1, p->ppid);
	return err;
}

static int on_thread(void *ctx, const struct ulma_trace_thread *th)
{
	struct ulma_walk *w = ctx;
	if (ulma_array_grow((void **)&w->threads, &w->cap_threads, th->index, sizeof(*w->threads)))
		return -ENOMEM;
	struct ulma_walk_thread *t = &w->threads[th->index];
	if (!w->pid) /* META's pid is 0 when the trace was opened before the program started */
		w->pid = th->pid;
	t->serial = th->serial;
	t->pid = th->pid;
	t->tid = th->tid;
	t->name = ULMA_WALK_NONE;
	t->pass = (w->filter.tid == ULMA_WALK_ALL || w->filter.tid == (int64_t)th->tid) &&
		  (w->filter.pid == ULMA_WALK_ALL || w->filter.pid == (int64_t)th->pid);
	if (th->index >= w->nthreads)
		w->nthreads = th->index + 1;
	int err = w->sink->profile ? ulma_profile_feed_thread(&w->feed, th) : 0;
	if (err)
		return err;
	if (t->pass && w->sink->on_thread)
		return w->sink->on_thread(w->sink->ctx, w, th->index);
	return 0;
}

/* ---------- records that are not events ---------- */

/* A mark, at its thread's corrected time: what thread_ns gives an event
 * but for the cost, which a mark does not add (it is not an event). */
static int on_mark(void *ctx, const struct ulma_trace_mark *m)
{
	struct ulma_walk *w = ctx;
	if (m->thread >= w->nthreads || m->name >= w->nfuncs)
		return 0; /* the reader checks both; never trust an index blindly */
	struct ulma_walk_thread *t = &w->threads[m->thread];
	if (!t->pass)
		return 0;
	uint64_t ns = record_ns(w, t, m->ticks);
	if (m->kind == ULMA_EXT_THREAD_NAME)
		t->name = m->name;
	else if (ns < w->filter.from_ns || ns > w->filter.to_ns)
		return 0;
	if (!w->sink->on_mark)
		return 0;
	struct ulma_walk_mark wm = {m->name, m->kind, ns, m->value};
	/* every frame is announced as it opens, or none open is yet: nothing to wait for */
	if (w->keep_all || (t->depth == 0 && t->nheld == 0))
		return w->sink->on_mark(w->sink->ctx, w, m->thread, &wm);
	if (t->nheld == t->cap_held && ulma_array_grow((void **)&t->held, &t->cap_held, t->nheld, sizeof(*t->held)))
		return -ENOMEM;
	t->held[t->nheld++] = wm;
	return 0;
}

static int on_mpi_rank(void *ctx, const struct ulma_trace_rank *r)
{
	struct ulma_walk *w = ctx;
	return ulma_idmap_put(&w->rank_of_pid, (uint64_t)r->pid + 1, r->rank + 1);
}

/* An MPI event, at its thread's corrected time as a mark is. */
static int on_mpi(void *ctx, const struct ulma_trace_mpi *m)
{
	struct ulma_walk *w = ctx;
	if (m->thread >= w->nthreads || !w->threads[m->thread].pass)
		return 0;
	struct ulma_walk_thread *t = &w->threads[m->thread];
	uint64_t ns = to_ns(w, m->ticks), shift = t->shift_fp >> 32;
	ns = ns > shift ? ns - shift : 0;
	if (ns < w->filter.from_ns || ns > w->filter.to_ns)
		return 0;
	uint32_t rank = 0;
	ulma_idmap_get(&w->rank_of_pid, (uint64_t)t->pid + 1, &rank);
	struct ulma_walk_mpi wm = {m, ns, rank ? rank - 1 : UINT32_MAX};
	return w->sink->on_mpi(w->sink->ctx, w, m->thread, &wm);
}

/* An allocation or a free (--memory): fed to the profile as `ulma report`
 * does (the lines' and functions' bytes), and handed to a sink that asks at
 * its thread's corrected time (as a mark's). */
static int on_memory(void *ctx, const struct ulma_trace_memory *m)
{
	struct ulma_walk *w = ctx;
	if (m->thread >= w->nthreads || !w->threads[m->thread].pass)
		return 0;
	if (w->sink->profile) {
		int err = ulma_profile_feed_memory(&w->feed, m);
		if (err || !w->sink->on_memory)
			return err;
	}
	return w->sink->on_memory(w->sink->ctx, w, m->thread, m, record_ns(w, &w->threads[m->thread], m->ticks));
}

/* An object created or destroyed (--memory on 3.13+): to the profile
 * (the objects per type and function), and to a sink that asks, at its
 * thread's corrected time as an allocation's. */
static int on_object(void *ctx, const struct ulma_trace_object *o)
{
	struct ulma_walk *w = ctx;
	if (o->thread >= w->nthreads || !w->threads[o->thread].pass || o->type >= w->nfuncs)
		return 0;
	if (w->sink->profile) {
		int err = ulma_profile_feed_object(&w->feed, o);
		if (err || !w->sink->on_object)
			return err;
	}
	return w->sink->on_object(w->sink->ctx, w, o->thread, o, record_ns(w, &w->threads[o->thread], o->ticks));
}

static int on_overhead(void *ctx, uint64_t ps)
{
	struct ulma_walk *w = ctx;
	if (w->have_last_cost) /* the run's figure, from the first event on (ulma_walk_scan_ahead) */
		ps = w->last_cost_ps;
	if (!w->filter.no_correction) {
		w->cost_ps = ps;
		w->cost_fp = (uint64_t)(((unsigned __int128)ps << 32) / 1000); /* ns, 32.32 fixed point */
	}
	return 0;
}

static int on_sched(void *ctx, uint32_t thread, const struct ulma_trace_sched *s)
{
	struct ulma_walk *w = ctx;
	return w->threads[thread].pass ? ulma_profile_feed_sched(&w->feed, thread, s) : 0;
}

static int on_source(void *ctx, const struct ulma_trace_source *s)
{
	struct ulma_walk *w = ctx;
	return ulma_profile_add_source(w->sink->profile, s->path, s->path_len, s->text, s->text_len, s->flags);
}

static int on_end(void *ctx, const struct ulma_trace_end *e)
{
	struct ulma_walk *w = ctx;
	w->end = *e;
	w->have_end = true;
	w->end_ticks = e->end_ticks;
	w->end_ns = e->end_ns;
	return 0;
}

void ulma_walk_visitor_init(struct ulma_walk *w, struct ulma_trace_visitor *v)
{
	v->ctx = w;
	v->on_meta = on_meta;
	v->on_func = on_func;
	v->on_thread = on_thread;
	v->on_end = on_end;
	v->on_process = on_process;
	v->on_overhead = on_overhead;
	v->on_mark = on_mark;
	if (w->sink->on_memory || w->sink->profile)
		v->on_memory = on_memory;
	if (w->sink->on_object || w->sink->profile)
		v->on_object = on_object;
	if (w->sink->on_mpi) {
		v->on_mpi = on_mpi;
		v->on_mpi_rank = on_mpi_rank;
	}
	if (w->sink->profile) {
		v->on_sched = on_sched;
		v->on_source = on_source;
	}
}
