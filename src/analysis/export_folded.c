/* export_folded.c - folded stacks, the input of flamegraph.pl, inferno and
 * speedscope's importer: one line per distinct stack,
 *
 *     outermost;...;innermost VALUE
 *
 * where VALUE is the stack's self time in whole microseconds (or, with
 * --counts, how many times it was entered).  Frames are `name (file:line)`
 * for Python functions, zones and native functions with debug information,
 * and `name` for C functions and other native ones; the file is short
 * (short_path.h: relative to the program's directory, `<stdlib>/` and
 * `<site>/` for the standard library and installed packages).
 *
 * Direct recursion is folded (calltree.h): f calling f is one frame f,
 * holding the calls and self time of all of them, so a recursion 100,000
 * deep is one line, not 100,000 lines of up to 100,000 frames.  Mutual
 * recursion still nests; an output that would pass MAX_BYTES is refused
 * before anything is written, with the size it would reach.  The format has no
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
#include "short_path.h"
#include "ulma/shm.h"

#define MAX_BYTES (UINT64_C(1) << 30)

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
static char **make_labels(const struct ulma_walk *w, const char *program_dir)
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
			const char *prefix, *tail = ulma_short_path(program_dir, f->file, &prefix);
			ulma_sbuf_puts(&b, " (");
			ulma_sbuf_puts(&b, prefix);
			put_frame_text(&b, tail);
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

static void human_bytes(uint64_t b, char *buf, size_t cap)
{
	static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)b;
	int u = 0;
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

/* 0, or -EFBIG with the reason in res when the lines would pass MAX_BYTES
 * (each node's stack and a value of up to 20 digits: an upper bound). */
static int check_size(const struct ulma_calltree *t, char **labels, struct ulma_export_result *res)
{
	uint64_t *len = malloc((size_t)t->nnodes * sizeof(*len)), bytes = 0;
	uint32_t deepest = 0;
	if (!len)
		return -ENOMEM;
	len[ULMA_CALLTREE_ROOT] = 0;
	for (uint32_t n = 1; n < t->nnodes; n++) { /* parents come first */
		const struct ulma_ct_node *nd = &t->nodes[n];
		const char *label = labels[nd->key] ? labels[nd->key] : "?";
		len[n] = len[nd->parent] + (nd->parent != ULMA_CALLTREE_ROOT) + strlen(label);
		if (nd->self_ns || nd->calls)
			bytes += len[n] + 22;
		if (nd->depth > deepest)
			deepest = nd->depth;
	}
	free(len);
	if (bytes <= MAX_BYTES)
		return 0;
	char size[32], max[32];
	human_bytes(bytes, size, sizeof(size));
	human_bytes(MAX_BYTES, max, sizeof(max));
	snprintf(res->why, sizeof(res->why),
		 "folded stacks would take up to %s (%u frames deep with direct recursion folded), over the %s limit:"
		 " narrow it with --min-duration, --from/--to, --thread or --exclude",
		 size, deepest, max);
	return -EFBIG;
}

static int write_folded(FILE *out, const struct ulma_walk *w, const struct ulma_calltree *t, bool counts,
			struct ulma_export_result *res)
{
	char dir[4096];
	ulma_short_path_program(w, dir, sizeof(dir));
	char **labels = make_labels(w, dir);
	size_t *cut = NULL; /* path length before each depth's frame */
	uint32_t cut_cap = 0;
	struct ulma_sbuf path = {0}, line = {0};
	uint64_t cum_ns = 0, written_us = 0;
	int err = labels ? check_size(t, labels, res) : -ENOMEM;
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
	struct ulma_calltree t, folded;
	(void)dir;
	int err = ulma_calltree_init(&t);
	if (err)
		return err;
	err = ulma_calltree_init(&folded);
	if (err) {
		ulma_calltree_free(&t);
		return err;
	}
	struct ulma_walk_sink sink = ulma_calltree_sink_template;
	sink.ctx = &t;
	sink.tree = &t;
	err = ulma_export_walk(in, o, &w, &sink, res);
	if (!err)
		err = ulma_calltree_fold_recursion(&folded, &t);
	ulma_calltree_free(&t);
	if (!err)
		err = write_folded(out, &w, &folded, o->counts, res);
	ulma_calltree_free(&folded);
	ulma_walk_free(&w);
	return err;
}
