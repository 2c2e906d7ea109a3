/* export_html.c - the data of the self-contained HTML report (docs/html.md):
 * the function table with each function's time split, the calling-context
 * tree with a subtree per thread (the page merges them per process or all
 * together, inverts them and cuts the sandwich of a function), and the
 * per-thread timeline.
 *
 * The page (src/analysis/html/, embedded by cmake/embed_page.cmake) is
 * static HTML, CSS and JavaScript with no external resource; a
 * Content-Security-Policy forbids any network access.  The data goes in
 * one <script type="application/json"> element, written with
 * ulma_sbuf_json, which escapes '<', '>' and '&', so no name can end the
 * element; the page reads it with JSON.parse and puts names on screen only
 * through textContent and canvas text, never as markup.
 *
 * The data is a summary, never every event, so the page stays under 5 MB
 * whatever the trace's size: the MAX_FUNCS functions with the longest
 * totals; the tree's MAX_NODES heaviest nodes, each with its parent, none
 * under 1/20000 of the total time (a deep recursion keeps its outer
 * levels); for the timeline only the frames longer than a
 * threshold that doubles whenever more than MAX_SPANS are kept, in at most
 * MAX_LANES threads, each lane's frames in start order as start deltas and
 * durations.  The time split per function (export_html_funcs.c) is the
 * profile's that the walk feeds, `ulma report`'s figures.
 *
 * Functions carry their kind (py, c, native, zone), which the page colours
 * apart.  Marks: the first MAX_INSTANTS instants are ticks on their
 * thread's lane; each counter (a name in a process) keeps its count,
 * minimum, maximum and last value and at most MAX_POINTS of its values for
 * a sparkline, every value while they fit, then every second, fourth...
 * (the stride doubles when the points are full).  A thread named by a mark
 * has its last name in its lane ("name"; "label" names its process too).
 *
 * Lines recorded with `ulma run --lines` get a view of their own: the walk
 * feeds a profile (export_walk.h) whose line rows export_html_lines.c
 * writes out, with the source they annotate.  A trace recorded with
 * --memory gets a Memory view from the same profile (export_html_memory.c:
 * the memory counters over time, the peak and the stacks holding it, the
 * leaks, the objects).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "export.h"
#include "export_html_funcs.h"
#include "export_html_lines.h"
#include "export_html_memory.h"
#include "export_html_page.h"
#include "export_text.h"
#include "ulma/shm.h"

/* The bounds that keep the page under 5 MB whatever the trace (docs/exports.md) */
#define MAX_FUNCS 4000u  /* function rows: those with the longest total */
#define MAX_NODES 20000u /* call-tree nodes */
#define MAX_SPANS 70000u /* timeline frames */
#define MAX_LANES 2000u  /* timeline threads */
#define MAX_INSTANTS 5000u
#define MAX_COUNTERS 64u
#define MAX_POINTS 256u

struct span {
	uint32_t key;
	uint32_t depth;
	uint64_t start, end;
};

struct instant {
	uint64_t at;
	uint32_t name; /* funcs index */
};

struct lane {
	struct span *s;
	uint32_t n, cap;
	struct instant *in;
	uint32_t nin, cap_in;
};

struct counter {
	uint32_t pid, key; /* the process and the name's funcs key */
	uint64_t values;    /* finite values seen */
	uint64_t not_finite;
	double min, max, last;
	uint64_t stride;    /* a value is a point when its number is a multiple of this */
	uint32_t npoints;
	uint64_t at[MAX_POINTS];
	double v[MAX_POINTS];
};

struct html {
	struct ulma_calltree t;
	struct lane *lanes;
	uint32_t nlanes;
	uint64_t nspans;
	uint64_t min_span; /* frames shorter than this are not on the timeline */
	uint64_t ninstants, instants_left_out;
	struct counter *counters;
	uint32_t ncounters;
	uint64_t counters_left_out; /* values of counters past MAX_COUNTERS */
	struct ulma_profile lines;  /* fed by the walk: the line view's rows, the split, memory and objects */
	struct ulma_html_memory mem; /* the memory views' series and peak */
};

