/* export_ctf.c - the Common Trace Format, version 1.8 (diamon.org/ctf),
 * as LTTng writes it and babeltrace2 / Trace Compass read it.
 *
 * A CTF trace is a directory: `metadata`, a TSDL text describing the
 * binary layout, and one binary stream file per traced thread
 * (`stream_<serial>`).  A stream file is a sequence of packets; each packet
 * starts with a header (magic, stream id) and a context (first and last
 * timestamp, content and packet size in bits, pid, tid), followed by its
 * events.  Every event has a header (event id, 64-bit timestamp), a
 * context carrying the cpu_id it ran on, and a payload:
 *
 *     ulma:function_entry  { string name; string file; uint32 line; enum kind; }
 *     ulma:function_exit   { string name; uint64 duration_ns; uint64 self_ns; }
 *     ulma:instant         { string name; }
 *     ulma:counter         { string name; double value; }
 *     ulma:thread_name     { string name; }
 *
 * `kind` is the definition's kind (a uint8 enumeration whose labels are
 * python, c, native and zone; the C kinds 2-5 share the label c).  The
 * marks are events in their thread's stream, at their time.
 *
 * Objects over time (--memory on Python 3.13+, export_objects.h) are
 * ulma:counter events too, "objects: TYPE (created - destroyed)" for the
 * types with the most objects of each process, as chrome and perfetto
 * draw them; known only at the end, they go in a stream of their own per
 * process (`objects_<serial>`, the packets' pid and tid those of the
 * process's first thread that counted one), whose times, merged, go
 * forward as a stream's must.
 *
 * All integers are little-endian and byte-aligned, so no padding occurs.
 * Timestamps are nanoseconds of a clock `monotonic` whose offset is the
 * trace's CLOCK_MONOTONIC start, so times line up with other traces of the
 * machine (LTTng's kernel traces use the same clock).  Strings are UTF-8
 * (invalid bytes become U+FFFD).  Each thread's events collect in a 64 KiB
 * buffer written out as one packet, its file opened only to append, so
 * memory and open files stay bounded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_objects.h"
#include "export_text.h"
#include "ulma/shm.h"

#define PACKET_AT 65536
#define CTF_MAGIC 0xC1FC1FC1u
#define HEADER_BYTES 48u /* packet header 8 + packet context 40 */

enum { EV_ENTRY = 0, EV_EXIT = 1, EV_INSTANT = 2, EV_COUNTER = 3, EV_THREAD_NAME = 4 };

struct ctf_thread {
	struct ulma_sbuf ev; /* events of the packet being built */
	uint64_t begin, end; /* its first and last timestamp */
	uint64_t events;     /* in the packet */
	bool started;        /* the stream file exists */
};

struct ctf {
	const char *dir;
	const char *stream; /* the stream files' name before the thread's serial */
	struct ctf_thread *threads;
	uint32_t nthreads;
	char **names; /* per function: cleaned name, NUL included in length */
	char **files;
	char **entries; /* per function: an entry's fields (name, file, line, kind), COPY_CHUNK bytes of slack */
	size_t *entry_len;
	char **exits;   /* per function: an exit's first field (the name), with the same slack */
	size_t *exit_len;
	uint32_t nnames;
	uint64_t events;
	struct ulma_xobjects objects; /* objects per process and type (--memory on 3.13+) */
};

static void put_le(struct ulma_sbuf *b, uint64_t v, unsigned bytes)
{
	char le[8];
	for (unsigned i = 0; i < bytes; i++)
		le[i] = (char)(v >> (8 * i) & 0xff);
	ulma_sbuf_put(b, le, bytes);
}

/* v's low `bytes` bytes at p, little-endian; returns the end. */
static inline char *le_at(char *p, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		p[i] = (char)(v >> (8 * i) & 0xff);
	return p + bytes;
}

static void put_cstr(struct ulma_sbuf *b, const char *s)
{
	ulma_sbuf_put(b, s, strlen(s) + 1);
}

/* A little-endian IEEE double. */
static void put_double(struct ulma_sbuf *b, double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof(bits));
	put_le(b, bits, 8);
}

