/* export_ctf.c - the Common Trace Format, version 1.8 (diamon.org/ctf),
 * laid out as LTTng lays out its high-rate events, for babeltrace2 and
 * Trace Compass.
 *
 * A CTF trace is a directory: `metadata`, a TSDL text describing the
 * binary layout, and one binary stream file per traced thread
 * (`stream_<serial>`).  A stream file is a sequence of packets; each packet
 * starts with a header (magic, stream id) and a context (first and last
 * timestamp, content and packet size in bits, pid, tid, and the cpu_id
 * its events ran on), followed by its events.  A packet ends where the
 * thread's CPU changes, so every event's CPU is its packet's, and at
 * 64 KiB.
 *
 * Every event has LTTng's compact header, 32 bits: a 5-bit event id and
 * the low 27 bits of its timestamp, from which the reader rebuilds the
 * full one (a value below the previous event's low bits means they
 * wrapped once).  Where the clock moved 2^27 ns (134 ms) or more since the
 * stream's previous event, the header is the extended one instead: id 31,
 * then a 32-bit id and the 64-bit timestamp (13 bytes).  Then its fields:
 *
 *     ulma:function_entry  { func; }   16-bit function id (ids below 65536)
 *     ulma:function_exit   { func; }
 *     ulma:instant         { string name; }
 *     ulma:counter         { string name; double value; }
 *     ulma:thread_name     { string name; }
 *     ulma:function        { uint32 func; string name; string file; uint32 line; enum kind; }
 *     ulma:function_entry  { uint32 func; }   (ids from 65536 on, class 6)
 *     ulma:function_exit   { uint32 func; }   (class 7)
 *
 * A function's id counts the functions in order of their first entry
 * (functions with one name, file and line merged, as in every export).
 * Its definition, ulma:function, is written in each stream that uses it,
 * once, just before its first entry or exit there and at its time, so a
 * stream read alone, or merged with others in time order, defines every
 * function before its events: readers join on `func`.
 * The 16-bit `func` is an enumeration whose labels are the names of the
 * CTF_LABELS most entered functions, so babeltrace2 prints
 * `func = ( "fib" : container = 3 )` and the others as `( <unknown> :
 * container = 812 )`: babeltrace2 looks a value up by a pass over every
 * label, and parses the labels in time quadratic in their count.
 * An entry or an exit thus takes 6 bytes.  `kind` is the definition's
 * kind (a uint8 enumeration: python, c for 2-5, native, zone, other).
 * The marks are events in their thread's stream at their time, on the
 * CPU of the thread's latest event.
 *
 * Objects over time (--memory on Python 3.13+, export_objects.h) are
 * ulma:counter events too, "objects: TYPE (created - destroyed)" for the
 * types with the most objects of each process, as chrome and perfetto
 * draw them; known only at the end, they go in a stream of their own per
 * process (`objects_<serial>`, the packets' pid and tid those of the
 * process's first thread that counted one), whose times, merged, go
 * forward as a stream's must.
 *
 * Integers are little-endian and byte-aligned (but for the header's
 * bit fields), so no padding occurs.  Timestamps are nanoseconds of a
 * clock `monotonic` whose offset is the trace's CLOCK_MONOTONIC start, so
 * times line up with other traces of the machine (LTTng's kernel traces
 * use the same clock).  Strings are UTF-8 (invalid bytes become U+FFFD).
 * Each thread's packets collect in a buffer written out once it holds
 * 64 KiB, its file opened only to append, so memory and open files stay
 * bounded.  An unfiltered walk hands the frames' edges over in batches
 * (on_edges), their compact events written in one loop (put_compact).
 * The metadata is written last, when the labels are known.
 *
 * Another event class takes an id below 31 (the compact header's; 8 to
 * 30 are free), a line in event_classes for the metadata, and a writer
 * that fills its fields between begin_event and end_event, as on_mark's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../core/array.h"
#include "export.h"
#include "export_objects.h"
#include "export_text.h"
#include "ulma/shm.h"

#define PACKET_AT 65536
#define CTF_MAGIC 0xC1FC1FC1u
#define PACKET_HEADER 52u     /* packet header 8 + packet context 44 */
#define COMPACT_BITS 27       /* the compact header's timestamp */
#define NARROW_IDS 65536u     /* function ids a 16-bit field holds */
#define CTF_LABELS 256u       /* functions the enumeration names (docs/exports.md, "ctf": what more cost) */

