/* export_folded.c - folded stacks, the input of flamegraph.pl, inferno and
 * speedscope's importer: one line per distinct stack,
 *
 *     outermost;...;innermost VALUE
 *
 * where VALUE is the stack's self time in whole microseconds (or, with
 * --counts, how many times it was entered).  Frames are `name (file:line)`
 * for Python functions, zones and native functions with debug information,
 * and `name` for C functions and other native ones.  The format has no
 * quoting, so a frame never holds ';', '%', a control character or a
 * Unicode line separator raw: their UTF-8 bytes are written %XX (e.g. %3B),
 * which keeps names readable and reversible (URL percent-decoding).
 * Invalid UTF-8 becomes U+FFFD; an empty name becomes "?".
 *
 * Microseconds are rounded on the running sum, so the values add up to the
 * total self time rounded once, not once per line; stacks whose share
 * rounds to zero are left out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "export.h"
#include "export_text.h"
#include "ulma/shm.h"

static void put_frame_text(struct ulma_sbuf *b, const char *s)
{
	struct ulma_sbuf u = {0};
	ulma_sbuf_utf8(&u, s);
	if (u.nomem) {
		b->nomem = true;
		ulma_sbuf_free(&u);
		return;
	}
	for (size_t i = 0; i < u.len; i++) {
		unsigned char c = (unsigned char)u.p[i], *q = (unsigned char *)u.p + i;
		/* U+0085, U+2028 and U+2029 end a line for some readers too */
		bool nl = (c == 0xc2 && q[1] == 0x85) || (c == 0xe2 && q[1] == 0x80 && (q[2] == 0xa8 || q[2] == 0xa9));
		if (nl) {
			for (int k = 0; k < (c == 0xc2 ? 2 : 3); k++)
				ulma_sbuf_printf(b, "%%%02X", q[k]);
			i += c == 0xc2 ? 1 : 2;
		} else if (c == ';' || c == '%' || c < 0x20 || c == 0x7f)
			ulma_sbuf_printf(b, "%%%02X", c);
		else
			ulma_sbuf_put(b, (const char *)&c, 1);
	}
	ulma_sbuf_free(&u);
}

/* The frame label of every function key. */
static char **make_labels(const struct ulma_walk *w)
{
	char **labels = calloc(w->nfuncs ? w->nfuncs : 1, sizeof(*labels));
	if (!labels)
		return NULL;
	for (uint32_t i = 0; i < w->nfuncs; i++) {
		const struct ulma_walk_func *f = &w->funcs[i];
		if (f->key != i || !f->name)
			continue;
		struct ulma_sbuf b = {0};
		put_frame_text(&b, *f->name ? f->name : "?");
		if (ulma_walk_func_located(f)) {
			ulma_sbuf_puts(&b, " (");
			put_frame_text(&b, f->file);
			ulma_sbuf_printf(&b, ":%u)", f->line);
		}
		if (b.nomem) {
			ulma_sbuf_free(&b);
			for (uint32_t j = 0; j < i; j++)
				free(labels[j]);
			free(labels);
			return NULL;
		}
		labels[i] = b.p;
	}
	return labels;
}

static int write_folded(FILE *out, const struct ulma_walk *w, const struct ulma_calltree *t, bool counts)
{
	char **labels = make_labels(w);
	size_t *cut = NULL; /* path length before each depth's frame */
	uint32_t cut_cap = 0;
	struct ulma_sbuf path = {0}, line = {0};
	uint64_t cum_ns = 0, written_us = 0;
	int err = labels ? 0 : -ENOMEM;
	uint32_t n = t->nodes[ULMA_CALLTREE_ROOT].first_child;
	while (n && !err) {
		const struct ulma_ct_node *nd = &t->nodes[n];
		if (nd->depth + 1 >= cut_cap) {
			uint32_t ncap = cut_cap ? cut_cap * 2 : 64;
			while (ncap <= nd->depth + 1)
				ncap *= 2;
			size_t *c = realloc(cut, ncap * sizeof(*c));
			if (!c) {
				err = -ENOMEM;
				break;
			}
			cut = c;
			cut_cap = ncap;
		}
		/* the path of the parent is the current path up to this depth */
		path.len = nd->depth > 1 ? cut[nd->depth] : 0;
		if (path.p)
			path.p[path.len] = 0;
		if (nd->depth > 1)
			ulma_sbuf_put(&path, ";", 1);
		ulma_sbuf_puts(&path, labels[nd->key] ? labels[nd->key] : "?");
		uint64_t value;
		if (counts) {
			value = nd->calls;
		} else {
			cum_ns += nd->self_ns;
			uint64_t us = (cum_ns + 500) / 1000;
			value = us - written_us;
			written_us = us;
		}
		if (value) {
			ulma_sbuf_put(&line, path.p, path.len);
			ulma_sbuf_printf(&line, " %llu\n", (unsigned long long)value);
			if (line.len >= 65536)
				err = ulma_sbuf_flush(&line, out);
		}
		if (path.nomem)
			err = -ENOMEM;
		/* preorder: down, else the next sibling of the nearest ancestor having one */
		if (nd->first_child) {
			cut[nd->depth + 1] = path.len;
			n = nd->first_child;
			continue;
		}
		while (n && !t->nodes[n].next_sibling)
			n = t->nodes[n].parent;
		if (n)
			n = t->nodes[n].next_sibling;
	}
	if (!err)
		err = ulma_sbuf_flush(&line, out);
	if (labels)
		for (uint32_t i = 0; i < w->nfuncs; i++)
			free(labels[i]);
	free(labels);
	free(cut);
	ulma_sbuf_free(&path);
	ulma_sbuf_free(&line);
	return err;
}

int ulma_export_folded(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
		       struct ulma_export_result *res)
{
	struct ulma_walk w;
	struct ulma_calltree t;
	(void)dir;
	int err = ulma_calltree_init(&t);
	if (err)
		return err;
	struct ulma_walk_sink sink = ulma_calltree_sink_template;
	sink.ctx = &t;
	sink.tree = &t;
	err = ulma_export_walk(in, o, &w, &sink, res);
	if (!err)
		err = write_folded(out, &w, &t, o->counts);
	ulma_calltree_free(&t);
	ulma_walk_free(&w);
	return err;
}
