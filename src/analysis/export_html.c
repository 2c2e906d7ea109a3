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
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "export.h"
#include "export_html_page.h"
#include "export_text.h"
#include "ulma/shm.h"

#define MAX_NODES 30000u
#define MAX_SPANS 150000u

struct span {
	uint32_t key;
	uint32_t depth;
	uint64_t start, end;
};

struct lane {
	struct span *s;
	uint32_t n, cap;
};

struct html {
	struct ulma_calltree t;
	struct lane *lanes;
	uint32_t nlanes;
	uint64_t nspans;
	uint64_t min_span; /* frames shorter than this are not on the timeline */
};

static int add_span(struct html *h, uint32_t thread, const struct ulma_walk *w, const struct ulma_walk_frame *f)
{
	uint64_t dur = f->end_ns - f->start_ns;
	if (dur < h->min_span)
		return 0;
	if (thread >= h->nlanes) {
		uint32_t n = thread + 1 > h->nlanes * 2 ? thread + 1 : h->nlanes * 2;
		struct lane *l = realloc(h->lanes, (size_t)n * sizeof(*l));
		if (!l)
			return -ENOMEM;
		memset(l + h->nlanes, 0, (size_t)(n - h->nlanes) * sizeof(*l));
		h->lanes = l;
		h->nlanes = n;
	}
	struct lane *l = &h->lanes[thread];
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
		ulma_sbuf_printf(&b, ",%u,\"%s\",%llu,%llu,%llu]", f->line, ulma_def_is_c(f->kind) ? "c" : "py",
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
		ulma_sbuf_puts(&b, "]}");
		err = ulma_sbuf_flush(&b, out);
	}
	ulma_sbuf_puts(&b, "]}");
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
	struct ulma_walk_sink sink = {&h, NULL, NULL, on_open, on_close, &h.t, &h.min_span};
	err = ulma_export_walk(in, o, &w, &sink, res);
	if (!err && fputs(ulma_html_head, out) == EOF)
		err = -EIO;
	if (!err)
		err = write_data(out, &w, &h);
	if (!err && fputs(ulma_html_tail, out) == EOF)
		err = -EIO;
	for (uint32_t i = 0; i < h.nlanes; i++)
		free(h.lanes[i].s);
	free(h.lanes);
	ulma_calltree_free(&h.t);
	ulma_walk_free(&w);
	return err;
}