/* Event classes; EV_EXTENDED is the compact header's escape to the extended one. */
enum {
	EV_ENTRY = 0,
	EV_EXIT = 1,
	EV_INSTANT = 2,
	EV_COUNTER = 3,
	EV_THREAD_NAME = 4,
	EV_FUNCTION = 5,
	EV_ENTRY_WIDE = 6,
	EV_EXIT_WIDE = 7,
	EV_EXTENDED = 31,
};

struct ctf_thread {
	struct ulma_sbuf buf; /* packets not yet written, the open one last (binary: no NUL kept after them) */
	size_t packet;        /* the open packet's offset in buf */
	uint64_t last;        /* the stream's latest timestamp, as its reader's clock has it */
	uint64_t open_cpu;    /* the open packet's CPU + 1; 0 when none is open */
	bool started;         /* the stream file exists */
	uint8_t *defined;     /* bit per function id: the stream has its definition */
	uint32_t cap_defined;
	uint16_t *ready;      /* per walk function: its id + 1 where the id is below NARROW_IDS - 1 (the
			       * sum fits) and the stream has its definition, else 0 (set by on_edges;
			       * put_compact's one load answers both and gives the id) */
	uint32_t cap_ready;
};

/* A function as its definition event gave it. */
struct ctf_func {
	char *name; /* cleaned */
	char *file; /* cleaned */
	uint32_t line;
	uint8_t kind;     /* kind_value's */
	uint64_t entries; /* so far */
};

struct ctf {
	const char *dir;
	const char *stream; /* the stream files' name before the thread's serial */
	struct ctf_thread *threads;
	uint32_t cap_threads;
	uint32_t *id_of;  /* walk function -> its id + 1, 0 before its first entry (a trace
			   * defines a function once: the reader refuses a second definition) */
	uint32_t cap_id_of;
	struct ctf_func *ids; /* by id */
	uint32_t nids, cap_ids;
	char **mark_names; /* walk function (a mark's name) -> cleaned, made at first use */
	uint32_t cap_mark_names;
	struct ulma_xobjects objects; /* objects per process and type (--memory on 3.13+) */
};

/* v's low `bytes` bytes at p, little-endian; returns the end. */
static inline char *le_at(char *p, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		p[i] = (char)(v >> (8 * i) & 0xff);
	return p + bytes;
}

