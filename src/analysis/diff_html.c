/* diff_html.c - the differential flame graph of two runs: one
 * self-contained HTML page (diff_html_page.c) around a JSON object.
 *
 * The two calling-context trees (calltree.h) are merged on the diff's rows
 * (diff.h): a merged node is a path of matched functions, with each run's
 * calls, self and total time there (0 where a run never had that path).
 * The page draws the tree with the widths of run B (or of A, chosen in
 * the page) and colours each frame by how much its total grew (red) or
 * shrank (blue); hovering a frame gives both runs' figures.
 *
 * Bounded whatever the traces: the nodes under 1/20000 of the larger
 * run's time are left out, at most MAX_NODES of them (the bar doubles
 * until they fit), none deeper than MAX_DEPTH; the table lists the
 * MAX_ROWS rows that changed most.  Names go in through ulma_sbuf_json,
 * which escapes '<', '>' and '&', and the page puts them on screen as
 * text only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../core/idmap.h"
#include "diff.h"
#include "diff_html_page.h"
#include "export_text.h"

#define MAX_NODES 30000u
#define MAX_DEPTH 400u
#define MAX_ROWS 300u
#define UNKNOWN_ROW UINT32_MAX /* a frame of a function that is no row (a damaged trace) */

struct mnode {
	uint32_t row;
	uint32_t parent;
	uint32_t first_child, next_sibling;
	uint32_t depth;
	uint64_t calls[2], self[2], total[2];
};

struct merged {
	struct mnode *n;
	uint32_t count, cap;
	struct ulma_idmap children; /* (parent << 32 | row) + 1 -> node */
};

/* The child of parent for row, made if new.  UINT32_MAX if out of memory. */
static uint32_t child_of(struct merged *m, uint32_t parent, uint32_t row)
{
	uint64_t key = ((uint64_t)parent << 32 | (row == UNKNOWN_ROW ? 0xfffffffeu : row)) + 1;
	uint32_t found;
	if (ulma_idmap_get(&m->children, key, &found))
		return found;
	if (m->count == m->cap) {
		uint32_t cap = m->cap ? m->cap * 2 : 1024;
		struct mnode *n = cap > m->cap ? realloc(m->n, (size_t)cap * sizeof(*n)) : NULL;
		if (!n)
			return UINT32_MAX;
		m->n = n;
		m->cap = cap;
	}
	uint32_t id = m->count++;
	struct mnode *x = &m->n[id];
	memset(x, 0, sizeof(*x));
	x->row = row;
	x->parent = parent;
	x->depth = m->n[parent].depth + 1;
	x->next_sibling = m->n[parent].first_child;
	m->n[parent].first_child = id;
	if (ulma_idmap_put(&m->children, key, id))
		return UINT32_MAX;
	return id;
}

/* Add run `side`'s tree (nodes come after their parents) into m. */
static int merge_side(struct merged *m, const struct ulma_calltree *t, const uint32_t *row_of, uint32_t nkeys,
		      int side)
{
	uint32_t *map = malloc((t->nnodes ? t->nnodes : 1) * sizeof(*map));
	if (!map)
		return -ENOMEM;
	map[ULMA_CALLTREE_ROOT] = 0;
	for (uint32_t i = 1; i < t->nnodes; i++) {
		const struct ulma_ct_node *nd = &t->nodes[i];
		uint32_t row = nd->key < nkeys ? row_of[nd->key] : UNKNOWN_ROW;
		uint32_t id = child_of(m, map[nd->parent], row == ULMA_DIFF_ABSENT ? UNKNOWN_ROW : row);
		if (id == UINT32_MAX) {
			free(map);
			return -ENOMEM;
		}
		map[i] = id;
		m->n[id].calls[side] += nd->calls;
		m->n[id].self[side] += nd->self_ns;
		m->n[id].total[side] += nd->total_ns;
	}
	for (uint32_t c = t->nodes[ULMA_CALLTREE_ROOT].first_child; c; c = t->nodes[c].next_sibling)
		m->n[0].total[side] += t->nodes[c].total_ns;
	free(map);
	return 0;
}