static struct lane *lane_of(struct html *h, uint32_t thread)
{
	if (thread >= h->nlanes) {
		uint32_t n = thread + 1 > h->nlanes * 2 ? thread + 1 : h->nlanes * 2;
		struct lane *l = realloc(h->lanes, (size_t)n * sizeof(*l));
		if (!l)
			return NULL;
		memset(l + h->nlanes, 0, (size_t)(n - h->nlanes) * sizeof(*l));
		h->lanes = l;
		h->nlanes = n;
	}
	return &h->lanes[thread];
}

static int add_span(struct html *h, uint32_t thread, const struct ulma_walk *w, const struct ulma_walk_frame *f)
{
	uint64_t dur = f->end_ns - f->start_ns;
	if (dur < h->min_span)
		return 0;
	struct lane *l = lane_of(h, thread);
	if (!l)
		return -ENOMEM;
	if (l->n == l->cap) {
		uint32_t ncap = l->cap ? l->cap * 2 : 256;
		struct span *s = realloc(l->s, (size_t)ncap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		l->s = s;
		l->cap = ncap;
	}
	l->s[l->n++] = (struct span){w->funcs[f->func].key, f->depth, f->start_ns, f->end_ns};
	if (++h->nspans <= MAX_SPANS)
		return 0;
	/* too many: raise the bar and keep only what passes it, everywhere */
	h->min_span = h->min_span ? h->min_span * 2 : 1000;
	h->nspans = 0;
	for (uint32_t i = 0; i < h->nlanes; i++) {
		struct lane *x = &h->lanes[i];
		uint32_t k = 0;
		for (uint32_t j = 0; j < x->n; j++)
			if (x->s[j].end - x->s[j].start >= h->min_span)
				x->s[k++] = x->s[j];
		x->n = k;
		h->nspans += k;
	}
	return 0;
}

static int on_open(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	struct html *h = ctx;
	return ulma_calltree_open(&h->t, w, thread, f); /* only when the walk filters */
}

static int on_close(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	struct html *h = ctx;
	/* unfiltered, the walk feeds the tree and brings the long frames only */
	int err = ulma_walk_feeds_tree(w) ? 0 : ulma_calltree_close(&h->t, w, thread, f);
	return err ? err : add_span(h, thread, w, f);
}

static void add_point(struct counter *c, uint64_t at, double v)
{
	if (c->values++ % c->stride)
		return;
	if (c->npoints == MAX_POINTS) { /* full: keep every second point, take every second value from now */
		for (uint32_t i = 0; i < MAX_POINTS / 2; i++) {
			c->at[i] = c->at[2 * i];
			c->v[i] = c->v[2 * i];
		}
		c->npoints = MAX_POINTS / 2;
		c->stride *= 2;
		if ((c->values - 1) % c->stride)
			return;
	}
	c->at[c->npoints] = at;
	c->v[c->npoints++] = v;
}

static int on_mark(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_mark *m)
{
	struct html *h = ctx;
	if (m->kind == ULMA_EXT_INSTANT) {
		struct lane *l = lane_of(h, thread);
		if (!l)
			return -ENOMEM;
		if (h->ninstants >= MAX_INSTANTS) {
			h->instants_left_out++;
			return 0;
		}
		if (l->nin == l->cap_in) {
			uint32_t ncap = l->cap_in ? l->cap_in * 2 : 64;
			struct instant *in = realloc(l->in, (size_t)ncap * sizeof(*in));
			if (!in)
				return -ENOMEM;
			l->in = in;
			l->cap_in = ncap;
		}
		l->in[l->nin++] = (struct instant){m->at_ns, m->name};
		h->ninstants++;
		return 0;
	}
	if (m->kind != ULMA_EXT_COUNTER)
		return 0;
	int err = h->lines.memory ? ulma_html_memory_mark(&h->mem, w, thread, m) : 0;
	if (err)
		return err;
	uint32_t pid = w->threads[thread].pid, key = w->funcs[m->name].key, i = 0;
	while (i < h->ncounters && (h->counters[i].pid != pid || h->counters[i].key != key))
		i++;
	if (i == h->ncounters) {
		if (h->ncounters == MAX_COUNTERS) {
			h->counters_left_out++;
			return 0;
		}
		struct counter *c = realloc(h->counters, (size_t)(h->ncounters + 1) * sizeof(*c));
		if (!c)
			return -ENOMEM;
		h->counters = c;
		memset(&c[i], 0, sizeof(c[i]));
		c[i].pid = pid;
		c[i].key = key;
		c[i].stride = 1;
		h->ncounters++;
	}
	struct counter *c = &h->counters[i];
	if (!isfinite(m->value)) { /* JSON has no number for it */
		c->not_finite++;
		return 0;
	}
	if (c->values == 0 || m->value < c->min)
		c->min = m->value;
	if (c->values == 0 || m->value > c->max)
		c->max = m->value;
	c->last = m->value;
	add_point(c, m->at_ns, m->value);
	return 0;
}

/* A memory record, just fed to the profile: the peak's moment. */
static int on_memory(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_trace_memory *m,
		     uint64_t at_ns)
{
	struct html *h = ctx;
	(void)w, (void)thread, (void)m;
	ulma_html_memory_record(&h->mem, &h->lines, at_ns);
	return 0;
}

/* "counters":[{name, pid, values, ...}] */
static void write_counters(struct ulma_sbuf *b, const struct ulma_walk *w, const struct html *h)
{
	ulma_sbuf_printf(b, ",\n\"instants_left_out\":%llu,\"counters_left_out\":%llu,\n\"counters\":[",
			 (unsigned long long)h->instants_left_out, (unsigned long long)h->counters_left_out);
	for (uint32_t i = 0; i < h->ncounters; i++) {
		const struct counter *c = &h->counters[i];
		ulma_sbuf_puts(b, i ? ",\n{\"name\":" : "\n{\"name\":");
		ulma_sbuf_json(b, w->funcs[c->key].name);
		ulma_sbuf_printf(b, ",\"pid\":%u,\"values\":%llu,\"not_finite\":%llu,\"min\":", c->pid,
				 (unsigned long long)c->values, (unsigned long long)c->not_finite);
		ulma_sbuf_double(b, c->values ? c->min : 0);
		ulma_sbuf_puts(b, ",\"max\":");
		ulma_sbuf_double(b, c->values ? c->max : 0);
		ulma_sbuf_puts(b, ",\"last\":");
		ulma_sbuf_double(b, c->values ? c->last : 0);
		ulma_sbuf_puts(b, ",\"t\":[");
		for (uint32_t k = 0; k < c->npoints; k++) {
			if (k)
				ulma_sbuf_put(b, ",", 1);
			ulma_sbuf_u64(b, c->at[k]);
		}
		ulma_sbuf_puts(b, "],\"v\":[");
		for (uint32_t k = 0; k < c->npoints; k++) {
			if (k)
				ulma_sbuf_put(b, ",", 1);
			ulma_sbuf_double(b, c->v[k]);
		}
		ulma_sbuf_puts(b, "]}");
	}
	ulma_sbuf_puts(b, "]");
}

/* What write_data builds before it writes. */
struct rows {
	uint32_t *of_key;     /* key -> row in "funcs", UINT32_MAX: left out */
	uint32_t nrows;
	uint32_t left_out;    /* functions with calls past MAX_FUNCS */
	uint32_t *of_thread;  /* walk thread -> row in "threads", UINT32_MAX: none */
	uint32_t nthreads;
	uint32_t threads_left_out;
};

static int by_total_desc(const void *a, const void *b, void *totals)
{
	const struct ulma_ct_totals *t = totals;
	uint64_t x = t[*(const uint32_t *)a].total_ns, y = t[*(const uint32_t *)b].total_ns;
	uint32_t ka = *(const uint32_t *)a, kb = *(const uint32_t *)b;
	return x < y ? 1 : x > y ? -1 : (ka > kb) - (ka < kb);
}

/* Rows for the MAX_FUNCS functions with calls of the longest total, in key order. */
static int choose_rows(const struct ulma_walk *w, const struct ulma_ct_totals *fn, struct rows *r)
{
	uint32_t n = 0, *cand = malloc((w->nfuncs ? w->nfuncs : 1) * sizeof(*cand));
	if (!cand)
		return -ENOMEM;
	for (uint32_t k = 0; k < w->nfuncs; k++) {
		r->of_key[k] = UINT32_MAX;
		if (w->funcs[k].key == k && fn[k].calls)
			cand[n++] = k;
	}
	if (n > MAX_FUNCS) {
		qsort_r(cand, n, sizeof(*cand), by_total_desc, (void *)fn);
		r->left_out = n - MAX_FUNCS;
		n = MAX_FUNCS;
	}
	for (uint32_t i = 0; i < n; i++)
		r->of_key[cand[i]] = 0;
	for (uint32_t k = 0; k < w->nfuncs; k++)
		if (r->of_key[k] == 0)
			r->of_key[k] = r->nrows++;
	free(cand);
	return 0;
}

/* "funcs":[[name, file, line, kind, calls, self, total]...], "fx":[split...] */
static int write_funcs(struct ulma_sbuf *b, FILE *out, const struct ulma_walk *w, const struct ulma_ct_totals *fn,
		       const struct rows *r, const struct ulma_html_split *split)
{
	int err = 0;
	ulma_sbuf_puts(b, "\"funcs\":[");
	for (uint32_t k = 0, n = 0; k < w->nfuncs && !err; k++) {
		if (r->of_key[k] == UINT32_MAX)
			continue;
		const struct ulma_walk_func *f = &w->funcs[k];
		ulma_sbuf_puts(b, n++ ? ",\n[" : "\n[");
		ulma_sbuf_json(b, f->name);
		ulma_sbuf_put(b, ",", 1);
		ulma_sbuf_json(b, f->file);
		const char *kind = ulma_walk_kind_name(f->kind);
		ulma_sbuf_printf(b, ",%u,\"%s\",%llu,%llu,%llu]", f->line, strcmp(kind, "python") == 0 ? "py" : kind,
				 (unsigned long long)fn[k].calls, (unsigned long long)fn[k].self_ns,
				 (unsigned long long)fn[k].total_ns);
		if (b->len > 65536)
			err = ulma_sbuf_flush(b, out);
	}
	ulma_sbuf_printf(b, "],\n\"funcs_left_out\":%u,\n\"fx\":[", r->left_out);
	for (uint32_t k = 0, n = 0; k < w->nfuncs && !err; k++) {
		if (r->of_key[k] == UINT32_MAX)
			continue;
		ulma_sbuf_puts(b, n++ ? ",\n" : "\n");
		ulma_html_split_json(b, &split[k]);
		if (b->len > 65536)
			err = ulma_sbuf_flush(b, out);
	}
	ulma_sbuf_puts(b, "],\n");
	return err;
}

/* The row of tree node n in the page: a function's row, or -2 - the
 * thread's row for a thread node; -1 if the page has neither. */
static int64_t node_row(const struct ulma_calltree *t, uint32_t n, const struct rows *r)
{
	uint32_t key = t->nodes[n].key;
	if (t->nodes[n].parent == ULMA_CALLTREE_ROOT && n != ULMA_CALLTREE_ROOT) {
		uint32_t th = ULMA_CALLTREE_THREAD_OF(key);
		return th < r->nthreads && r->of_thread[th] != UINT32_MAX ? -2 - (int64_t)r->of_thread[th] : -1;
	}
	return r->of_key[key] == UINT32_MAX ? -1 : (int64_t)r->of_key[key];
}

/* A max-heap of node ids by total time. */
static void heap_push(uint32_t *heap, uint32_t *n, const struct ulma_ct_node *nd, uint32_t id)
{
	uint32_t i = (*n)++;
	for (; i && nd[heap[(i - 1) / 2]].total_ns < nd[id].total_ns; i = (i - 1) / 2)
		heap[i] = heap[(i - 1) / 2];
	heap[i] = id;
}

static uint32_t heap_pop(uint32_t *heap, uint32_t *n, const struct ulma_ct_node *nd)
{
	uint32_t top = heap[0], last = heap[--*n], i = 0;
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && nd[heap[c + 1]].total_ns > nd[heap[c]].total_ns)
			c++;
		if (nd[heap[c]].total_ns <= nd[last].total_ns)
			break;
		heap[i] = heap[c];
		i = c;
	}
	heap[i] = last;
	return top;
}