/* v's 8 bytes at p, little-endian: one store on a little-endian machine. */
static inline void store_le64(char *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(p, &v, 8);
#else
	le_at(p, v, 8);
#endif
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

static struct ctf_thread *thread_of(struct ctf *c, uint32_t thread)
{
	if (ulma_array_grow((void **)&c->threads, &c->cap_threads, thread, sizeof(*c->threads)))
		return NULL;
	return &c->threads[thread];
}

/* Write the thread's packets, none of them open, to its stream file. */
static int flush_thread(struct ctf *c, const struct ulma_walk *w, uint32_t thread)
{
	struct ctf_thread *t = &c->threads[thread];
	if (t->buf.len == 0)
		return 0;
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s%llu", c->dir, c->stream, (unsigned long long)w->threads[thread].serial);
	FILE *f = fopen(path, t->started ? "ab" : "wb");
	int err = f ? 0 : -EIO;
	if (f) {
		if (fwrite(t->buf.p, 1, t->buf.len, f) != t->buf.len)
			err = -EIO;
		if (fclose(f) != 0)
			err = -EIO;
	}
	t->started = true;
	t->buf.len = 0;
	return err;
}

/* End the open packet: its last timestamp and sizes into its context;
 * the finished packets written out once they hold 64 KiB. */
static int close_packet(struct ctf *c, const struct ulma_walk *w, uint32_t thread)
{
	struct ctf_thread *t = &c->threads[thread];
	if (!t->open_cpu)
		return 0;
	char *h = t->buf.p + t->packet;
	uint64_t bits = (uint64_t)(t->buf.len - t->packet) * 8;
	le_at(h + 16, t->last, 8);
	le_at(h + 24, bits, 8); /* content size */
	le_at(h + 32, bits, 8); /* packet size */
	t->open_cpu = 0;
	return t->buf.len >= PACKET_AT ? flush_thread(c, w, thread) : 0;
}

/* Room for `payload` bytes of an event of class id at `at`, on `cpu`, in
 * the thread's stream, its header written (a packet opened first, a new
 * one where the CPU changed): where the fields go, or NULL with *err set.
 * The caller fills them and passes their end to end_event. */
static char *begin_event(struct ctf *c, const struct ulma_walk *w, uint32_t thread, unsigned id, uint64_t at,
			 uint32_t cpu, size_t payload, int *err)
{
	struct ctf_thread *t = thread < c->cap_threads ? &c->threads[thread] : thread_of(c, thread);
	if (!t) {
		*err = -ENOMEM;
		return NULL;
	}
	if (__builtin_expect((uint64_t)cpu + 1 != t->open_cpu, 0)) { /* none open, or on another CPU */
		if ((*err = close_packet(c, w, thread)))
			return NULL;
		char *h = ulma_sbuf_room(&t->buf, PACKET_HEADER);
		if (!h) {
			*err = -ENOMEM;
			return NULL;
		}
		const struct ulma_walk_thread *wt = &w->threads[thread];
		memset(h, 0, PACKET_HEADER);
		le_at(h, CTF_MAGIC, 4); /* stream id 0 */
		le_at(h + 8, at, 8);    /* the reader's clock starts here */
		le_at(h + 40, wt->pid, 4);
		le_at(h + 44, wt->tid, 4);
		le_at(h + 48, cpu, 4);
		t->packet = t->buf.len;
		t->buf.len += PACKET_HEADER;
		t->last = at;
		t->open_cpu = (uint64_t)cpu + 1;
	}
	char *p = ulma_sbuf_room(&t->buf, 13 + payload);
	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	if (__builtin_expect(at - t->last < (UINT64_C(1) << COMPACT_BITS), 1)) {
		p = le_at(p, id | (at & ((UINT64_C(1) << COMPACT_BITS) - 1)) << 5, 4);
	} else { /* the clock moved too far (or back) for 27 bits: the full time */
		*p++ = EV_EXTENDED;
		p = le_at(le_at(p, id, 4), at, 8);
	}
	t->last = at;
	return p;
}

/* The event whose fields end at p is complete: the packet ended where it
 * reached 64 KiB. */
static int end_event(struct ctf *c, const struct ulma_walk *w, uint32_t thread, char *p)
{
	struct ctf_thread *t = &c->threads[thread];
	t->buf.len = (size_t)(p - t->buf.p);
	return t->buf.len - t->packet >= PACKET_AT ? close_packet(c, w, thread) : 0;
}

/* func's id (merged with the first function of its name, file and line),
 * given at its first entry.  0 or -ENOMEM. */
static int func_id(struct ctf *c, const struct ulma_walk *w, uint32_t func, uint32_t *out)
{
	const struct ulma_walk_func *f = &w->funcs[func];
	uint32_t key = f->key < w->nfuncs ? f->key : func;
	if (ulma_array_grow((void **)&c->id_of, &c->cap_id_of, func > key ? func : key, sizeof(*c->id_of)))
		return -ENOMEM;
	if (key != func && c->id_of[key]) { /* its twin has one */
		c->id_of[func] = c->id_of[key];
		*out = c->id_of[key] - 1;
		return 0;
	}
	uint32_t id = c->nids;
	if (id == UINT32_MAX - 1 || ulma_array_grow((void **)&c->ids, &c->cap_ids, id, sizeof(*c->ids)))
		return -ENOMEM;
	char *name = clean(*f->name ? f->name : "?"), *file = clean(f->file);
	if (!name || !file) {
		free(name);
		free(file);
		return -ENOMEM;
	}
	c->ids[id] = (struct ctf_func){name, file, f->line, (uint8_t)kind_value(f->kind), 0};
	c->nids++;
	c->id_of[func] = c->id_of[key] = id + 1;
	*out = id;
	return 0;
}

/* The definition of function id, where the thread's stream first uses
 * it, at `at`: so each stream, read alone or merged with others in time
 * order, defines a function before its events. */
static int define(struct ctf *c, const struct ulma_walk *w, uint32_t thread, uint32_t id, uint64_t at, uint32_t cpu)
{
	struct ctf_thread *t = &c->threads[thread];
	if (ulma_array_grow((void **)&t->defined, &t->cap_defined, id / 8, 1))
		return -ENOMEM;
	t->defined[id / 8] |= (uint8_t)(1u << id % 8);
	const struct ctf_func *f = &c->ids[id];
	size_t nlen = strlen(f->name) + 1, flen = strlen(f->file) + 1;
	int err = 0;
	char *p = begin_event(c, w, thread, EV_FUNCTION, at, cpu, 4 + nlen + flen + 4 + 1, &err);
	if (!p)
		return err;
	p = le_at(p, id, 4);
	memcpy(p, f->name, nlen);
	memcpy(p + nlen, f->file, flen);
	p = le_at(p + nlen + flen, f->line, 4);
	return end_event(c, w, thread, le_at(p, f->kind, 1));
}

/* A frame's entry or exit, the general way: its function's id and
 * definition first where it has none yet, its packet opened, any id, any
 * time. */
__attribute__((noinline)) static int frame_event_slow(struct ctf *c, const struct ulma_walk *w, uint32_t thread, uint32_t func, uint64_t at,
			    uint32_t cpu, bool entry)
{
	uint32_t id = func < c->cap_id_of ? c->id_of[func] : 0;
	struct ctf_thread *t = thread < c->cap_threads ? &c->threads[thread] : thread_of(c, thread);
	int err = 0;
	if (!t)
		return -ENOMEM;
	if (id == 0) {
		if ((err = func_id(c, w, func, &id)))
			return err;
	} else {
		id--;
	}
	if ((id / 8 >= t->cap_defined || !(t->defined[id / 8] >> id % 8 & 1)) && (err = define(c, w, thread, id, at, cpu)))
		return err;
	c->ids[id].entries += entry;
	bool wide = id >= NARROW_IDS;
	unsigned class = wide ? (entry ? EV_ENTRY_WIDE : EV_EXIT_WIDE) : entry ? EV_ENTRY : EV_EXIT;
	char *p = begin_event(c, w, thread, class, at, cpu, 4, &err);
	if (!p)
		return err;
	return end_event(c, w, thread, le_at(p, id, wide ? 4 : 2));
}

/* A frame's entry or exit: 6 bytes, one per frame's open and close (the
 * hot path).  Written here, without a call, when the thread's stream has
 * the function's definition and a packet open on this CPU, its id takes
 * 16 bits, the clock moved less than 2^27 ns and the buffer has room. */
__attribute__((always_inline)) static inline int frame_event(struct ctf *c, const struct ulma_walk *w, uint32_t thread, uint32_t func, uint64_t at,
			      uint32_t cpu, bool entry)
{
	uint32_t id = func < c->cap_id_of ? c->id_of[func] - 1 : UINT32_MAX; /* UINT32_MAX: none yet */
	struct ctf_thread *t = thread < c->cap_threads ? &c->threads[thread] : NULL;
	if (__builtin_expect(t && id < NARROW_IDS && id / 8 < t->cap_defined &&
				     (t->defined[id / 8] >> id % 8 & 1) && (uint64_t)cpu + 1 == t->open_cpu &&
				     at - t->last < (UINT64_C(1) << COMPACT_BITS) && t->buf.cap - t->buf.len >= 8,
			     1)) {
		uint64_t event = (entry ? EV_ENTRY : EV_EXIT) | (at & ((UINT64_C(1) << COMPACT_BITS) - 1)) << 5 |
				 (uint64_t)id << 32; /* header, then the id: 6 bytes of 8 stored */
		store_le64(t->buf.p + t->buf.len, event);
		t->buf.len += 6;
		t->last = at;
		c->ids[id].entries += entry;
		return __builtin_expect(t->buf.len - t->packet >= PACKET_AT, 0) ? close_packet(c, w, thread) : 0;
	}
	return frame_event_slow(c, w, thread, func, at, cpu, entry);
}

static int on_open(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	return frame_event(ctx, w, thread, f->func, f->start_ns, f->cpu, true);
}

static int on_close(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	return frame_event(ctx, w, thread, f->func, f->end_ns, f->cpu, false);
}

/* The compact events of e[0..n) in the thread's open packet, as
 * frame_event's fast path writes them, while each can be (a function
 * ready in the stream, the packet's CPU, the clock less than 2^27 ns on,
 * the packet and the buffer not full): how many.  A leaf, so that the
 * stream's buffer, length and clock stay in registers (each store into
 * the buffer could alias them). */
__attribute__((noinline)) static size_t put_compact(struct ctf *c, struct ctf_thread *t, const struct ulma_walk_edge *e,
							size_t n)
{
	struct ctf_func *const ids = c->ids;
	const uint16_t *const ready = t->ready;
	const uint32_t nready = t->cap_ready, cpu = (uint32_t)(t->open_cpu - 1);
	char *const buf = t->buf.p;
	/* an event from len on leaves 8 bytes' room (one 8-byte store) and
	 * ends before the packet's 64 KiB (where frame_event closes it) */
	const size_t room_end = t->buf.cap - 7, packet_end = t->packet + PACKET_AT - 6;
	const size_t stop = room_end < packet_end ? room_end : packet_end;
	size_t len = t->buf.len;
	uint64_t last = t->last;
	const struct ulma_walk_edge *p = e, *const end = e + n;
	for (; p < end; p++) {
		const uint32_t func = p->func;
		const uint64_t at = p->ns;
		const uint32_t id1 = func < nready ? ready[func] : 0;
		if (__builtin_expect(!(id1 && p->cpu == cpu && at - last < (UINT64_C(1) << COMPACT_BITS) && len < stop),
				     0))
			break;
		const uint32_t id = id1 - 1;
		const unsigned entry = p->open;
		/* as frame_event's: the class, the time's low 27 bits above its 5
		 * (their 32 bits: the cast drops the rest), then the id */
		store_le64(buf + len, (entry ? EV_ENTRY : EV_EXIT) | (uint64_t)(uint32_t)(at << 5) | (uint64_t)id << 32);
		len += 6;
		last = at;
		ids[id].entries += entry;
	}
	t->buf.len = len;
	t->last = last;
	return (size_t)(p - e);
}

/* A batch of the thread's opens and closes, when nothing is filtered:
 * put_compact's loop, and frame_event for an edge it cannot take, whose
 * function is then ready in the stream where its id is narrow (frame_event
 * wrote it, so the stream has its definition). */
static int on_edges(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_edge *e, size_t n)
{
	struct ctf *c = ctx;
	for (size_t i = 0; i < n; i++) {
		struct ctf_thread *t = thread < c->cap_threads ? &c->threads[thread] : NULL;
		if (t && t->open_cpu && (i += put_compact(c, t, e + i, n - i)) == n) /* a packet open: cap > len */
			break;
		const uint32_t func = e[i].func;
		int err = frame_event(c, w, thread, func, e[i].ns, e[i].cpu, e[i].open);
		if (err)
			return err;
		t = &c->threads[thread];
		uint32_t id1 = c->id_of[func]; /* its id + 1 */
		if (id1 - 1 < NARROW_IDS - 1 && !(func < t->cap_ready && t->ready[func])) {
			if (ulma_array_grow((void **)&t->ready, &t->cap_ready, func, sizeof(*t->ready)))
				return -ENOMEM;
			t->ready[func] = (uint16_t)id1;
		}
	}
	return 0;
}

/* An event of class id (a mark's) at `at` on the CPU of the thread's
 * latest event: its name, then for a counter its value, a little-endian
 * IEEE double. */
static int put_mark(struct ctf *c, const struct ulma_walk *w, uint32_t thread, unsigned id, uint64_t at,
		    const char *name, double value)
{
	size_t len = strlen(name) + 1;
	int err = 0;
	char *p = begin_event(c, w, thread, id, at, w->threads[thread].cpu, len + 8, &err);
	if (!p)
		return err;
	memcpy(p, name, len);
	p += len;
	if (id == EV_COUNTER) {
		uint64_t bits;
		memcpy(&bits, &value, sizeof(bits));
		p = le_at(p, bits, 8);
	}
	return end_event(c, w, thread, p);
}

/* A mark: an instant, a counter's value or the thread's name. */
static int on_mark(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_mark *m)
{
	struct ctf *c = ctx;
	unsigned id = m->kind == ULMA_EXT_INSTANT ? EV_INSTANT : m->kind == ULMA_EXT_COUNTER ? EV_COUNTER : EV_THREAD_NAME;
	if (ulma_array_grow((void **)&c->mark_names, &c->cap_mark_names, m->name, sizeof(*c->mark_names)))
		return -ENOMEM;
	if (!c->mark_names[m->name]) {
		const char *name = m->name < w->nfuncs && w->funcs[m->name].name ? w->funcs[m->name].name : "?";
		if (!(c->mark_names[m->name] = clean(name)))
			return -ENOMEM;
	}
	return put_mark(c, w, thread, id, m->at_ns, c->mark_names[m->name], m->value);
}

static int on_object(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_trace_object *o,
		     uint64_t at_ns)
{
	struct ctf *c = ctx;
	return ulma_xobjects_add(&c->objects, w, thread, o, at_ns);
}

static void free_streams(struct ctf *c)
{
	for (uint32_t i = 0; i < c->cap_threads; i++) {
		ulma_sbuf_free(&c->threads[i].buf);
		free(c->threads[i].defined);
		free(c->threads[i].ready);
	}
	free(c->threads);
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
			err = name ? put_mark(&o, w, thread, EV_COUNTER, pts[i].at, name, pts[i].v) : -ENOMEM;
			free(name);
		}
		if (!err && n && !(err = close_packet(&o, w, thread)))
			err = flush_thread(&o, w, thread);
		free(pts);
	}
	free_streams(&o);
	return err;
}