static uint64_t larger(const struct mnode *x)
{
	return x->total[0] > x->total[1] ? x->total[0] : x->total[1];
}

/* The nodes to write, breadth first (a parent before its children) into
 * order, new ids in newid; how many. */
static uint32_t prune(const struct merged *m, uint32_t *order, uint32_t *newid)
{
	uint64_t bar = larger(&m->n[0]) / 20000;
	uint32_t kept = 0;
	for (int pass = 0; pass < 64; pass++) {
		kept = 0;
		order[kept++] = 0;
		newid[0] = 0;
		for (uint32_t i = 0; i < kept && kept <= MAX_NODES; i++) {
			const struct mnode *p = &m->n[order[i]];
			if (p->depth >= MAX_DEPTH)
				continue;
			for (uint32_t c = p->first_child; c && kept <= MAX_NODES; c = m->n[c].next_sibling)
				if (larger(&m->n[c]) >= bar && larger(&m->n[c]) > 0) {
					newid[c] = kept;
					order[kept++] = c;
				}
		}
		if (kept <= MAX_NODES)
			break;
		bar = bar ? bar * 2 : 1;
	}
	return kept <= MAX_NODES ? kept : 1;
}

/* Figure k of a node: total, self, calls (k / 2) of run A, B (k % 2). */
static uint64_t figure(const struct mnode *x, int k)
{
	int side = k & 1;
	return k < 2 ? x->total[side] : k < 4 ? x->self[side] : x->calls[side];
}

/* funcs[fid[row]] for each row a node or the table names, in first use order. */
static uint32_t func_id(uint32_t *fid, uint32_t *used, uint32_t *nused, uint32_t row, uint32_t nrows)
{
	uint32_t r = row == UNKNOWN_ROW ? nrows : row;
	if (fid[r] == UINT32_MAX) {
		fid[r] = *nused;
		used[(*nused)++] = r;
	}
	return fid[r];
}

static void put_run(struct ulma_sbuf *b, const char *key, const char *path, const struct ulma_diff_side *s)
{
	ulma_sbuf_printf(b, "\"%s\":{\"trace\":", key);
	ulma_sbuf_json(b, path ? path : "");
	ulma_sbuf_printf(b, ",\"duration_ns\":%llu,\"events\":%llu,\"complete\":%s}", (unsigned long long)s->walk.duration_ns,
			 (unsigned long long)s->walk.events, s->walk.complete ? "true" : "false");
}