/* "tree":{f, p, t, s, c}: the tree, pruned, breadth first (a parent before
 * its children); node 0 is the root, its children the threads. */
static int write_tree(struct ulma_sbuf *b, FILE *out, struct html *h, const struct rows *r)
{
	struct ulma_ct_node *nd = h->t.nodes;
	uint32_t *order = malloc((size_t)h->t.nnodes * sizeof(*order));
	uint32_t *newid = malloc((size_t)h->t.nnodes * sizeof(*newid));
	uint32_t nkept = 0;
	if (!order || !newid) {
		free(order);
		free(newid);
		return -ENOMEM;
	}
	/* a thread node's time is its outermost frames' */
	uint64_t all = 0;
	for (uint32_t th = nd[0].first_child; th; th = nd[th].next_sibling) {
		nd[th].total_ns = 0;
		for (uint32_t c = nd[th].first_child; c; c = nd[c].next_sibling)
			nd[th].total_ns += nd[c].total_ns;
		all += nd[th].total_ns;
	}
	/* the heaviest nodes first, each after its parent (a child is never
	 * heavier than its parent), until MAX_NODES or the bar: a binary heap
	 * of the candidates, the children of the nodes kept so far */
	uint64_t bar = all / 20000, smallest = 0;
	uint32_t nheap = 0;
	uint32_t *cand = malloc((size_t)h->t.nnodes * sizeof(*cand));
	if (!cand) {
		free(order);
		free(newid);
		return -ENOMEM;
	}
	nkept = 0;
	order[nkept++] = 0;
	newid[0] = 0;
	for (uint32_t c = nd[0].first_child; c; c = nd[c].next_sibling)
		heap_push(cand, &nheap, nd, c);
	while (nheap && nkept <= MAX_NODES) {
		uint32_t n = heap_pop(cand, &nheap, nd);
		if (nd[n].total_ns < bar || nd[n].total_ns == 0)
			break; /* the heaviest left is under the bar: so are the rest */
		if (node_row(&h->t, n, r) == -1)
			continue;
		newid[n] = nkept;
		order[nkept++] = n;
		smallest = nd[n].total_ns;
		for (uint32_t c = nd[n].first_child; c; c = nd[c].next_sibling)
			heap_push(cand, &nheap, nd, c);
	}
	free(cand);
	if (nheap && smallest > bar)
		bar = smallest; /* what the page may say was left out under */
	ulma_sbuf_puts(b, "\"tree\":{\"f\":[-1");
	for (uint32_t i = 1; i < nkept; i++) {
		int64_t row = node_row(&h->t, order[i], r);
		ulma_sbuf_printf(b, ",%lld", (long long)row);
	}
	ulma_sbuf_puts(b, "],\n\"p\":[-1");
	for (uint32_t i = 1; i < nkept; i++)
		ulma_sbuf_printf(b, ",%u", newid[nd[order[i]].parent]);
	ulma_sbuf_puts(b, "],\n\"t\":[");
	ulma_sbuf_u64(b, all);
	for (uint32_t i = 1; i < nkept; i++) {
		ulma_sbuf_put(b, ",", 1);
		ulma_sbuf_u64(b, nd[order[i]].total_ns);
	}
	ulma_sbuf_puts(b, "],\n\"s\":[0");
	for (uint32_t i = 1; i < nkept; i++) {
		ulma_sbuf_put(b, ",", 1);
		ulma_sbuf_u64(b, nd[order[i]].self_ns);
	}
	ulma_sbuf_puts(b, "],\n\"c\":[0");
	for (uint32_t i = 1; i < nkept; i++) {
		ulma_sbuf_put(b, ",", 1);
		ulma_sbuf_u64(b, nd[order[i]].calls);
	}
	ulma_sbuf_printf(b, "],\"min_ns\":%llu},\n", (unsigned long long)bar);
	free(order);
	free(newid);
	return ulma_sbuf_flush(b, out);
}

