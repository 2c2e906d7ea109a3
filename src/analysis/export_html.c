/* export_html.c - a self-contained HTML report of a trace: flame graph
 * (icicle), sortable and searchable function table, per-thread timeline.
 *
 * The page (export_html_page.c) is static HTML, CSS and JavaScript with no
 * external resource; a Content-Security-Policy forbids any network access.
 * The data goes in one <script type="application/json"> element, written
 * with ulma_sbuf_json, which escapes '<', '>' and '&', so no name can end
 * the element; the page reads it with JSON.parse and puts names on screen
 * only through textContent and canvas text, never as markup.
 *
 * The data is aggregated, not every event: per-function totals (the call
 * graph), the calling-context tree without the nodes under 1/20000 of the
 * total time (at most MAX_NODES), and for the timeline only the frames
 * longer than a threshold that doubles whenever more than MAX_SPANS are
 * kept, so the page stays small whatever the trace's size.
 *
 * Functions carry their kind (py, c, native, zone), which the page colours
 * apart.  Marks: the first MAX_INSTANTS instants are ticks on their
 * thread's lane; each counter (a name in a process) keeps its count,
 * minimum, maximum and last value and at most MAX_POINTS of its values for
 * a sparkline, every value while they fit, then every second, fourth...
 * (the stride doubles when the points are full).  A thread named by a mark
 * has its last name in its lane's label.
 *
 * Lines recorded with `ulma run --lines` get a view of their own: the walk
 * feeds a profile (export_walk.h) whose line rows export_html_lines.c
 * writes out, with the source they annotate.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "export.h"
#include "export_html_lines.h"
#include "export_html_page.h"
#include "export_text.h"
#include "ulma/shm.h"

#define MAX_NODES 30000u
#define MAX_SPANS 150000u
#define MAX_INSTANTS 20000u
#define MAX_COUNTERS 256u
#define MAX_POINTS 512u

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
	struct ulma_profile lines;  /* fed by the walk: the line view's rows */
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

/* Comma-separated decimal list of n values taken by get(i). */
#define PUT_LIST(b, n, expr)                                \
	do {                                                \
		for (uint32_t i_ = 0; i_ < (n); i_++) {     \
			if (i_)                             \
				ulma_sbuf_put((b), ",", 1); \
			ulma_sbuf_u64((b), (expr));         \
		}                                           \
	} while (0)

