/* export_pstats.c - the file `pstats.Stats(path)` loads, as cProfile
 * writes it with `dump_stats`.
 *
 * That file is one value in CPython's marshal format: a dict mapping
 * (file, line, name) to (cc, nc, tt, ct, callers), where callers maps each
 * caller's key to (nc, cc, tt, ct) -- the same four figures for that edge,
 * in the order cProfile's snapshot_stats builds them.  nc counts calls, cc
 * the primitive (non-recursive) ones, tt is self time and ct cumulative
 * time, in seconds.
 *
 * Keys are cProfile's, so that pstats merges a function's rows from ulma
 * and from cProfile: a Python function is (file, line, co_name), and a C
 * function ('~', 0, label) with the label cProfile's normalizeUserObj
 * (Modules/_lsprof.c, the same in 3.9-3.13) gives its kind of callable
 * (pstats_name).  A native function or a zone is (file, line, name) with
 * its whole name, and the file and line of its definition: where debug
 * information or the zone's macro says, else ('~', 0) as for C functions,
 * which pstats prints as the bare name.  Functions with the same key are one function here, as
 * pstats would merge them: their frames are counted under one key, so
 * recursion between them is recursion.
 *
 * The marshal subset written here (Python/marshal.c): '{' dict ended by
 * '0', ')' small tuple, 'i' int32, 'l' long in 15-bit digits, 'g' binary
 * double, 'u' UTF-8 string; all little-endian.  Every version of marshal
 * from Python 3.4 reads it.  The body streams to the output one function
 * at a time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "callgraph.h"
#include "export.h"
#include "export_text.h"
#include "ulma/shm.h"

static void put_u32(struct ulma_sbuf *b, uint32_t v)
{
	char le[4] = {(char)(v & 0xff), (char)(v >> 8 & 0xff), (char)(v >> 16 & 0xff), (char)(v >> 24)};
	ulma_sbuf_put(b, le, 4);
}

static void m_int(struct ulma_sbuf *b, uint64_t v)
{
	if (v <= INT32_MAX) {
		ulma_sbuf_put(b, "i", 1);
		put_u32(b, (uint32_t)v);
		return;
	}
	/* TYPE_LONG: count of 15-bit digits, then the digits, least first */
	uint32_t n = 0;
	for (uint64_t x = v; x; x >>= 15)
		n++;
	ulma_sbuf_put(b, "l", 1);
	put_u32(b, n);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t d = (uint32_t)(v >> (15 * i)) & 0x7fff;
		char le[2] = {(char)(d & 0xff), (char)(d >> 8)};
		ulma_sbuf_put(b, le, 2);
	}
}

static void m_float(struct ulma_sbuf *b, double d)
{
	uint64_t bits;
	char le[8];
	memcpy(&bits, &d, sizeof(bits));
	for (int i = 0; i < 8; i++)
		le[i] = (char)(bits >> (8 * i) & 0xff);
	ulma_sbuf_put(b, "g", 1);
	ulma_sbuf_put(b, le, 8);
}

static void m_str(struct ulma_sbuf *b, const char *s)
{
	struct ulma_sbuf u = {0};
	ulma_sbuf_utf8(&u, s);
	if (u.nomem || u.len > INT32_MAX) {
		b->nomem = true;
		ulma_sbuf_free(&u);
		return;
	}
	ulma_sbuf_put(b, "u", 1);
	put_u32(b, (uint32_t)u.len);
	ulma_sbuf_put(b, u.p ? u.p : "", u.len);
	ulma_sbuf_free(&u);
}

static void m_tuple(struct ulma_sbuf *b, uint8_t n)
{
	char h[2] = {')', (char)n};
	ulma_sbuf_put(b, h, 2);
}

/* The name in cProfile's key of function f.  ulma's names are
 * "owner.method" for C functions and qualified names for Python ones, so
 * the method (co_name) is what follows the last dot. */
static void pstats_name(struct ulma_sbuf *b, const struct ulma_walk_func *f)
{
	const char *dot = strrchr(f->name, '.');
	const char *method = dot ? dot + 1 : f->name;
	switch (f->kind) {
	case ULMA_DEF_C:
		ulma_sbuf_printf(b, "<built-in method %s>", f->name);
		break;
	case ULMA_DEF_C_METHOD:
		if (dot)
			ulma_sbuf_printf(b, "<method '%s' of '%.*s' objects>", method, (int)(dot - f->name), f->name);
		else
			ulma_sbuf_printf(b, "<built-in method %s>", method);
		break;
	case ULMA_DEF_C_CLASSMETHOD:
		ulma_sbuf_printf(b, "<built-in method %s>", method);
		break;
	case ULMA_DEF_C_UNBOUND:
		ulma_sbuf_printf(b, "<%s>", strncmp(f->name, "builtins.", 9) == 0 ? f->name + 9 : f->name);
		break;
	case ULMA_DEF_NATIVE: /* the whole name: a dot in it is no qualifier ("leaf.constprop.0") */
	case ULMA_DEF_ZONE:
		ulma_sbuf_puts(b, f->name);
		break;
	default:
		ulma_sbuf_puts(b, method);
		break;
	}
}

/* Functions merged on their pstats key: the callgraph's keys.  names[k]
 * is the pstats name of function k where k is the first with its key. */
struct pstats_keys {
	struct ulma_calltree t; /* fed by the walk; the call graph is made from it */
	struct ulma_callgraph g;
	uint32_t *keys;
	char **names;
	uint32_t cap;
	struct ulma_idmap first; /* hash of file, line and pstats name -> first function */
};

