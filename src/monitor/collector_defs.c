/* collector_defs.c - the collector's function table: definitions read from
 * the session's definition area, each mapped to a dense index shared by
 * every process that defines the same function (kind, name, file, line),
 * declared to the profile and, under id index + 1, to the trace.
 *
 * A definition entry is reserved with a fetch-add and completed later, so a
 * process killed in between leaves a hole that would hide every later
 * definition: an entry incomplete for DEF_HOLE_NS (or at once when final)
 * is skipped and kept as a hole, re-read on every scan in case its slow
 * writer completes it after all (docs/design.md).  A complete entry that
 * is malformed (a writer that scribbled on the area) is refused: counted
 * in c->refused and skipped at once, as a hole is.
 */
#include "collector_defs.h"
#include "collector_lines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../core/clock.h"
#include "collector_native.h"

#define DENSE_IDS (1u << 24)      /* session ids below this resolve through an array */
#define DEF_HOLE_NS 100000000u    /* an entry incomplete this long is skipped (and re-read later) */

static int set_error(struct ulma_collector *c, int err)
{
	if (err && !c->error)
		c->error = err;
	return err;
}

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * UINT64_C(0x100000001b3);
	return h ? h : 1;
}

/* Trace file id for a path, defining it on first sight. */
int ulma_collector_file_id(struct ulma_collector *c, const char *path, size_t len, uint32_t *out)
{
	uint64_t h = fnv1a(path, len);
	uint32_t id;
	if (ulma_idmap_get(&c->file_index, h, &id) && strlen(c->files[id]) == len &&
	    memcmp(c->files[id], path, len) == 0) {
		*out = id;
		return 0;
	}
	char **v = realloc(c->files, (c->nfiles + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	c->files = v;
	if (!(v[c->nfiles] = malloc(len + 1)))
		return -ENOMEM;
	memcpy(v[c->nfiles], path, len);
	v[c->nfiles][len] = 0;
	id = c->nfiles++;
	if (!ulma_idmap_get(&c->file_index, h, out)) /* on a hash collision keep the first */
		ulma_idmap_put(&c->file_index, h, id);
	*out = id;
	return c->writer ? ulma_trace_define_file(c->writer, id, path, len) : 0;
}

static uint64_t content_key(uint8_t kind, const char *name, size_t nlen, const char *file, size_t flen,
			    uint32_t line)
{
	uint64_t h = fnv1a(name, nlen) * 31 + fnv1a(file, flen);
	h = h * 31 + line;
	h = h * 31 + kind;
	return h ? h : 1;
}

static bool same_function(const struct ulma_func_row *f, uint8_t kind, const char *name, size_t nlen,
			  const char *file, size_t flen, uint32_t line)
{
	return f->kind == kind && f->line == line && strlen(f->name) == nlen && strlen(f->file) == flen &&
	       memcmp(f->name, name, nlen) == 0 && memcmp(f->file, file, flen) == 0;
}

static int map_id(struct ulma_collector *c, uint32_t sid, uint32_t index)
{
	int err = ulma_idmap_put(&c->func_index, sid, index);
	if (err || sid >= DENSE_IDS || c->profile.funcs[index].pyx)
		return err; /* (a .pyx function takes the slow path: collector_apply.c, cython_twin_enter) */
	if (sid >= c->nby_id) {
		uint32_t n = c->nby_id ? c->nby_id : 1024;
		while (n <= sid)
			n *= 2;
		uint32_t *v = realloc(c->by_id, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(v + c->nby_id, 0, (n - c->nby_id) * sizeof(*v));
		c->by_id = v;
		c->nby_id = n;
	}
	c->by_id[sid] = index + 1;
	return 0;
}

/* Map session id sid to the function with this content, defining it if new.
 * sid UINT32_MAX defines without mapping (the "?" function). */
static int define(struct ulma_collector *c, uint32_t sid, uint8_t kind, const char *name, size_t nlen,
		  const char *file, size_t flen, uint32_t line, uint32_t *index_out)
{
	uint64_t key = content_key(kind, name, nlen, file, flen, line);
	uint32_t index, fid, seen;
	if (ulma_idmap_get(&c->by_content, key, &index) &&
	    same_function(&c->profile.funcs[index], kind, name, nlen, file, flen, line)) {
		*index_out = index;
		return sid == UINT32_MAX ? 0 : set_error(c, map_id(c, sid, index)); /* another process's id */
	}
	index = c->profile.nfuncs;
	int err = ulma_collector_file_id(c, file, flen, &fid);
	if (!err)
		err = ulma_profile_add_func(&c->profile, index, kind, name, nlen, file, flen, line);
	if (!err)
		c->profile.funcs[index].pyx = kind == ULMA_DEF_PY && flen > 4 && memcmp(file + flen - 4, ".pyx", 4) == 0;
	if (!err && sid != UINT32_MAX)
		err = map_id(c, sid, index);
	if (!err && !ulma_idmap_get(&c->by_content, key, &seen)) /* on a collision keep the first */
		err = ulma_idmap_put(&c->by_content, key, index);
	if (!err && c->writer)
		err = ulma_trace_define_func(c->writer, index + 1, kind, fid, line, name, nlen);
	*index_out = index;
	return set_error(c, err);
}

static int take_def(struct ulma_collector *c, const struct ulma_def_view *d)
{
	uint32_t have;
	if (d->kind == ULMA_DEF_MODULE)
		return set_error(c, ulma_collector_take_module(c, d));
	if (d->kind == ULMA_DEF_LINES_WANTED || d->kind == ULMA_DEF_LINES_MATCHED)
		return ulma_collector_take_lines_def(c, d);
	if (d->kind == ULMA_DEF_PROCESS)
		return ulma_collector_take_process(c, d);
	if (ulma_idmap_get(&c->func_index, d->id, &have))
		return 0;
	return define(c, d->id, d->kind, d->name, d->name_len, d->file, d->file_len, d->line, &have);
}

/* Entries skipped as holes may have completed since: read them now (one
 * completed malformed is refused). */
static int recheck_holes(struct ulma_collector *c)
{
	for (uint32_t i = 0; i < c->nholes;) {
		uint64_t at = c->holes[i];
		struct ulma_def_view d;
		int r = ulma_session_next_def(c->session, &at, &d);
		if (r == 0) {
			i++;
			continue;
		}
		if (r == 1) {
			int err = take_def(c, &d);
			if (err)
				return err;
		} else {
			c->refused++;
		}
		c->holes[i] = c->holes[--c->nholes];
	}
	return 0;
}

/* Every entry up to the end of the area has been read (or skipped). */
static bool defs_settled(const struct ulma_collector *c)
{
	uint64_t used = atomic_load_explicit(&c->session->hdr->defs_used, memory_order_acquire);
	return c->def_cursor >= used || c->def_cursor >= c->session->hdr->defs_size;
}

int ulma_collector_scan_defs(struct ulma_collector *c, bool final)
{
	struct ulma_def_view d;
	int r, err = recheck_holes(c);
	if (err)
		return err;
	for (;;) {
		while ((r = ulma_session_next_def(c->session, &c->def_cursor, &d)) == 1)
			if ((err = take_def(c, &d)))
				return err;
		if (defs_settled(c))
			return 0; /* nothing incomplete: simply at the end */
		uint64_t now = ulma_clock_monotonic_ns();
		if (c->stuck_at != c->def_cursor || !c->stuck_since_ns) {
			c->stuck_at = c->def_cursor;
			c->stuck_since_ns = now ? now : 1;
		}
		if (r < 0 && c->refused_def != c->def_cursor + 1) { /* malformed: refused once, skipped below */
			c->refused++;
			c->refused_def = c->def_cursor + 1;
		}
		uint64_t next;
		if ((r == 0 && !final && now - c->stuck_since_ns < DEF_HOLE_NS) ||
		    !ulma_session_next_def_after_hole(c->session, c->def_cursor, &next))
			return 0;
		if (r < 0) { /* never completes: no hole to re-read */
			c->def_cursor = next;
			continue;
		}
		uint64_t *v = realloc(c->holes, (c->nholes + 1) * sizeof(*v));
		if (!v)
			return set_error(c, -ENOMEM);
		c->holes = v;
		c->holes[c->nholes++] = c->def_cursor;
		c->def_cursor = next;
	}
}

uint32_t ulma_collector_resolve(struct ulma_collector *c, uint32_t sid, bool final)
{
	uint32_t index;
	if (sid < c->nby_id && c->by_id[sid])
		return c->by_id[sid] - 1;
	if (sid != 0 && ulma_idmap_get(&c->func_index, sid, &index))
		return index;
	if (sid != 0) {
		ulma_collector_scan_defs(c, final);
		if (ulma_idmap_get(&c->func_index, sid, &index))
			return index;
		return final || defs_settled(c) ? ULMA_COLLECTOR_UNDEFINED : ULMA_COLLECTOR_WAIT;
	}
	/* session id 0: definitions full */
	if (c->unknown == UINT32_MAX && define(c, UINT32_MAX, ULMA_DEF_PY, "?", 1, "?", 1, 0, &c->unknown) != 0)
		c->unknown = UINT32_MAX;
	return c->unknown;
}

uint32_t ulma_collector_define(struct ulma_collector *c, uint8_t kind, const char *name, size_t name_len,
			       const char *file, size_t file_len, uint32_t line)
{
	uint32_t index;
	if (define(c, UINT32_MAX, kind, name, name_len, file, file_len, line, &index) != 0)
		return UINT32_MAX;
	return index;
}

void ulma_collector_defs_free(struct ulma_collector *c)
{
	free(c->by_id);
	free(c->holes);
	ulma_idmap_free(&c->by_content);
	for (uint32_t i = 0; i < c->nfiles; i++)
		free(c->files[i]);
	free(c->files);
	ulma_idmap_free(&c->func_index);
	ulma_idmap_free(&c->file_index);
}