static int write_data(FILE *out, const struct ulma_diff *d, const struct merged *m, const char *name_a,
		      const char *name_b)
{
	struct ulma_sbuf b = {0};
	uint32_t *order = malloc((size_t)m->count * sizeof(*order));
	uint32_t *newid = malloc((size_t)m->count * sizeof(*newid));
	uint32_t *fid = malloc(((size_t)d->nrows + 1) * sizeof(*fid));
	uint32_t *used = malloc(((size_t)d->nrows + 1) * sizeof(*used));
	uint32_t *table = malloc(((size_t)d->nrows + 1) * sizeof(*table));
	if (!order || !newid || !fid || !used || !table) {
		free(order);
		free(newid);
		free(fid);
		free(used);
		free(table);
		return -ENOMEM;
	}
	memset(fid, 0xff, ((size_t)d->nrows + 1) * sizeof(*fid));
	uint32_t nused = 0, kept = prune(m, order, newid);
	/* the table: the most grown and the most shrunk rows (rows are in order of growth) */
	uint32_t ntable = 0;
	for (uint32_t i = 0; i < d->nrows && ntable < MAX_ROWS / 2; i++)
		table[ntable++] = i;
	for (uint32_t i = d->nrows; i > ntable && ntable < MAX_ROWS; i--)
		table[ntable++] = i - 1;
	ulma_sbuf_puts(&b, "{");
	put_run(&b, "a", name_a, d->a);
	ulma_sbuf_puts(&b, ",\n");
	put_run(&b, "b", name_b, d->b);
	ulma_sbuf_printf(&b, ",\n\"nodes_total\":%u,\"nodes_kept\":%u,\"max_depth\":%u,\"rows_total\":%u,\n\"tree\":{\"f\":[-1",
			 m->count, kept, MAX_DEPTH, d->nrows);
	for (uint32_t i = 1; i < kept; i++)
		ulma_sbuf_printf(&b, ",%u", func_id(fid, used, &nused, m->n[order[i]].row, d->nrows));
	ulma_sbuf_puts(&b, "],\n\"p\":[-1");
	for (uint32_t i = 1; i < kept; i++)
		ulma_sbuf_printf(&b, ",%u", newid[m->n[order[i]].parent]);
	static const char *const names[6] = {"ta", "tb", "sa", "sb", "ca", "cb"};
	for (int k = 0; k < 6; k++) {
		ulma_sbuf_printf(&b, "],\n\"%s\":[", names[k]);
		for (uint32_t i = 0; i < kept; i++) {
			if (i)
				ulma_sbuf_put(&b, ",", 1);
			ulma_sbuf_u64(&b, figure(&m->n[order[i]], k));
		}
	}
	ulma_sbuf_puts(&b, "]},\n\"rows\":[");
	for (uint32_t k = 0; k < ntable; k++) {
		const struct ulma_diff_row *r = &d->rows[table[k]];
		ulma_sbuf_printf(&b, "%s[%u,\"%s\",%llu,%llu,%llu,%llu,%llu,%llu]", k ? ",\n" : "\n",
				 func_id(fid, used, &nused, table[k], d->nrows),
				 r->a == ULMA_DIFF_ABSENT ? "b" : r->b == ULMA_DIFF_ABSENT ? "a" : "both",
				 (unsigned long long)r->fa.calls, (unsigned long long)r->fb.calls,
				 (unsigned long long)r->fa.total.wall_ns, (unsigned long long)r->fb.total.wall_ns,
				 (unsigned long long)r->fa.self.wall_ns, (unsigned long long)r->fb.self.wall_ns);
	}
	ulma_sbuf_puts(&b, "],\n\"funcs\":[");
	int err = ulma_sbuf_flush(&b, out);
	for (uint32_t k = 0; k < nused && !err; k++) {
		ulma_sbuf_puts(&b, k ? ",\n[" : "\n[");
		if (used[k] == d->nrows) {
			ulma_sbuf_puts(&b, "\"?\",\"?\",0,\"python\"]");
		} else {
			const struct ulma_walk_func *f = ulma_diff_func(d, &d->rows[used[k]]);
			ulma_sbuf_json(&b, f->name);
			ulma_sbuf_put(&b, ",", 1);
			ulma_sbuf_json(&b, f->file);
			ulma_sbuf_printf(&b, ",%u,\"%s\"]", f->line, ulma_walk_kind_name(f->kind));
		}
		if (b.len > 65536)
			err = ulma_sbuf_flush(&b, out);
	}
	ulma_sbuf_puts(&b, "]}");
	if (!err)
		err = ulma_sbuf_flush(&b, out);
	ulma_sbuf_free(&b);
	free(order);
	free(newid);
	free(fid);
	free(used);
	free(table);
	return err;
}

int ulma_diff_html(FILE *out, const struct ulma_diff *d, const char *name_a, const char *name_b)
{
	struct merged m = {0};
	m.n = calloc(1, sizeof(*m.n)); /* the root */
	if (!m.n)
		return -ENOMEM;
	m.count = m.cap = 1;
	int err = 0;
	if (d->a->has_tree)
		err = merge_side(&m, &d->a->tree, d->row_of_a, d->a->walk.nfuncs, 0);
	if (!err && d->b->has_tree)
		err = merge_side(&m, &d->b->tree, d->row_of_b, d->b->walk.nfuncs, 1);
	if (!err && fputs(ulma_diff_html_head, out) == EOF)
		err = -EIO;
	if (!err)
		err = write_data(out, d, &m, name_a, name_b);
	if (!err && fputs(ulma_diff_html_tail, out) == EOF)
		err = -EIO;
	free(m.n);
	ulma_idmap_free(&m.children);
	return err;
}
