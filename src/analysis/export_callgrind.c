/* export_callgrind.c - the callgrind profile format (valgrind's
 * docs/callgrind-format), read by KCachegrind, QCachegrind and
 * callgrind_annotate.
 *
 * One event type, "ns": a function's self time sits on a cost line at its
 * first line; each call edge is a calls= line (count, callee's first line)
 * followed by the edge's inclusive cost.  Tools derive a called function's
 * inclusive cost from the calls into it (callgrind_annotate sums them), so
 * an edge carries the callee's time only where the callee was not already
 * active on the thread (callgraph.h's incl_ns): recursion is then counted
 * once, as ulma's total time counts it.  But KCachegrind adds a function's
 * self cost to the calls out of it, and finds cycles only through calls
 * that cost something: so a function re-entered through another one is
 * written, as callgrind's --separate-recs writes it, as another function
 * per level, `f'2`, `f'3` (up to LEVELS, which takes the deeper ones), and
 * the call into it carries its whole time.  Only direct recursion (f
 * calling f), which the tools leave out of inclusive costs, is a call of
 * 0 ns.  The outermost frames of each
 * thread are calls from one synthetic function, "(all threads)" in file
 * "~", so that a function that is sometimes a thread's root and sometimes
 * called (builtins.exec) keeps all its time.
 *
 * Files and functions use callgrind's name compression ("(id) name" once,
 * "(id)" after).  Names are free text to the end of the line, so control
 * characters become '?' and invalid UTF-8 U+FFFD; a name shared by two
 * different functions gets " [file:line]" appended so that tools, which
 * identify functions by name, keep them apart.  C functions have file "~".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "callgraph.h"
#include "export.h"
#include "export_text.h"
#include "ulma/shm.h"

#define LEVELS 8 /* recursion levels written as functions of their own (callgraph.h) */

struct cg_names {
	char **base;        /* per key: the cleaned name, NULL if never called */
	char **fn;          /* per key: the name written (base, or base [file:line]) */
	uint32_t *file_id;  /* per key: compressed id of its file */
	char **files;       /* per file id - 1 */
	uint32_t nfiles;
	bool *fn_written;   /* name already defined once */
	bool *file_written;
	uint32_t nkeys;     /* entries of base, fn, file_id, fn_written */
};

static void put_clean(struct ulma_sbuf *b, const char *s)
{
	struct ulma_sbuf u = {0};
	ulma_sbuf_utf8(&u, *s ? s : "?");
	if (u.nomem) {
		b->nomem = true;
		ulma_sbuf_free(&u);
		return;
	}
	for (size_t i = 0; i < u.len; i++) {
		char c = u.p[i];
		if ((unsigned char)c < 0x20 || c == 0x7f)
			c = '?';
		ulma_sbuf_put(b, &c, 1);
	}
	ulma_sbuf_free(&u);
}