static int by_start(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->depth > y->depth) - (x->depth < y->depth);
}

/* "threads":[...], each with its spans in start order: s is the start
 * less the previous span's start, e the duration; i the instants, each
 * less the one before. */
static int write_threads(struct ulma_sbuf *b, FILE *out, const struct ulma_walk *w, struct html *h,
			 const struct rows *r)
{
	int err = 0;
	ulma_sbuf_puts(b, "\"threads\":[");
	for (uint32_t i = 0; i < w->nthreads && !err; i++) {
		const struct ulma_walk_thread *t = &w->threads[i];
		if (r->of_thread[i] == UINT32_MAX)
			continue;
		struct lane *l = i < h->nlanes ? &h->lanes[i] : &(struct lane){0};
		uint32_t k = 0;
		for (uint32_t j = 0; j < l->n; j++) /* functions the page has */
			if (r->of_key[l->s[j].key] != UINT32_MAX)
				l->s[k++] = l->s[j];
		l->n = k;
		qsort(l->s, l->n, sizeof(*l->s), by_start);
		char label[ULMA_WALK_LABEL_MAX];
		ulma_walk_thread_label(w, t, label, sizeof(label));
		ulma_sbuf_puts(b, r->of_thread[i] ? ",\n{\"label\":" : "\n{\"label\":");
		ulma_sbuf_json(b, label);
		ulma_sbuf_puts(b, ",\"name\":");
		ulma_sbuf_json(b, t->name != ULMA_WALK_NONE ? w->funcs[t->name].name : "");
		ulma_sbuf_printf(b, ",\"pid\":%u,\"tid\":%u,\"main\":%s,\"first\":%llu,\"last\":%llu,\"f\":[", t->pid,
				 t->tid, t->pid == t->tid ? "true" : "false", (unsigned long long)t->first_ns,
				 (unsigned long long)t->last_ns);
		ULMA_SBUF_U64_LIST(b, l->n, r->of_key[l->s[i_].key]);
		ulma_sbuf_puts(b, "],\"d\":[");
		ULMA_SBUF_U64_LIST(b, l->n, l->s[i_].depth);
		ulma_sbuf_puts(b, "],\"s\":[");
		ULMA_SBUF_U64_LIST(b, l->n, l->s[i_].start - (i_ ? l->s[i_ - 1].start : 0));
		ulma_sbuf_puts(b, "],\"e\":[");
		ULMA_SBUF_U64_LIST(b, l->n, l->s[i_].end - l->s[i_].start);
		ulma_sbuf_puts(b, "],\"i\":[");
		ULMA_SBUF_U64_LIST(b, l->nin, l->in[i_].at - (i_ ? l->in[i_ - 1].at : 0));
		ulma_sbuf_puts(b, "],\"in\":[");
		for (uint32_t q = 0; q < l->nin; q++) {
			if (q)
				ulma_sbuf_put(b, ",", 1);
			ulma_sbuf_json(b, w->funcs[l->in[q].name].name);
		}
		ulma_sbuf_puts(b, "]}");
		err = ulma_sbuf_flush(b, out);
	}
	ulma_sbuf_printf(b, "],\n\"threads_left_out\":%u,\n\"processes\":[", r->threads_left_out);
	/* each process once, with its name where the trace has one */
	for (uint32_t i = 0, n = 0; i < w->nthreads; i++) {
		if (r->of_thread[i] == UINT32_MAX)
			continue;
		uint32_t j = 0;
		while (j < i && (r->of_thread[j] == UINT32_MAX || w->threads[j].pid != w->threads[i].pid))
			j++;
		if (j < i)
			continue;
		const char *name = ulma_walk_process_name(w, w->threads[i].pid);
		ulma_sbuf_printf(b, "%s{\"pid\":%u,\"name\":", n++ ? "," : "", w->threads[i].pid);
		ulma_sbuf_json(b, name ? name : "");
		ulma_sbuf_puts(b, "}");
	}
	ulma_sbuf_puts(b, "]");
	return err;
}