/* s as valid UTF-8, in a string of its own; NULL only when out of memory.
 * An empty s (exec of code compiled with file name "") is an empty string. */
static char *clean(const char *s)
{
	struct ulma_sbuf b = {0};
	ulma_sbuf_put(&b, "", 0); /* allocates: the result is a string even when s adds nothing */
	ulma_sbuf_utf8(&b, s);
	if (b.nomem) {
		ulma_sbuf_free(&b);
		return NULL;
	}
	return b.p;
}

/* The kind as the metadata's enumeration has it: the trace's own value,
 * or 0 ("other") for one it does not list. */
static unsigned kind_value(uint8_t kind)
{
	return kind >= ULMA_DEF_PY && kind <= ULMA_DEF_ZONE ? kind : 0;
}

#define COPY_CHUNK 32 /* event() copies fields in fixed chunks: a few moves each, no call */

static int grow_funcs(struct ctf *c, uint32_t func)
{
	uint32_t n = func + 1 > c->nnames * 2 ? func + 1 : c->nnames * 2;
	char ***arrays[] = {&c->names, &c->files, &c->entries, &c->exits};
	for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
		char **a = realloc(*arrays[i], (size_t)n * sizeof(*a));
		if (!a)
			return -ENOMEM;
		memset(a + c->nnames, 0, (size_t)(n - c->nnames) * sizeof(*a));
		*arrays[i] = a;
	}
	size_t **lens[] = {&c->entry_len, &c->exit_len};
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t *l = realloc(*lens[i], (size_t)n * sizeof(*l));
		if (!l)
			return -ENOMEM;
		*lens[i] = l;
	}
	c->nnames = n;
	return 0;
}

static int on_func(void *ctx, const struct ulma_walk *w, uint32_t func)
{
	struct ctf *c = ctx;
	if (func >= c->nnames && grow_funcs(c, func))
		return -ENOMEM;
	free(c->names[func]);
	free(c->files[func]);
	free(c->entries[func]);
	free(c->exits[func]);
	c->entries[func] = c->exits[func] = NULL;
	c->names[func] = clean(*w->funcs[func].name ? w->funcs[func].name : "?");
	c->files[func] = clean(w->funcs[func].file);
	if (!c->names[func] || !c->files[func])
		return -ENOMEM;
	struct ulma_sbuf e = {0}, x = {0};
	put_cstr(&e, c->names[func]);
	put_cstr(&e, c->files[func]);
	put_le(&e, w->funcs[func].line, 4);
	put_le(&e, kind_value(w->funcs[func].kind), 1);
	put_cstr(&x, c->names[func]);
	char *ep = e.nomem ? NULL : realloc(e.p, e.len + COPY_CHUNK);
	char *xp = x.nomem ? NULL : realloc(x.p, x.len + COPY_CHUNK);
	if (!ep || !xp) {
		free(ep ? ep : e.p);
		free(xp ? xp : x.p);
		return -ENOMEM;
	}
	c->entries[func] = ep;
	c->entry_len[func] = e.len;
	c->exits[func] = xp;
	c->exit_len[func] = x.len;
	return 0;
}

static int write_packet(struct ctf *c, const struct ulma_walk *w, uint32_t thread)
{
	struct ctf_thread *t = &c->threads[thread];
	const struct ulma_walk_thread *wt = &w->threads[thread];
	if (t->ev.nomem)
		return -ENOMEM;
	if (t->events == 0)
		return 0;
	struct ulma_sbuf h = {0};
	uint64_t bits = ((uint64_t)HEADER_BYTES + t->ev.len) * 8;
	put_le(&h, CTF_MAGIC, 4);
	put_le(&h, 0, 4); /* stream id */
	put_le(&h, t->begin, 8);
	put_le(&h, t->end, 8);
	put_le(&h, bits, 8); /* content size */
	put_le(&h, bits, 8); /* packet size */
	put_le(&h, wt->pid, 4);
	put_le(&h, wt->tid, 4);
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s%llu", c->dir, c->stream, (unsigned long long)wt->serial);
	FILE *f = h.nomem ? NULL : fopen(path, t->started ? "ab" : "wb");
	int err = h.nomem ? -ENOMEM : f ? 0 : -EIO;
	if (f) {
		if (fwrite(h.p, 1, h.len, f) != h.len || fwrite(t->ev.p, 1, t->ev.len, f) != t->ev.len)
			err = -EIO;
		if (fclose(f) != 0)
			err = -EIO;
	}
	ulma_sbuf_free(&h);
	t->started = true;
	t->ev.len = 0;
	t->events = 0;
	return err;
}

