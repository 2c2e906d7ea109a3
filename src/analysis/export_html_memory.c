/* export_html_memory.c - the data of the HTML report's memory views (see
 * export_html_memory.h). */
#include "export_html_memory.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/array.h"
#include "../core/idmap.h"
#include "mem_flame.h"
#include "profile_objects.h"
#include "ulma/shm.h"

#define REPLAY_DONE 1
 /* the second walk's sink stops it at the peak */

/* The monitor's counter marks (src/monitor/collector_memory.c), by series. */
static const char *const series_names[HM_SERIES] = {"memory: Python heap (bytes)", "memory: native (bytes)",
						    ULMA_MEM_RSS_COUNTER};
static const char *const series_keys[HM_SERIES] = {"heap", "native", "rss"};

void ulma_html_memory_free(struct ulma_html_memory *m)
{
	for (uint32_t i = 0; i < m->nprocs; i++)
		for (int k = 0; k < HM_SERIES; k++)
			ulma_series_free(&m->procs[i].s[k]);
	free(m->procs);
	free(m->at_peak);
	if (m->replayed)
		ulma_profile_free(&m->replay);
	memset(m, 0, sizeof(*m));
}

int ulma_html_memory_mark(struct ulma_html_memory *m, const struct ulma_walk *w, uint32_t thread,
			  const struct ulma_walk_mark *mark)
{
	const char *name = w->funcs[mark->name].name;
	int k = 0;
	while (k < HM_SERIES && strcmp(name, series_names[k]) != 0)
		k++;
	if (k == HM_SERIES || mark->kind != ULMA_EXT_COUNTER || !isfinite(mark->value))
		return 0;
	uint32_t pid = w->threads[thread].pid, i = 0;
	while (i < m->nprocs && m->procs[i].pid != pid)
		i++;
	if (i == m->nprocs) {
		if (m->nprocs == ULMA_HTML_MEM_PROCS)
			return 0;
		struct ulma_html_mem_proc *p = realloc(m->procs, (m->nprocs + 1) * sizeof(*p));
		if (!p)
			return -ENOMEM;
		m->procs = p;
		p[i].pid = pid;
		for (int s = 0; s < HM_SERIES; s++)
			ulma_series_init(&p[i].s[s], ULMA_HTML_MEM_POINTS);
		m->nprocs++;
	}
	return ulma_series_add(&m->procs[i].s[k], mark->at_ns, mark->value);
}

void ulma_html_memory_record(struct ulma_html_memory *m, const struct ulma_profile *p, uint64_t at_ns)
{
	const struct ulma_mem_proc *peak = ulma_profile_memory_peak(p);
	m->records++;
	if (peak && peak->peak_bytes > m->peak_bytes) { /* this record made a new peak */
		m->peak_bytes = peak->peak_bytes;
		m->peak_at_ns = at_ns;
		m->peak_pid = peak->pid;
		m->peak_record = m->records;
	}
}

/* ---- the stacks at the peak: a second walk up to its record ---- */

struct replay {
	uint64_t records, stop_at;
};

static int replay_record(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_trace_memory *r,
			 uint64_t at_ns)
{
	struct replay *rp = ctx;
	(void)w, (void)thread, (void)r, (void)at_ns;
	return ++rp->records == rp->stop_at ? REPLAY_DONE : 0;
}

int ulma_html_memory_replay(struct ulma_html_memory *m, FILE *in, long start, const struct ulma_export_opts *o)
{
	if (!m->peak_record || start < 0 || fseek(in, start, SEEK_SET) != 0)
		return 0;
	struct replay rp = {0, m->peak_record};
	struct ulma_walk w;
	struct ulma_trace_status st;
	struct ulma_walk_sink sink = {.ctx = &rp, .profile = &m->replay, .on_memory = replay_record};
	ulma_profile_init(&m->replay);
	m->replayed = true;
	ulma_walk_init(&w, &o->filter);
	int err = ulma_walk_run(&w, in, &sink, &st);
	ulma_walk_free(&w);
	if (err != REPLAY_DONE)
		return err < 0 ? err : 0; /* the trace changed under us: no stacks */
	return ulma_profile_memory_live_of(&m->replay, m->peak_pid, &m->at_peak, &m->nat_peak);
}

/* ---- JSON ---- */