static const char metadata_types[] =
	"/* CTF 1.8 */\n"
	"\n"
	"typealias integer { size = 5; align = 1; signed = false; } := uint5_t;\n"
	"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	"typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
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
	"typealias integer { size = 27; align = 1; signed = false; map = clock.monotonic.value; }"
	" := uint27_clock_monotonic_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; }"
	" := uint64_clock_monotonic_t;\n"
	"\n"
	"struct event_header_compact {\n"
	"\tenum : uint5_t { compact = 0 ... 30, extended = 31 } id;\n"
	"\tvariant <id> {\n"
	"\t\tstruct {\n"
	"\t\t\tuint27_clock_monotonic_t timestamp;\n"
	"\t\t} compact;\n"
	"\t\tstruct {\n"
	"\t\t\tuint32_t id;\n"
	"\t\t\tuint64_clock_monotonic_t timestamp;\n"
	"\t\t} extended;\n"
	"\t} v;\n"
	"} align(8);\n"
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
	"\t\tuint32_t cpu_id;\n"
	"\t};\n"
	"\tevent.header := struct event_header_compact;\n"
	"};\n";

/* The event classes: id, name, fields (one declaration a line). */
static const struct {
	unsigned id;
	const char *name;
	const char *fields;
} event_classes[] = {
	{EV_ENTRY, "ulma:function_entry", "ulma_func_t func;"},
	{EV_EXIT, "ulma:function_exit", "ulma_func_t func;"},
	{EV_INSTANT, "ulma:instant", "string name;"},
	{EV_COUNTER, "ulma:counter", "string name;\ndouble_t value;"},
	{EV_THREAD_NAME, "ulma:thread_name", "string name;"},
	{EV_FUNCTION, "ulma:function", "uint32_t func;\nstring name;\nstring file;\nuint32_t line;\nulma_kind_t kind;"},
	{EV_ENTRY_WIDE, "ulma:function_entry", "uint32_t func;"},
	{EV_EXIT_WIDE, "ulma:function_exit", "uint32_t func;"},
};