static char *clean(const char *s)
{
	struct ulma_sbuf b = {0};
	put_clean(&b, s);
	if (b.nomem) {
		ulma_sbuf_free(&b);
		return NULL;
	}
	return b.p;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The compressed id of file path (ids count from 1 in order of first use). */
static int file_id_of(struct cg_names *n, const char *path, uint32_t *id)
{
	char *c = clean(path);
	if (!c)
		return -ENOMEM;
	for (uint32_t i = 0; i < n->nfiles; i++)
		if (strcmp(n->files[i], c) == 0) {
			free(c);
			*id = i + 1;
			return 0;
		}
	n->files[n->nfiles++] = c;
	*id = n->nfiles;
	return 0;
}

/* Names for the keys that were called; shared names get their location. */
/* Keys of g: the functions' and their recursion levels'. */
static uint32_t nkeys(const struct ulma_walk *w, const struct ulma_callgraph *g)
{
	uint32_t n = g->nbase + g->nlevel_keys;
	return n > w->nfuncs ? n : w->nfuncs;
}

/* The function key k names (at *level), or NULL for none that was called. */
static const struct ulma_walk_func *func_of(const struct ulma_walk *w, const struct ulma_callgraph *g, uint32_t k,
					    uint32_t *level)
{
	uint32_t base = ulma_callgraph_level(g, k, level);
	if (base >= w->nfuncs || w->funcs[base].key != base || k >= g->nfuncs || g->funcs[k].calls == 0)
		return NULL;
	return &w->funcs[base];
}

static int make_names(const struct ulma_walk *w, const struct ulma_callgraph *g, struct cg_names *n)
{
	uint32_t nf = nkeys(w, g) ? nkeys(w, g) : 1, used = 0;
	int err = 0;
	n->nkeys = nf;
	n->base = calloc(nf, sizeof(*n->base));
	n->fn = calloc(nf, sizeof(*n->fn));
	n->file_id = calloc(nf, sizeof(*n->file_id));
	n->files = calloc(nf + 1, sizeof(*n->files)); /* one more for write_roots' "~" */
	n->fn_written = calloc(nf, sizeof(*n->fn_written));
	n->file_written = calloc(nf + 2, sizeof(*n->file_written));
	char **sorted = calloc(nf, sizeof(*sorted));
	if (!n->base || !n->fn || !n->file_id || !n->files || !n->fn_written || !n->file_written || !sorted)
		err = -ENOMEM;
	for (uint32_t k = 0; k < nf && !err; k++) {
		uint32_t level;
		const struct ulma_walk_func *f = func_of(w, g, k, &level);
		if (!f)
			continue;
		if (!(n->base[k] = clean(f->name)))
			err = -ENOMEM;
		else
			err = file_id_of(n, f->file, &n->file_id[k]);
		n->fn[k] = n->base[k];
		if (level == 1) /* a function's levels share its name */
			sorted[used++] = n->base[k];
	}
	if (!err)
		qsort(sorted, used, sizeof(*sorted), cmp_str);
	for (uint32_t k = 0; k < nf && !err; k++) {
		if (!n->base[k])
			continue;
		char **hit = bsearch(&n->base[k], sorted, used, sizeof(*sorted), cmp_str);
		bool shared = hit && ((hit > sorted && strcmp(hit[-1], n->base[k]) == 0) ||
				      (hit + 1 < sorted + used && strcmp(hit[1], n->base[k]) == 0));
		uint32_t level;
		const struct ulma_walk_func *f = func_of(w, g, k, &level);
		if (!shared && level == 1)
			continue;
		struct ulma_sbuf b = {0};
		ulma_sbuf_puts(&b, n->base[k]);
		if (shared)
			ulma_sbuf_printf(&b, " [%s:%u]", n->files[n->file_id[k] - 1], f->line);
		if (level > 1)
			ulma_sbuf_printf(&b, "'%u", level);
		if (b.nomem)
			err = -ENOMEM;
		n->fn[k] = b.p;
	}
	free(sorted);
	return err;
}

static void free_names(struct cg_names *n)
{
	for (uint32_t k = 0; n->fn && n->base && k < n->nkeys; k++) {
		if (n->fn[k] != n->base[k])
			free(n->fn[k]);
		free(n->base[k]);
	}
	for (uint32_t i = 0; n->files && i < n->nfiles; i++)
		free(n->files[i]);
	free(n->base);
	free(n->fn);
	free(n->file_id);
	free(n->files);
	free(n->fn_written);
	free(n->file_written);
}

/* "fl=(id) name" the first time, "fl=(id)" after. */
static void put_file(struct ulma_sbuf *b, struct cg_names *n, const char *tag, uint32_t id)
{
	if (n->file_written[id]) {
		ulma_sbuf_printf(b, "%s=(%u)\n", tag, id);
	} else {
		ulma_sbuf_printf(b, "%s=(%u) %s\n", tag, id, n->files[id - 1]);
		n->file_written[id] = true;
	}
}

static void put_fn(struct ulma_sbuf *b, struct cg_names *n, const char *tag, uint32_t key)
{
	if (n->fn_written[key]) {
		ulma_sbuf_printf(b, "%s=(%u)\n", tag, key + 1);
	} else {
		ulma_sbuf_printf(b, "%s=(%u) %s\n", tag, key + 1, n->fn[key]);
		n->fn_written[key] = true;
	}
}

/* The synthetic caller of every thread's outermost frames. */
static int write_roots(struct ulma_sbuf *b, const struct ulma_walk *w, const struct ulma_callgraph *g,
		       struct cg_names *n)
{
	uint32_t tilde;
	int err = file_id_of(n, "~", &tilde);
	if (err)
		return err;
	ulma_sbuf_puts(b, "\n");
	put_file(b, n, "fl", tilde);
	ulma_sbuf_printf(b, "fn=(%u) (all threads)\n0 0\n", n->nkeys + 1);
	for (uint32_t k = 0; k < n->nkeys && k < g->nfuncs; k++) {
		const struct ulma_cg_func *cf = &g->funcs[k];
		uint32_t level;
		const struct ulma_walk_func *f = func_of(w, g, k, &level);
		if (!f || !n->fn[k] || cf->root_calls == 0)
			continue;
		put_file(b, n, "cfi", n->file_id[k]);
		put_fn(b, n, "cfn", k);
		ulma_sbuf_printf(b, "calls=%llu %u\n0 %llu\n", (unsigned long long)cf->root_calls, f->line,
				 (unsigned long long)cf->root_ns);
	}
	return 0;
}

static int write_callgrind(FILE *out, const struct ulma_walk *w, const struct ulma_callgraph *g)
{
	struct cg_names n = {0};
	struct ulma_sbuf b = {0};
	int err = make_names(w, g, &n);
	uint64_t total = 0;
	uint32_t level;
	for (uint32_t k = 0; k < nkeys(w, g) && k < g->nfuncs; k++)
		if (func_of(w, g, k, &level))
			total += g->funcs[k].self_ns;
	char note[ULMA_WALK_NOTE_MAX];
	ulma_walk_times_note(w, note, sizeof(note));
	ulma_sbuf_printf(&b, "# callgrind format\nversion: 1\ncreator: ulma export\ndesc: Times: %s\ncmd: ", note);
	put_clean(&b, w->command && *w->command ? w->command : "?");
	ulma_sbuf_printf(&b, "\npositions: line\nevents: ns\nsummary: %llu\n", (unsigned long long)total);
	if (!err)
		err = write_roots(&b, w, g, &n);
	for (uint32_t k = 0; k < n.nkeys && k < g->nfuncs && !err; k++) {
		const struct ulma_cg_func *cf = &g->funcs[k];
		const struct ulma_walk_func *f = func_of(w, g, k, &level);
		if (!n.fn || !n.fn[k] || !f)
			continue;
		ulma_sbuf_puts(&b, "\n");
		put_file(&b, &n, "fl", n.file_id[k]);
		put_fn(&b, &n, "fn", k);
		ulma_sbuf_printf(&b, "%u %llu\n", f->line, (unsigned long long)cf->self_ns);
		for (uint32_t e = cf->first_out; e != ULMA_WALK_NONE; e = g->edges[e].next_out) {
			const struct ulma_cg_edge *ed = &g->edges[e];
			put_file(&b, &n, "cfi", n.file_id[ed->callee]);
			put_fn(&b, &n, "cfn", ed->callee);
			uint32_t callee_level;
			ulma_sbuf_printf(&b, "calls=%llu %u\n%u %llu\n", (unsigned long long)ed->calls,
					 func_of(w, g, ed->callee, &callee_level)->line, f->line,
					 (unsigned long long)ed->incl_ns);
		}
		if (b.len >= 65536)
			err = ulma_sbuf_flush(&b, out);
	}
	ulma_sbuf_printf(&b, "\ntotals: %llu\n", (unsigned long long)total);
	if (!err)
		err = ulma_sbuf_flush(&b, out);
	ulma_sbuf_free(&b);
	free_names(&n);
	return err;
}

int ulma_export_callgrind(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
			  struct ulma_export_result *res)
{
	(void)dir;
	return ulma_callgraph_export(in, o, out, res, LEVELS, write_callgrind);
}