static void put_stack(struct ulma_sbuf *b, const struct ulma_walk *w, const struct ulma_profile *p, uint32_t node)
{
	uint32_t funcs[ULMA_HTML_MEM_DEPTH];
	uint32_t n = ulma_profile_memory_stack(p, node, funcs, ULMA_HTML_MEM_DEPTH);
	ulma_sbuf_put(b, "[", 1);
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			ulma_sbuf_put(b, ",", 1);
		ulma_sbuf_json(b, funcs[i] < w->nfuncs ? w->funcs[funcs[i]].name : "?");
	}
	ulma_sbuf_put(b, "]", 1);
}

/* "NAME":[{stack, bytes, count, native}...],"NAME_left_out":N,"NAME_bytes":ALL */
static void put_groups(struct ulma_sbuf *b, const char *name, const struct ulma_walk *w, const struct ulma_profile *p,
		       const struct ulma_mem_leak *g, uint32_t n)
{
	uint64_t all = 0;
	ulma_sbuf_printf(b, ",\n\"%s\":[", name);
	for (uint32_t i = 0; i < n; i++) {
		all += g[i].bytes;
		if (i >= ULMA_HTML_MEM_ROWS)
			continue;
		ulma_sbuf_puts(b, i ? ",\n{\"stack\":" : "\n{\"stack\":");
		put_stack(b, w, p, g[i].node);
		ulma_sbuf_printf(b, ",\"bytes\":%llu,\"count\":%llu,\"native\":%llu}", (unsigned long long)g[i].bytes,
				 (unsigned long long)g[i].count, (unsigned long long)g[i].native_bytes);
	}
	ulma_sbuf_printf(b, "],\"%s_left_out\":%u,\"%s_bytes\":%llu", name, n > ULMA_HTML_MEM_ROWS ? n - ULMA_HTML_MEM_ROWS : 0,
			 name, (unsigned long long)all);
}

/* ---- the flame graphs: bounded trees of the same groups (mem_flame.h) ---- */

/* The functions the flame graphs name, each once: "frames" in the page. */
struct frames {
	struct ulma_idmap of_key; /* function key + 1 -> frame */
	uint32_t *key;            /* by frame */
	uint32_t n, cap;
};

/* The frame of walk function func; -1 when out of memory, -3 for a
 * function the walk does not know (the page shows "?"). */
static int64_t frame_of(struct frames *fr, const struct ulma_walk *w, uint32_t func)
{
	if (func >= w->nfuncs)
		return -3;
	uint32_t key = w->funcs[func].key, at;
	if (ulma_idmap_get(&fr->of_key, (uint64_t)key + 1, &at))
		return at;
	if (ulma_array_grow((void **)&fr->key, &fr->cap, fr->n, sizeof(*fr->key)) ||
	    ulma_idmap_put(&fr->of_key, (uint64_t)key + 1, fr->n))
		return -1;
	fr->key[fr->n] = key;
	return fr->n++;
}

/* "NAME":{"f":[frame; -1 the root, -2 other, -3 unknown], "p":[parent], "b":[bytes], "nb":[native bytes],
 * "c":[blocks], "s":[stacks an "other" merges], "other_bytes":B, "other_stacks":S} */
static int put_flame(struct ulma_sbuf *b, const char *name, const struct ulma_walk *w, const struct ulma_profile *p,
		     const struct ulma_mem_leak *g, uint32_t n, struct frames *fr)
{
	struct ulma_mem_flame f;
	if (ulma_mem_flame_build(&f, p, g, n, ULMA_HTML_MEM_FLAME_NODES, ULMA_HTML_MEM_FLAME_SHARE))
		return -ENOMEM;
	int err = 0;
	ulma_sbuf_printf(b, ",\n\"%s\":{\"f\":[", name);
	for (uint32_t i = 0; i < f.n && !err; i++) {
		int64_t at = f.nodes[i].func == ULMA_MEM_NO_FUNC ? -1 : f.nodes[i].func == ULMA_MEM_FLAME_OTHER
			     ? -2 : frame_of(fr, w, f.nodes[i].func);
		if (at == -1 && f.nodes[i].func != ULMA_MEM_NO_FUNC)
			err = -ENOMEM;
		ulma_sbuf_printf(b, "%s%lld", i ? "," : "", (long long)at);
	}
	ulma_sbuf_puts(b, "],\"p\":[");
	for (uint32_t i = 0; i < f.n; i++)
		ulma_sbuf_printf(b, "%s%lld", i ? "," : "",
				 f.nodes[i].parent == ULMA_MEM_FLAME_ROOT ? -1LL : (long long)f.nodes[i].parent);
	ulma_sbuf_puts(b, "],\"b\":[");
	ULMA_SBUF_U64_LIST(b, f.n, f.nodes[i_].bytes);
	ulma_sbuf_puts(b, "],\"nb\":[");
	ULMA_SBUF_U64_LIST(b, f.n, f.nodes[i_].native_bytes);
	ulma_sbuf_puts(b, "],\"c\":[");
	ULMA_SBUF_U64_LIST(b, f.n, f.nodes[i_].count);
	ulma_sbuf_puts(b, "],\"s\":[");
	ULMA_SBUF_U64_LIST(b, f.n, f.nodes[i_].stacks);
	ulma_sbuf_printf(b, "],\"other_bytes\":%llu,\"other_stacks\":%u}", (unsigned long long)f.other_bytes,
			 f.other_stacks);
	ulma_mem_flame_free(&f);
	return err;
}