static int write_data(FILE *out, const struct ulma_walk *w, struct html *h)
{
	struct ulma_sbuf b = {0};
	uint32_t nf = w->nfuncs ? w->nfuncs : 1, nt = w->nthreads ? w->nthreads : 1;
	struct rows r = {.of_key = malloc(nf * sizeof(uint32_t)), .of_thread = malloc(nt * sizeof(uint32_t)),
			 .nthreads = w->nthreads};
	struct ulma_ct_totals *fn = malloc(nf * sizeof(*fn)); /* the function table, from the tree */
	struct ulma_html_split *split = malloc(nf * sizeof(*split));
	struct ulma_html_has has = {0};
	int err = r.of_key && r.of_thread && fn && split ? ulma_calltree_totals(&h->t, w->nfuncs, fn) : -ENOMEM;
	if (!err)
		err = choose_rows(w, fn, &r);
	for (uint32_t i = 0, n = 0; i < w->nthreads && !err; i++) {
		const struct ulma_walk_thread *t = &w->threads[i];
		r.of_thread[i] = UINT32_MAX;
		if (t->pass && t->kept && n < MAX_LANES)
			r.of_thread[i] = n++;
		else if (t->pass && t->kept)
			r.threads_left_out++;
	}
	if (!err)
		ulma_html_funcs_split(w, &h->lines, split, &has);

	char note[ULMA_WALK_NOTE_MAX];
	ulma_walk_times_note(w, note, sizeof(note));
	/* the time window exported (--from, --to): where the timeline opens */
	uint64_t window_to = w->filter.to_ns < w->duration_ns ? w->filter.to_ns : w->duration_ns;
	uint64_t window_from = w->filter.from_ns < window_to ? w->filter.from_ns : 0;
	ulma_sbuf_puts(&b, "{\"title\":");
	ulma_sbuf_json(&b, w->command && *w->command ? w->command : "ulma trace");
	ulma_sbuf_puts(&b, ",\"times\":");
	ulma_sbuf_json(&b, note);
	ulma_sbuf_printf(&b,
			 ",\"duration_ns\":%llu,\"window\":[%llu,%llu],\"events\":%llu,\"lost\":%llu,\"complete\":%s,"
			 "\"min_span_ns\":%llu,\n"
			 "\"has\":{\"split\":%s,\"gil\":%s,\"native\":%s,\"memory\":%s},\n",
			 (unsigned long long)w->duration_ns, (unsigned long long)window_from,
			 (unsigned long long)window_to, (unsigned long long)w->events, (unsigned long long)w->lost,
			 w->complete ? "true" : "false", (unsigned long long)h->min_span, has.split ? "true" : "false",
			 has.gil ? "true" : "false", has.native ? "true" : "false", has.memory ? "true" : "false");
	if (!err)
		err = write_funcs(&b, out, w, fn, &r, split);
	if (!err)
		err = write_tree(&b, out, h, &r);
	if (!err)
		err = write_threads(&b, out, w, h, &r);
	write_counters(&b, w, h);
	if (!err)
		err = ulma_html_lines(&b, w, &h->lines, r.of_key);
	if (!err)
		err = ulma_html_memory_json(&b, w, &h->lines, &h->mem, r.of_key);
	ulma_sbuf_puts(&b, "}");
	if (!err)
		err = ulma_sbuf_flush(&b, out);
	ulma_sbuf_free(&b);
	free(r.of_key);
	free(r.of_thread);
	free(fn);
	free(split);
	return err;
}