static uint64_t key_hash(const char *file, uint32_t line, const char *name)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	h = (h ^ line) * UINT64_C(0x100000001b3);
	for (const char *p = file; *p; p++)
		h = (h ^ (unsigned char)*p) * UINT64_C(0x100000001b3);
	h = (h ^ 0xff) * UINT64_C(0x100000001b3);
	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * UINT64_C(0x100000001b3);
	return h ? h : 1;
}

static int on_func(void *ctx, const struct ulma_walk *w, uint32_t func)
{
	struct pstats_keys *pk = ctx;
	const struct ulma_walk_func *f = &w->funcs[func];
	if (func >= pk->cap) {
		uint32_t ncap = pk->cap ? pk->cap : 64;
		while (ncap <= func)
			ncap *= 2;
		uint32_t *keys = realloc(pk->keys, (size_t)ncap * sizeof(*keys));
		if (keys) {
			pk->keys = keys;
			pk->g.keys = keys;
		}
		char **names = realloc(pk->names, (size_t)ncap * sizeof(*names));
		if (names)
			pk->names = names;
		if (!keys || !names)
			return -ENOMEM;
		memset(pk->names + pk->cap, 0, (size_t)(ncap - pk->cap) * sizeof(*names));
		pk->cap = ncap;
	}
	struct ulma_sbuf name = {0};
	pstats_name(&name, f);
	if (name.nomem) {
		ulma_sbuf_free(&name);
		return -ENOMEM;
	}
	const char *n = name.p ? name.p : "";
	/* probe past hash collisions: different keys never share a slot */
	for (uint64_t h = key_hash(f->file, f->line, n);; h = h + 1 ? h + 1 : 1) {
		uint32_t first;
		if (!ulma_idmap_get(&pk->first, h, &first)) {
			pk->keys[func] = func;
			pk->names[func] = name.p ? name.p : strdup("");
			return pk->names[func] ? ulma_idmap_put(&pk->first, h, func) : -ENOMEM;
		}
		const struct ulma_walk_func *o = &w->funcs[first];
		if (o->line == f->line && strcmp(o->file, f->file) == 0 && strcmp(pk->names[first], n) == 0) {
			pk->keys[func] = first;
			ulma_sbuf_free(&name);
			return 0;
		}
	}
}

static int on_open(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	return ulma_calltree_open(&((struct pstats_keys *)ctx)->t, w, thread, f);
}

static int on_close(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	return ulma_calltree_close(&((struct pstats_keys *)ctx)->t, w, thread, f);
}

/* The (file, line, name) key of function k, the first with its key. */
static void m_key(struct ulma_sbuf *b, const struct ulma_walk *w, const struct pstats_keys *pk, uint32_t k)
{
	m_tuple(b, 3);
	m_str(b, w->funcs[k].file);
	m_int(b, w->funcs[k].line);
	m_str(b, pk->names[k]);
}

static double seconds(uint64_t ns)
{
	return (double)ns / 1e9;
}

static int write_stats(FILE *out, const struct ulma_walk *w, const struct pstats_keys *pk)
{
	const struct ulma_callgraph *g = &pk->g;
	struct ulma_sbuf b = {0};
	int err = 0;
	ulma_sbuf_put(&b, "{", 1);
	for (uint32_t k = 0; k < pk->cap && k < g->nfuncs && !err; k++) {
		const struct ulma_cg_func *cf = &g->funcs[k];
		if (!pk->names[k] || cf->calls == 0)
			continue;
		m_key(&b, w, pk, k);
		m_tuple(&b, 5);
		m_int(&b, cf->calls - cf->reccalls);
		m_int(&b, cf->calls);
		m_float(&b, seconds(cf->self_ns));
		m_float(&b, seconds(cf->total_ns));
		ulma_sbuf_put(&b, "{", 1);
		for (uint32_t e = cf->first_in; e != ULMA_WALK_NONE; e = g->edges[e].next_in) {
			const struct ulma_cg_edge *ed = &g->edges[e];
			m_key(&b, w, pk, ed->caller);
			m_tuple(&b, 4);
			m_int(&b, ed->calls);
			m_int(&b, ed->calls - ed->reccalls);
			m_float(&b, seconds(ed->self_ns));
			m_float(&b, seconds(ed->total_ns));
		}
		ulma_sbuf_put(&b, "0", 1);
		err = ulma_sbuf_flush(&b, out);
	}
	ulma_sbuf_put(&b, "0", 1);
	if (!err)
		err = ulma_sbuf_flush(&b, out);
	ulma_sbuf_free(&b);
	return err;
}

int ulma_export_pstats(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
		       struct ulma_export_result *res)
{
	(void)dir;
	struct pstats_keys pk = {0};
	struct ulma_walk w;
	ulma_callgraph_init(&pk.g);
	int err = ulma_calltree_init(&pk.t);
	if (err)
		return err;
	const struct ulma_walk_sink sink = {&pk, on_func, NULL, on_open, on_close, &pk.t, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
	err = ulma_export_walk(in, o, &w, &sink, res);
	if (!err)
		err = ulma_callgraph_from_tree(&pk.g, &w, &pk.t);
	if (!err)
		err = write_stats(out, &w, &pk);
	for (uint32_t k = 0; k < pk.cap; k++)
		free(pk.names[k]);
	free(pk.names);
	free(pk.keys);
	ulma_idmap_free(&pk.first);
	ulma_calltree_free(&pk.t);
	ulma_callgraph_free(&pk.g);
	ulma_walk_free(&w);
	return err;
}