/* "frames":[row in "funcs", or [name, file, line, kind] (as those rows begin) for a function not there...] */
static void put_frames(struct ulma_sbuf *b, const struct ulma_walk *w, const struct frames *fr, const uint32_t *row_of)
{
	ulma_sbuf_puts(b, ",\n\"frames\":[");
	for (uint32_t i = 0; i < fr->n; i++) {
		const struct ulma_walk_func *f = &w->funcs[fr->key[i]];
		const char *kind = ulma_walk_kind_name(f->kind);
		if (row_of[fr->key[i]] != UINT32_MAX) {
			ulma_sbuf_printf(b, "%s%u", i ? "," : "", row_of[fr->key[i]]);
			continue;
		}
		ulma_sbuf_puts(b, i ? ",\n[" : "\n[");
		ulma_sbuf_json(b, f->name);
		ulma_sbuf_put(b, ",", 1);
		ulma_sbuf_json(b, f->file);
		ulma_sbuf_printf(b, ",%u,\"%s\"]", f->line, strcmp(kind, "python") == 0 ? "py" : kind);
	}
	ulma_sbuf_puts(b, "]");
}

/* How high a process's memory went: the peak's process above all. */
static double height(const struct ulma_html_memory *m, const struct ulma_html_mem_proc *p)
{
	if (p->pid == m->peak_pid && m->peak_record)
		return INFINITY;
	double h = 0;
	for (int k = 0; k < HM_SERIES; k++)
		if (p->s[k].values && p->s[k].max > h)
			h = p->s[k].max;
	return h;
}