/* The thread's packet buffer, with an event of id at `at` begun in it
 * (header and context); NULL when out of memory. */
static struct ulma_sbuf *begin_event(struct ctf *c, uint32_t thread, unsigned id, uint64_t at, uint32_t cpu)
{
	if (thread >= c->nthreads) {
		uint32_t n = thread + 1 > c->nthreads * 2 ? thread + 1 : c->nthreads * 2;
		struct ctf_thread *p = realloc(c->threads, (size_t)n * sizeof(*p));
		if (!p)
			return NULL;
		memset(p + c->nthreads, 0, (size_t)(n - c->nthreads) * sizeof(*p));
		c->threads = p;
		c->nthreads = n;
	}
	struct ctf_thread *t = &c->threads[thread];
	if (t->events == 0)
		t->begin = at;
	t->end = at;
	t->events++;
	c->events++;
	char *p = ulma_sbuf_room(&t->ev, 16);
	if (!p)
		return NULL;
	p = le_at(le_at(le_at(p, id, 4), at, 8), cpu, 4);
	t->ev.len += 16;
	t->ev.p[t->ev.len] = 0;
	return &t->ev;
}

/* A frame's entry or exit, written straight into its thread's packet
 * buffer (one per frame's open and close: the hot path). */
static int event(struct ctf *c, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f,
		 bool entry)
{
	if (f->func >= c->nnames || !c->entries[f->func])
		return -EPROTO; /* the walker defines every function before its frames */
	struct ulma_sbuf *b = begin_event(c, thread, entry ? EV_ENTRY : EV_EXIT, entry ? f->start_ns : f->end_ns, f->cpu);
	if (!b)
		return -ENOMEM;
	const char *fields = entry ? c->entries[f->func] : c->exits[f->func];
	size_t len = entry ? c->entry_len[f->func] : c->exit_len[f->func];
	char *p = ulma_sbuf_room(b, len + COPY_CHUNK + 16), *start = p;
	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < len; i += COPY_CHUNK)
		memcpy(p + i, fields + i, COPY_CHUNK);
	p += len;
	if (!entry) {
		p = le_at(p, f->end_ns - f->start_ns, 8);
		p = le_at(p, f->self_ns, 8);
	}
	b->len += (size_t)(p - start);
	b->p[b->len] = 0;
	return b->len >= PACKET_AT ? write_packet(c, w, thread) : 0;
}

static int on_open(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	return event(ctx, w, thread, f, true);
}

static int on_close(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	return event(ctx, w, thread, f, false);
}

/* A mark: an instant, a counter's value (a little-endian IEEE double) or
 * the thread's name, on the CPU of the thread's latest event. */
static int on_mark(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_mark *m)
{
	struct ctf *c = ctx;
	unsigned id = m->kind == ULMA_EXT_INSTANT ? EV_INSTANT : m->kind == ULMA_EXT_COUNTER ? EV_COUNTER : EV_THREAD_NAME;
	struct ulma_sbuf *b = begin_event(c, thread, id, m->at_ns, w->threads[thread].cpu);
	if (!b)
		return -ENOMEM;
	put_cstr(b, m->name < c->nnames && c->names[m->name] ? c->names[m->name] : "?");
	if (id == EV_COUNTER)
		put_double(b, m->value);
	return b->len >= PACKET_AT ? write_packet(c, w, thread) : b->nomem ? -ENOMEM : 0;
}

static int on_object(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_trace_object *o,
		     uint64_t at_ns)
{
	struct ctf *c = ctx;
	return ulma_xobjects_add(&c->objects, w, thread, o, at_ns);
}

/* The types with the most objects of each process, as ulma:counter events
 * in the process's objects_<serial> stream (see the top). */