int ulma_export_html(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
		     struct ulma_export_result *res)
{
	struct html h = {0};
	struct ulma_walk w;
	(void)dir;
	int err = ulma_calltree_init(&h.t);
	if (err)
		return err;
	h.t.per_thread = true; /* the page merges the threads as the user chooses */
	ulma_profile_init(&h.lines);
	struct ulma_walk_sink sink = {.ctx = &h,
				      .on_open = on_open,
				      .on_close = on_close,
				      .tree = &h.t,
				      .close_from = &h.min_span,
				      .on_mark = on_mark,
				      .profile = &h.lines,
				      .on_memory = on_memory};
	long start = ftell(in); /* the memory view's second walk starts here too */
	err = ulma_export_walk(in, o, &w, &sink, res);
	if (!err && h.lines.memory)
		err = ulma_html_memory_replay(&h.mem, in, start, o);
	if (!err && fputs(ulma_html_head, out) == EOF)
		err = -EIO;
	if (!err)
		err = write_data(out, &w, &h);
	if (!err && fputs(ulma_html_tail, out) == EOF)
		err = -EIO;
	for (uint32_t i = 0; i < h.nlanes; i++) {
		free(h.lanes[i].s);
		free(h.lanes[i].in);
	}
	free(h.lanes);
	free(h.counters);
	ulma_calltree_free(&h.t);
	ulma_profile_free(&h.lines);
	ulma_html_memory_free(&h.mem);
	ulma_walk_free(&w);
	return err;
}
