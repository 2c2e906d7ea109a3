/* ctf_check.h - the fuzz target's oracle for the CTF export: each stream
 * file decoded as docs/exports.md ("ctf") lays it out, and compared, event
 * by event, with what a second walk of the same trace hands a sink.
 *
 * The decoder follows CTF 1.8's rules as babeltrace2 applies them: a
 * packet's clock starts at its timestamp_begin; a compact header's 27
 * bits replace the clock's low bits, adding 2^27 where they are below the
 * previous ones; an extended header sets the whole clock.  Every packet's
 * magic, stream id, sizes, pid, tid and end time must be right, every
 * function used in a stream defined before in that stream, and each
 * entry, exit and mark must carry the walk's time, CPU and kind in the
 * walk's order; a function id stands for one function (merged ones
 * alike) and a function for one id.  A mismatch prints what and aborts.
 *
 * Single-threaded; for tests/fuzz/fuzz_export.c only (every allocation
 * freed before ctf_check returns).
 */
#ifndef ULMA_FUZZ_CTF_CHECK_H
#define ULMA_FUZZ_CTF_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/export.h"
#include "core/array.h"

enum { CHECK_ENTRY = 0, CHECK_EXIT = 1, CHECK_INSTANT = 2, CHECK_COUNTER = 3, CHECK_THREAD_NAME = 4 };

struct check_event {
	uint64_t ns;
	uint32_t key; /* the function's merge key (entries and exits) */
	uint32_t cpu;
	uint8_t what; /* CHECK_* */
};

struct check_thread {
	struct check_event *ev;
	uint32_t n, cap;
};

struct check_walk {
	struct check_thread *threads;
	uint32_t cap;
	int err;
};

static void check_fail(const char *what, unsigned long long a, unsigned long long b)
{
	fprintf(stderr, "fuzz_export: ctf: %s (%llu, %llu)\n", what, a, b);
	abort();
}

static int check_push(struct check_walk *c, uint32_t thread, struct check_event e)
{
	if (ulma_array_grow((void **)&c->threads, &c->cap, thread, sizeof(*c->threads)))
		return -ENOMEM;
	struct check_thread *t = &c->threads[thread];
	if (ulma_array_grow((void **)&t->ev, &t->cap, t->n, sizeof(*t->ev)))
		return -ENOMEM;
	t->ev[t->n++] = e;
	return 0;
}

static int check_open(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	return check_push(ctx, thread, (struct check_event){f->start_ns, w->funcs[f->func].key, f->cpu, CHECK_ENTRY});
}

static int check_close(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	return check_push(ctx, thread, (struct check_event){f->end_ns, w->funcs[f->func].key, f->cpu, CHECK_EXIT});
}

static int check_mark(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_mark *m)
{
	uint8_t what = m->kind == ULMA_EXT_INSTANT   ? CHECK_INSTANT
		       : m->kind == ULMA_EXT_COUNTER ? CHECK_COUNTER
						     : CHECK_THREAD_NAME;
	return check_push(ctx, thread, (struct check_event){m->at_ns, 0, w->threads[thread].cpu, what});
}