static int write_objects(struct ctf *c, const struct ulma_walk *w)
{
	struct ctf o = {.dir = c->dir, .stream = "objects_"};
	char label[ULMA_WALK_LABEL_MAX];
	int err = 0;
	ulma_xobjects_choose(&c->objects);
	for (uint32_t first = 0, end; first < c->objects.n && !err; first = end) {
		struct ulma_xobj_point *pts;
		uint32_t n, thread = UINT32_MAX;
		err = ulma_xobjects_merged(&c->objects, first, &end, &pts, &n);
		for (uint32_t i = 0; i < n && !err; i++) {
			const struct ulma_xobj_track *t = &c->objects.t[pts[i].track];
			thread = i ? thread : t->thread; /* the stream is that thread's, of the process */
			ulma_xobjects_name(w, t, label, sizeof(label));
			char *name = clean(label);
			struct ulma_sbuf *b = name ? begin_event(&o, thread, EV_COUNTER, pts[i].at, w->threads[thread].cpu) : NULL;
			if (b) {
				put_cstr(b, name);
				put_double(b, pts[i].v);
			}
			free(name);
			err = !b || b->nomem ? -ENOMEM : b->len >= PACKET_AT ? write_packet(&o, w, thread) : 0;
		}
		if (!err && n)
			err = write_packet(&o, w, thread);
		free(pts);
	}
	for (uint32_t i = 0; i < o.nthreads; i++)
		ulma_sbuf_free(&o.threads[i].ev);
	free(o.threads);
	return err;
}

static const char metadata_types[] =
	"/* CTF 1.8 */\n"
	"\n"
	"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
	"typealias floating_point { exp_dig = 11; mant_dig = 53; byte_order = le; align = 8; } := double_t;\n"
	"typealias enum : uint8_t { other = 0, python = 1, c = 2 ... 5, native = 6, zone = 7 } := ulma_kind_t;\n"
	"\n"
	"trace {\n"
	"\tmajor = 1;\n"
	"\tminor = 8;\n"
	"\tbyte_order = le;\n"
	"\tpacket.header := struct {\n"
	"\t\tuint32_t magic;\n"
	"\t\tuint32_t stream_id;\n"
	"\t};\n"
	"};\n"
	"\n";

static const char metadata_stream[] =
	"typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; }"
	" := uint64_clock_monotonic_t;\n"
	"\n"
	"stream {\n"
	"\tid = 0;\n"
	"\tpacket.context := struct {\n"
	"\t\tuint64_clock_monotonic_t timestamp_begin;\n"
	"\t\tuint64_clock_monotonic_t timestamp_end;\n"
	"\t\tuint64_t content_size;\n"
	"\t\tuint64_t packet_size;\n"
	"\t\tuint32_t pid;\n"
	"\t\tuint32_t tid;\n"
	"\t};\n"
	"\tevent.header := struct {\n"
	"\t\tuint32_t id;\n"
	"\t\tuint64_clock_monotonic_t timestamp;\n"
	"\t};\n"
	"\tevent.context := struct {\n"
	"\t\tuint32_t cpu_id;\n"
	"\t};\n"
	"};\n"
	"\n"
	"event {\n"
	"\tname = \"ulma:function_entry\";\n"
	"\tid = 0;\n"
	"\tstream_id = 0;\n"
	"\tfields := struct {\n"
	"\t\tstring name;\n"
	"\t\tstring file;\n"
	"\t\tuint32_t line;\n"
	"\t\tulma_kind_t kind;\n"
	"\t};\n"
	"};\n"
	"\n"
	"event {\n"
	"\tname = \"ulma:function_exit\";\n"
	"\tid = 1;\n"
	"\tstream_id = 0;\n"
	"\tfields := struct {\n"
	"\t\tstring name;\n"
	"\t\tuint64_t duration_ns;\n"
	"\t\tuint64_t self_ns;\n"
	"\t};\n"
	"};\n"
	"\n"
	"event {\n"
	"\tname = \"ulma:instant\";\n"
	"\tid = 2;\n"
	"\tstream_id = 0;\n"
	"\tfields := struct {\n"
	"\t\tstring name;\n"
	"\t};\n"
	"};\n"
	"\n"
	"event {\n"
	"\tname = \"ulma:counter\";\n"
	"\tid = 3;\n"
	"\tstream_id = 0;\n"
	"\tfields := struct {\n"
	"\t\tstring name;\n"
	"\t\tdouble_t value;\n"
	"\t};\n"
	"};\n"
	"\n"
	"event {\n"
	"\tname = \"ulma:thread_name\";\n"
	"\tid = 4;\n"
	"\tstream_id = 0;\n"
	"\tfields := struct {\n"
	"\t\tstring name;\n"
	"\t};\n"
	"};\n";