static int write_data(FILE *out, const struct ulma_walk *w, struct html *h)
{
	struct ulma_sbuf b = {0};
	uint32_t nf = w->nfuncs ? w->nfuncs : 1;
	uint32_t *index = malloc(nf * sizeof(*index)); /* key -> row in "funcs" */
	uint32_t *order = malloc((size_t)h->t.nnodes * sizeof(*order));
	uint32_t *newid = malloc((size_t)h->t.nnodes * sizeof(*newid));
	struct ulma_ct_totals *fn = malloc(nf * sizeof(*fn)); /* the function table, from the tree */
	int err = index && order && newid && fn ? ulma_calltree_totals(&h->t, w->nfuncs, fn) : -ENOMEM;
	uint32_t nrows = 0, nkept = 0;

	char note[ULMA_WALK_NOTE_MAX];
	ulma_walk_times_note(w, note, sizeof(note));
	ulma_sbuf_puts(&b, "{\"title\":");
	ulma_sbuf_json(&b, w->command && *w->command ? w->command : "ulma trace");
	ulma_sbuf_puts(&b, ",\"times\":");
	ulma_sbuf_json(&b, note);
	ulma_sbuf_printf(&b,
			 ",\"duration_ns\":%llu,\"events\":%llu,\"lost\":%llu,\"complete\":%s,\"min_span_ns\":%llu,\n"
			 "\"funcs\":[",
			 (unsigned long long)w->duration_ns, (unsigned long long)w->events, (unsigned long long)w->lost,
			 w->complete ? "true" : "false", (unsigned long long)h->min_span);
	for (uint32_t k = 0; k < w->nfuncs && !err; k++) {
		index[k] = UINT32_MAX;
		const struct ulma_walk_func *f = &w->funcs[k];
		if (f->key != k || fn[k].calls == 0)
			continue;
		const struct ulma_ct_totals *cf = &fn[k];
		index[k] = nrows++;
		ulma_sbuf_puts(&b, nrows > 1 ? ",\n[" : "\n[");
		ulma_sbuf_json(&b, f->name);
		ulma_sbuf_put(&b, ",", 1);
		ulma_sbuf_json(&b, f->file);
		const char *kind = ulma_walk_kind_name(f->kind);
		ulma_sbuf_printf(&b, ",%u,\"%s\",%llu,%llu,%llu]", f->line, strcmp(kind, "python") == 0 ? "py" : kind,
				 (unsigned long long)cf->calls, (unsigned long long)cf->self_ns,
				 (unsigned long long)cf->total_ns);
		if (b.len > 65536)
			err = ulma_sbuf_flush(&b, out);
	}
	ulma_sbuf_puts(&b, "],\n");

	/* the tree, pruned, breadth first (a parent before its children); node 0 is the root */
	uint64_t all = 0;
	for (uint32_t c = h->t.nodes[0].first_child; c; c = h->t.nodes[c].next_sibling)
		all += h->t.nodes[c].total_ns;
	uint64_t bar = all / 20000;
	for (int pass = 0; !err; pass++) {
		nkept = 0;
		order[nkept++] = 0;
		newid[0] = 0;
		for (uint32_t i = 0; i < nkept && nkept <= MAX_NODES; i++)
			for (uint32_t c = h->t.nodes[order[i]].first_child; c; c = h->t.nodes[c].next_sibling)
				if (h->t.nodes[c].total_ns >= bar && h->t.nodes[c].total_ns > 0 && nkept <= MAX_NODES) {
					newid[c] = nkept;
					order[nkept++] = c;
				}
		if (nkept <= MAX_NODES || pass > 60)
			break;
		bar = bar ? bar * 2 : 1;
	}
	if (!err) {
		const struct ulma_ct_node *nd = h->t.nodes;
		ulma_sbuf_puts(&b, "\"tree\":{\"f\":[-1");
		for (uint32_t i = 1; i < nkept; i++) {
			ulma_sbuf_put(&b, ",", 1);
			ulma_sbuf_u64(&b, index[nd[order[i]].key]);
		}
		ulma_sbuf_puts(&b, "],\n\"p\":[-1");
		for (uint32_t i = 1; i < nkept; i++) {
			ulma_sbuf_put(&b, ",", 1);
			ulma_sbuf_u64(&b, newid[nd[order[i]].parent]);
		}
		ulma_sbuf_puts(&b, "],\n\"t\":[");
		ulma_sbuf_u64(&b, all);
		for (uint32_t i = 1; i < nkept; i++) {
			ulma_sbuf_put(&b, ",", 1);
			ulma_sbuf_u64(&b, nd[order[i]].total_ns);
		}
		ulma_sbuf_puts(&b, "],\n\"s\":[0");
		for (uint32_t i = 1; i < nkept; i++) {
			ulma_sbuf_put(&b, ",", 1);
			ulma_sbuf_u64(&b, nd[order[i]].self_ns);
		}
		ulma_sbuf_puts(&b, "],\n\"c\":[0");
		for (uint32_t i = 1; i < nkept; i++) {
			ulma_sbuf_put(&b, ",", 1);
			ulma_sbuf_u64(&b, nd[order[i]].calls);
		}
		ulma_sbuf_puts(&b, "]},\n\"threads\":[");
		err = ulma_sbuf_flush(&b, out);
	}

	bool first = true;
	for (uint32_t i = 0; i < w->nthreads && !err; i++) {
		const struct ulma_walk_thread *t = &w->threads[i];
		if (!t->pass || !t->kept)
			continue;
		const struct lane *l = i < h->nlanes ? &h->lanes[i] : &(const struct lane){0};
		ulma_sbuf_printf(&b, "%s\n{\"name\":", first ? "" : ",");
		char label[ULMA_WALK_LABEL_MAX];
		ulma_walk_thread_label(w, t, label, sizeof(label));
		ulma_sbuf_json(&b, label);
		ulma_sbuf_printf(&b, ",\"first\":%llu,\"last\":%llu,\"f\":[", (unsigned long long)t->first_ns,
				 (unsigned long long)t->last_ns);
		first = false;
		PUT_LIST(&b, l->n, index[l->s[i_].key]);
		ulma_sbuf_puts(&b, "],\"d\":[");
		PUT_LIST(&b, l->n, l->s[i_].depth);
		ulma_sbuf_puts(&b, "],\"s\":[");
		PUT_LIST(&b, l->n, l->s[i_].start);
		ulma_sbuf_puts(&b, "],\"e\":[");
		PUT_LIST(&b, l->n, l->s[i_].end);
		ulma_sbuf_puts(&b, "],\"i\":[");
		PUT_LIST(&b, l->nin, l->in[i_].at);
		ulma_sbuf_puts(&b, "],\"in\":[");
		for (uint32_t k = 0; k < l->nin; k++) {
			if (k)
				ulma_sbuf_put(&b, ",", 1);
			ulma_sbuf_json(&b, w->funcs[l->in[k].name].name);
		}
		ulma_sbuf_puts(&b, "]}");
		err = ulma_sbuf_flush(&b, out);
	}
	ulma_sbuf_puts(&b, "]");
	write_counters(&b, w, h);
	if (!err)
		err = ulma_html_lines(&b, w, &h->lines, index);
	ulma_sbuf_puts(&b, "}");
	if (!err)
		err = ulma_sbuf_flush(&b, out);
	ulma_sbuf_free(&b);
	free(index);
	free(order);
	free(newid);
	free(fn);
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
	ulma_profile_init(&h.lines);
	struct ulma_walk_sink sink = {&h, NULL, NULL, on_open, on_close, &h.t, &h.min_span, on_mark, &h.lines, NULL};
	err = ulma_export_walk(in, o, &w, &sink, res);
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
	ulma_walk_free(&w);
	return err;
}