/* A TSDL string literal's contents: s's UTF-8 (invalid bytes U+FFFD), a
 * quote and a backslash escaped, control characters as C escapes, which
 * babeltrace2 reads back and prints as it prints a string field's. */
static void put_tsdl_string(struct ulma_sbuf *b, const char *s)
{
	char *c = clean(s);
	if (!c) {
		b->nomem = true;
		return;
	}
	static const char named[] = "\a\b\t\n\v\f\r", letters[] = "abtnvfr";
	for (const unsigned char *p = (const unsigned char *)c; *p; p++) {
		const char *n = *p ? strchr(named, *p) : NULL;
		if (*p == '"' || *p == '\\')
			ulma_sbuf_printf(b, "\\%c", *p);
		else if (n)
			ulma_sbuf_printf(b, "\\%c", letters[n - named]);
		else if (*p < 0x20 || *p == 0x7f)
			ulma_sbuf_printf(b, "\\%03o", *p); /* octal: a hex escape would take the digits after it */
		else
			ulma_sbuf_put(b, (const char *)p, 1);
	}
	free(c);
}

static int by_entries(const void *a, const void *b, void *ctx)
{
	const struct ctf_func *ids = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	if (ids[x].entries != ids[y].entries)
		return ids[x].entries > ids[y].entries ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int by_id(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* ulma_func_t: the 16-bit function id, an enumeration whose labels are
 * the names of the CTF_LABELS most entered functions among those it
 * holds (a plain integer when there are none). */
static int put_func_type(struct ulma_sbuf *b, const struct ctf *c)
{
	uint32_t n = c->nids < NARROW_IDS ? c->nids : NARROW_IDS;
	uint32_t *order = malloc(((size_t)n + 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), by_entries, c->ids);
	uint32_t labels = n < CTF_LABELS ? n : CTF_LABELS;
	qsort(order, labels, sizeof(*order), by_id);
	if (labels == 0)
		ulma_sbuf_puts(b, "typealias integer { size = 16; align = 8; signed = false; } := ulma_func_t;\n\n");
	else
		ulma_sbuf_puts(b, "typealias enum : uint16_t {\n");
	for (uint32_t i = 0; i < labels; i++) {
		ulma_sbuf_puts(b, "\t\"");
		put_tsdl_string(b, c->ids[order[i]].name);
		ulma_sbuf_printf(b, "\" = %u%s\n", order[i], i + 1 < labels ? "," : "");
	}
	if (labels)
		ulma_sbuf_puts(b, "} := ulma_func_t;\n\n");
	free(order);
	return 0;
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
	int err = put_func_type(&b, c);
	ulma_sbuf_puts(&b, metadata_stream);
	for (size_t i = 0; i < sizeof(event_classes) / sizeof(event_classes[0]); i++) {
		ulma_sbuf_printf(&b, "\nevent {\n\tname = \"%s\";\n\tid = %u;\n\tstream_id = 0;\n\tfields := struct {\n",
				 event_classes[i].name, event_classes[i].id);
		for (const char *f = event_classes[i].fields; *f;) {
			size_t len = strcspn(f, "\n");
			ulma_sbuf_puts(&b, "\t\t");
			ulma_sbuf_put(&b, f, len);
			ulma_sbuf_puts(&b, "\n");
			f += len + (f[len] == '\n');
		}
		ulma_sbuf_puts(&b, "\t};\n};\n");
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/metadata", c->dir);
	FILE *f = err || b.nomem ? NULL : fopen(path, "wb");
	if (!err)
		err = b.nomem ? -ENOMEM : f ? 0 : -EIO;
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
	struct ulma_walk_sink sink = {.ctx = &c, .on_open = on_open, .on_close = on_close, .on_mark = on_mark,
				      .on_object = on_object, .on_edges = on_edges};
	int err = ulma_export_walk(in, o, &w, &sink, res);
	for (uint32_t i = 0; i < c.cap_threads && !err; i++)
		if (!(err = close_packet(&c, &w, i)))
			err = flush_thread(&c, &w, i);
	if (!err)
		err = write_objects(&c, &w);
	if (!err)
		err = write_metadata(&c, &w);
	free_streams(&c);
	for (uint32_t i = 0; i < c.nids; i++) {
		free(c.ids[i].name);
		free(c.ids[i].file);
	}
	for (uint32_t i = 0; i < c.cap_mark_names; i++)
		free(c.mark_names[i]);
	free(c.ids);
	free(c.id_of);
	free(c.mark_names);
	ulma_xobjects_free(&c.objects);
	ulma_walk_free(&w);
	return err;
}