static uint64_t check_le(const unsigned char *p, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* The end of the NUL-terminated string at p (past its NUL), before end. */
static const unsigned char *check_string(const unsigned char *p, const unsigned char *end)
{
	const unsigned char *z = memchr(p, 0, (size_t)(end - p));
	if (!z)
		check_fail("a string runs past its packet", (unsigned long long)(end - p), 0);
	return z + 1;
}

/* id <-> key, both ways one to one: each a table grown on demand, 0 unset. */
struct check_ids {
	uint32_t *key_of; /* id -> key + 1 */
	uint32_t *id_of;  /* key -> id + 1 */
	uint32_t cap_key_of, cap_id_of;
};

static void check_same(struct check_ids *m, uint32_t id, uint32_t key)
{
	if (ulma_array_grow((void **)&m->key_of, &m->cap_key_of, id, sizeof(uint32_t)) ||
	    ulma_array_grow((void **)&m->id_of, &m->cap_id_of, key, sizeof(uint32_t)))
		abort();
	if (!m->key_of[id])
		m->key_of[id] = key + 1;
	if (!m->id_of[key])
		m->id_of[key] = id + 1;
	if (m->key_of[id] != key + 1 || m->id_of[key] != id + 1)
		check_fail("a function id stands for two functions, or a function has two ids", id, key);
}

/* One stream file against the walk's events of its thread. */
static void check_stream(const unsigned char *s, size_t len, const struct ulma_walk_thread *wt,
			 const struct check_thread *want, struct check_ids *ids)
{
	const uint64_t mask = (UINT64_C(1) << 27) - 1;
	uint8_t *defined = NULL;
	uint32_t cap_defined = 0, next = 0;
	for (size_t pos = 0; pos < len;) {
		if (len - pos < 52 || check_le(s + pos, 4) != 0xC1FC1FC1u || check_le(s + pos + 4, 4) != 0)
			check_fail("a packet header", pos, len);
		uint64_t begin = check_le(s + pos + 8, 8), end_ts = check_le(s + pos + 16, 8);
		uint64_t bits = check_le(s + pos + 24, 8);
		if (bits != check_le(s + pos + 32, 8) || bits % 8 || bits / 8 < 52 || bits / 8 > len - pos)
			check_fail("a packet's sizes", bits, len - pos);
		if (check_le(s + pos + 40, 4) != wt->pid || check_le(s + pos + 44, 4) != wt->tid)
			check_fail("a packet's pid and tid", check_le(s + pos + 40, 4), wt->tid);
		uint32_t cpu = (uint32_t)check_le(s + pos + 48, 4);
		const unsigned char *p = s + pos + 52, *end = s + pos + bits / 8;
		uint64_t clock = begin;
		bool first = true;
		if (p == end)
			check_fail("an empty packet", pos, 0);
		while (p < end) {
			if (end - p < 4)
				check_fail("an event header past its packet", pos, 0);
			uint32_t word = (uint32_t)check_le(p, 4), id = word & 31;
			if (id == 31) {
				if (end - p < 13)
					check_fail("an extended header past its packet", pos, 0);
				id = (uint32_t)check_le(p + 1, 4);
				clock = check_le(p + 5, 8);
				p += 13;
			} else {
				uint64_t low = word >> 5;
				if (low < (clock & mask))
					clock += mask + 1;
				clock = (clock & ~mask) | low;
				p += 4;
			}
			if (first && clock != begin)
				check_fail("a packet's first event is not at its beginning", clock, begin);
			first = false;
			if (id == 5) { /* a definition */
				if (end - p < 4)
					check_fail("a definition past its packet", pos, 0);
				uint32_t fid = (uint32_t)check_le(p, 4);
				p = check_string(check_string(p + 4, end), end);
				if (end - p < 5 || p[4] > 7)
					check_fail("a definition's line and kind", pos, p < end ? p[4] : 0);
				p += 5;
				if (ulma_array_grow((void **)&defined, &cap_defined, fid / 8, 1))
					abort();
				if (defined[fid / 8] >> fid % 8 & 1)
					check_fail("a function defined twice in a stream", fid, 0);
				defined[fid / 8] |= (uint8_t)(1u << fid % 8);
				continue;
			}
			if (next == want->n)
				check_fail("more events than the walk's", next, want->n);
			const struct check_event *e = &want->ev[next++];
			uint8_t what = id == 6 ? CHECK_ENTRY : id == 7 ? CHECK_EXIT : (uint8_t)id;
			if (id > 7 || what != e->what)
				check_fail("an event's class", id, e->what);
			if (clock != e->ns)
				check_fail("an event's time", clock, e->ns);
			if (cpu != e->cpu)
				check_fail("an event's cpu", cpu, e->cpu);
			if (what <= CHECK_EXIT) {
				unsigned bytes = id >= 6 ? 4 : 2;
				if ((size_t)(end - p) < bytes)
					check_fail("a function id past its packet", pos, 0);
				uint32_t fid = (uint32_t)check_le(p, bytes);
				p += bytes;
				if ((fid >= 65536) != (bytes == 4))
					check_fail("a function id in the wrong class", fid, id);
				if (fid / 8 >= cap_defined || !(defined[fid / 8] >> fid % 8 & 1))
					check_fail("a function used before its definition in the stream", fid, 0);
				check_same(ids, fid, e->key);
			} else {
				p = check_string(p, end);
				if (what == CHECK_COUNTER) {
					if (end - p < 8)
						check_fail("a counter's value past its packet", pos, 0);
					p += 8;
				}
			}
		}
		if (clock != end_ts)
			check_fail("a packet's end time is not its last event's", clock, end_ts);
		pos += bits / 8;
	}
	if (next != want->n)
		check_fail("fewer events than the walk's", next, want->n);
	free(defined);
}

/* The export of `in` (a trace, read from its start) with opts o, just
 * written into dir, against a second walk. */
static void ctf_check(FILE *in, const struct ulma_export_opts *o, const char *dir)
{
	struct check_walk c = {0};
	struct ulma_walk w;
	struct ulma_export_result res;
	struct ulma_walk_sink sink = {.ctx = &c, .on_open = check_open, .on_close = check_close, .on_mark = check_mark};
	if (ulma_export_walk(in, o, &w, &sink, &res) != 0)
		check_fail("the second walk failed", 0, 0);
	struct check_ids ids = {0};
	for (uint32_t i = 0; i < w.nthreads; i++) {
		static const struct check_thread none = {0};
		const struct check_thread *want = i < c.cap ? &c.threads[i] : &none;
		char path[4200];
		snprintf(path, sizeof(path), "%s/stream_%llu", dir, (unsigned long long)w.threads[i].serial);
		FILE *f = fopen(path, "rb");
		if (!f) {
			if (want->n)
				check_fail("a thread with events has no stream", i, want->n);
			continue;
		}
		unsigned char *s = NULL;
		size_t len = 0, cap = 0, n;
		do {
			if (len == cap && !(s = realloc(s, cap = cap ? cap * 2 : 65536)))
				abort();
			n = fread(s + len, 1, cap - len, f);
			len += n;
		} while (n);
		fclose(f);
		check_stream(s, len, &w.threads[i], want, &ids);
		free(s);
	}
	for (uint32_t i = 0; i < c.cap; i++)
		free(c.threads[i].ev);
	free(c.threads);
	free(ids.key_of);
	free(ids.id_of);
	ulma_walk_free(&w);
}

#endif