/* TSDL string literal contents: escape backslash and quote, drop controls. */
static void put_tsdl_string(struct ulma_sbuf *b, const char *s)
{
	char *c = clean(s);
	if (!c) {
		b->nomem = true;
		return;
	}
	for (const char *p = c; *p; p++) {
		if (*p == '"' || *p == '\\')
			ulma_sbuf_put(b, "\\", 1);
		if ((unsigned char)*p >= 0x20 && *p != 0x7f)
			ulma_sbuf_put(b, p, 1);
	}
	free(c);
}

static int write_metadata(const struct ctf *c, const struct ulma_walk *w)
{
	struct ulma_sbuf b = {0};
	ulma_sbuf_puts(&b, metadata_types);
	ulma_sbuf_puts(&b, "env {\n\ttracer_name = \"ulma\";\n\tdomain = \"python\";\n\tcommand = \"");
	put_tsdl_string(&b, w->command ? w->command : "");
	char note[ULMA_WALK_NOTE_MAX];
	ulma_walk_times_note(w, note, sizeof(note));
	ulma_sbuf_puts(&b, "\";\n\ttimes = \"");
	put_tsdl_string(&b, note);
	ulma_sbuf_printf(&b, "\";\n\tcomplete = %d;\n};\n\n", w->complete ? 1 : 0);
	ulma_sbuf_printf(&b,
			 "clock {\n\tname = \"monotonic\";\n"
			 "\tdescription = \"CLOCK_MONOTONIC, from the ulma trace start\";\n"
			 "\tfreq = 1000000000;\n\tprecision = 1;\n"
			 "\toffset_s = %llu;\n\toffset = %llu;\n\tabsolute = false;\n};\n\n",
			 (unsigned long long)(w->start_ns / 1000000000u), (unsigned long long)(w->start_ns % 1000000000u));
	ulma_sbuf_puts(&b, metadata_stream);
	char path[4096];
	snprintf(path, sizeof(path), "%s/metadata", c->dir);
	FILE *f = b.nomem ? NULL : fopen(path, "wb");
	int err = b.nomem ? -ENOMEM : f ? 0 : -EIO;
	if (f) {
		if (fwrite(b.p, 1, b.len, f) != b.len)
			err = -EIO;
		if (fclose(f) != 0)
			err = -EIO;
	}
	ulma_sbuf_free(&b);
	return err;
}

int ulma_export_ctf(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
		    struct ulma_export_result *res)
{
	struct ctf c = {.dir = dir, .stream = "stream_"};
	struct ulma_walk w;
	(void)out;
	struct ulma_walk_sink sink = {.ctx = &c, .on_func = on_func, .on_open = on_open, .on_close = on_close,
				      .on_mark = on_mark, .on_object = on_object};
	int err = ulma_export_walk(in, o, &w, &sink, res);
	for (uint32_t i = 0; i < c.nthreads && !err; i++)
		err = write_packet(&c, &w, i);
	if (!err)
		err = write_objects(&c, &w);
	if (!err)
		err = write_metadata(&c, &w);
	for (uint32_t i = 0; i < c.nthreads; i++)
		ulma_sbuf_free(&c.threads[i].ev);
	for (uint32_t i = 0; i < c.nnames; i++) {
		free(c.names[i]);
		free(c.files[i]);
		free(c.entries[i]);
		free(c.exits[i]);
	}
	free(c.names);
	free(c.files);
	free(c.entries);
	free(c.exits);
	free(c.entry_len);
	free(c.exit_len);
	free(c.threads);
	ulma_xobjects_free(&c.objects);
	ulma_walk_free(&w);
	return err;
}