/* "series":[{pid, heap:{t, v}, native, rss}...] of the ULMA_HTML_MEM_CHARTS highest processes */
static void put_series(struct ulma_sbuf *b, const struct ulma_html_memory *m)
{
	struct ulma_series_point pts[2 * ULMA_HTML_MEM_POINTS + 1];
	uint32_t order[ULMA_HTML_MEM_PROCS], n = 0;
	for (uint32_t i = 0; i < m->nprocs; i++) { /* insertion by height, descending */
		uint32_t j = n++;
		for (; j > 0 && height(m, &m->procs[order[j - 1]]) < height(m, &m->procs[i]); j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	if (n > ULMA_HTML_MEM_CHARTS)
		n = ULMA_HTML_MEM_CHARTS;
	ulma_sbuf_printf(b, ",\n\"series_left_out\":%u,\"series\":[", m->nprocs - n);
	for (uint32_t o = 0; o < n; o++) {
		uint32_t i = order[o];
		ulma_sbuf_printf(b, "%s{\"pid\":%u", o ? ",\n" : "\n", m->procs[i].pid);
		for (int k = 0; k < HM_SERIES; k++) {
			uint32_t npts = ulma_series_points(&m->procs[i].s[k], pts);
			ulma_sbuf_printf(b, ",\"%s\":{\"t\":[", series_keys[k]);
			for (uint32_t j = 0; j < npts; j++) {
				if (j)
					ulma_sbuf_put(b, ",", 1);
				ulma_sbuf_u64(b, pts[j].at);
			}
			ulma_sbuf_puts(b, "],\"v\":[");
			for (uint32_t j = 0; j < npts; j++) {
				if (j)
					ulma_sbuf_put(b, ",", 1);
				ulma_sbuf_double(b, pts[j].v);
			}
			ulma_sbuf_puts(b, "]}");
		}
		ulma_sbuf_puts(b, "}");
	}
	ulma_sbuf_puts(b, "]");
}

static int by_created(const void *a, const void *b)
{
	const struct ulma_obj_count *x = a, *y = b;
	if (x->created != y->created)
		return x->created < y->created ? 1 : -1;
	if (x->func != y->func)
		return x->func < y->func ? -1 : 1;
	return x->type < y->type ? -1 : x->type > y->type;
}

/* "objects":[[type, created, destroyed]...], "func_objects":[[row, type, created, destroyed]...] */
static int put_objects(struct ulma_sbuf *b, const struct ulma_walk *w, const struct ulma_profile *p,
		       const uint32_t *row_of)
{
	struct ulma_obj_count *types, *rows;
	uint32_t ntypes, nrows;
	if (ulma_profile_objects_by_type(p, &types, &ntypes))
		return -ENOMEM;
	if (ulma_profile_objects_by_func(p, &rows, &nrows)) {
		free(types);
		return -ENOMEM;
	}
	ulma_sbuf_printf(b, ",\n\"objects_counted\":%s,\"objects\":[", p->memory->objects_recorded ? "true" : "false");
	for (uint32_t i = 0; i < ntypes && i < ULMA_HTML_MEM_ROWS; i++) {
		ulma_sbuf_puts(b, i ? ",[" : "[");
		ulma_sbuf_json(b, w->funcs[types[i].type].name);
		ulma_sbuf_printf(b, ",%llu,%llu]", (unsigned long long)types[i].created,
				 (unsigned long long)types[i].destroyed);
	}
	ulma_sbuf_printf(b, "],\"objects_left_out\":%u,\n\"func_objects\":[",
			 ntypes > ULMA_HTML_MEM_ROWS ? ntypes - ULMA_HTML_MEM_ROWS : 0);
	/* the rows of the page's functions, most created first */
	uint32_t k = 0;
	for (uint32_t i = 0; i < nrows; i++)
		if (rows[i].func < w->nfuncs && row_of[w->funcs[rows[i].func].key] != UINT32_MAX && rows[i].created)
			rows[k++] = rows[i];
	if (k)
		qsort(rows, k, sizeof(*rows), by_created);
	for (uint32_t i = 0; i < k && i < ULMA_HTML_MEM_FUNC_ROWS; i++) {
		ulma_sbuf_printf(b, "%s[%u,", i ? "," : "", row_of[w->funcs[rows[i].func].key]);
		ulma_sbuf_json(b, w->funcs[rows[i].type].name);
		ulma_sbuf_printf(b, ",%llu,%llu]", (unsigned long long)rows[i].created, (unsigned long long)rows[i].destroyed);
	}
	ulma_sbuf_printf(b, "],\"func_objects_left_out\":%u", k > ULMA_HTML_MEM_FUNC_ROWS ? k - ULMA_HTML_MEM_FUNC_ROWS : 0);
	free(types);
	free(rows);
	return 0;
}

int ulma_html_memory_json(struct ulma_sbuf *b, const struct ulma_walk *w, const struct ulma_profile *p,
			  const struct ulma_html_memory *m, const uint32_t *row_of)
{
	if (!p->memory) {
		ulma_sbuf_puts(b, ",\n\"memory\":null");
		return 0;
	}
	const struct ulma_profile_memory *pm = p->memory;
	ulma_sbuf_printf(b,
			 ",\n\"memory\":{\"sample_bytes\":%llu,\"alloc_count\":%llu,\"alloc_bytes\":%llu,"
			 "\"native_alloc_bytes\":%llu,\"peak\":{\"bytes\":%llu,\"at\":%llu,\"pid\":%u,\"stacks\":%s}",
			 (unsigned long long)pm->sample_bytes, (unsigned long long)pm->alloc_count,
			 (unsigned long long)pm->alloc_bytes, (unsigned long long)pm->native_alloc_bytes,
			 (unsigned long long)m->peak_bytes, (unsigned long long)m->peak_at_ns, m->peak_pid,
			 m->at_peak || !m->peak_record ? "true" : "false");
	put_series(b, m);
	put_groups(b, "peak_stacks", w, &m->replay, m->at_peak, m->nat_peak);
	struct frames fr = {0};
	int err = put_flame(b, "peak_flame", w, &m->replay, m->at_peak, m->nat_peak, &fr);
	struct ulma_mem_leak *leaks = NULL;
	uint32_t nleaks = 0;
	if (!err)
		err = ulma_profile_memory_leaks(p, &leaks, &nleaks);
	if (!err) {
		put_groups(b, "leaks", w, p, leaks, nleaks);
		err = put_flame(b, "leak_flame", w, p, leaks, nleaks, &fr);
	}
	free(leaks);
	if (!err) {
		put_frames(b, w, &fr, row_of);
		err = put_objects(b, w, p, row_of);
	}
	free(fr.key);
	ulma_idmap_free(&fr.of_key);
	ulma_sbuf_puts(b, "}");
	return err;
}
