/* export_pstats.c - the file `pstats.Stats(path)` loads, as cProfile
 * writes it with `dump_stats`.
 *
 * That file is one value in CPython's marshal format: a dict mapping
 * (file, line, name) to (cc, nc, tt, ct, callers), where callers maps each
 * caller's key to (nc, cc, tt, ct) -- the same four figures for that edge,
 * in the order cProfile's snapshot_stats builds them.  nc counts calls, cc
 * the primitive (non-recursive) ones, tt is self time and ct cumulative
 * time, in seconds.  C functions get cProfile's style of key:
 * ('~', 0, '<built-in method NAME>').
 *
 * The marshal subset written here (Python/marshal.c): '{' dict ended by
 * '0', ')' small tuple, 'i' int32, 'l' long in 15-bit digits, 'g' binary
 * double, 'u' UTF-8 string; all little-endian.  Every version of marshal
 * from Python 3.4 reads it.  The body streams to the output one function
 * at a time.
 */
#include <errno.h>
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

/* The (file, line, name) key of function f. */
static void m_key(struct ulma_sbuf *b, const struct ulma_walk_func *f)
{
	m_tuple(b, 3);
	if (ulma_def_is_c(f->kind)) {
		m_str(b, "~");
		m_int(b, 0);
		struct ulma_sbuf label = {0};
		ulma_sbuf_printf(&label, "<built-in method %s>", f->name);
		if (label.nomem)
			b->nomem = true;
		else
			m_str(b, label.p);
		ulma_sbuf_free(&label);
	} else {
		m_str(b, f->file);
		m_int(b, f->line);
		m_str(b, f->name);
	}
}

static double seconds(uint64_t ns)
{
	return (double)ns / 1e9;
}

static int write_stats(FILE *out, const struct ulma_walk *w, const struct ulma_callgraph *g)
{
	struct ulma_sbuf b = {0};
	int err = 0;
	ulma_sbuf_put(&b, "{", 1);
	for (uint32_t k = 0; k < w->nfuncs && k < g->nfuncs && !err; k++) {
		const struct ulma_cg_func *cf = &g->funcs[k];
		if (w->funcs[k].key != k || cf->calls == 0)
			continue;
		m_key(&b, &w->funcs[k]);
		m_tuple(&b, 5);
		m_int(&b, cf->calls - cf->reccalls);
		m_int(&b, cf->calls);
		m_float(&b, seconds(cf->self_ns));
		m_float(&b, seconds(cf->total_ns));
		ulma_sbuf_put(&b, "{", 1);
		for (uint32_t e = cf->first_in; e != ULMA_WALK_NONE; e = g->edges[e].next_in) {
			const struct ulma_cg_edge *ed = &g->edges[e];
			m_key(&b, &w->funcs[ed->caller]);
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
	return ulma_callgraph_export(in, o, out, res, write_stats);
}
