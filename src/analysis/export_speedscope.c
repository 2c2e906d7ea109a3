/* export_speedscope.c - speedscope's own JSON format
 * (https://www.speedscope.app/file-format-schema.json, specified by
 * speedscope's src/lib/file-format-spec.ts): shared frames, then one
 * "evented" profile per thread whose events open ("O") and close ("C")
 * frames at nanosecond times since the trace start, balanced and in
 * non-decreasing time order, as the walker delivers them.
 *
 * Profiles must be written one after another, but the trace interleaves
 * threads.  So the first thread with an event (the lead) is written
 * straight out, as its events come, as the first profile, with the keys
 * known only at the end (its name, start and end) after its events; each
 * other thread's events collect in a 64 KiB buffer that is spilled, when
 * full, as a block to one unlinked temporary file (in $TMPDIR), and at the
 * end its profile is assembled by copying its blocks in order.  The shared
 * frames, known at the end, come after the profiles (JSON's keys have no
 * order).  Memory stays bounded by threads x 64 KiB plus the block list,
 * and a single-threaded trace never touches the temporary file.
 * Frames are numbered in order of first use, so only functions that appear
 * are listed.
 *
 * speedscope draws a frame's name and nothing else on the flame chart, in
 * its tooltip and in its tables; the file and line show only in the
 * detail panel of a selected frame, and the format has no category nor
 * colour.  So a native function's name ends in " [native]" and a zone's in
 * " [zone]", and every frame whose file and line are known carries them.
 * The format has no instants nor counters: marks are left out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export.h"
#include "export_text.h"
#include "ulma/shm.h"

#define SPILL_AT 65536

struct block {
	long offset;
	size_t len;
};

struct ss_thread {
	struct ulma_sbuf buf;
	struct block *blocks;
	uint32_t nblocks;
	uint32_t cap;
	uint64_t first_at, last_at;
	uint64_t events;
	struct ulma_running_decimal at; /* the last event's time, in decimal */
};

#define NO_LEAD UINT32_MAX

struct speedscope {
	FILE *out;
	uint32_t lead; /* the thread written straight out, or NO_LEAD before the first event */
	FILE *spill;
	struct ss_thread *threads;
	uint32_t nthreads;
	uint32_t *frame_of; /* func key -> frame index + 1, 0 if unused */
	uint32_t nframe_of;
	uint32_t *frame_key; /* frame index -> func key */
	uint32_t nframes;
	uint32_t cap_frames;
};

static FILE *open_spill(void)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof(path), "%s/ulma-speedscope-XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	unlink(path);
	FILE *f = fdopen(fd, "w+b");
	if (!f)
		close(fd);
	return f;
}

static int spill(struct speedscope *s, struct ss_thread *t)
{
	if (t->buf.nomem)
		return -ENOMEM;
	if (t->buf.len == 0)
		return 0;
	if (t == &s->threads[s->lead]) {
		int err = ulma_sbuf_flush(&t->buf, s->out);
		t->buf.len = 0;
		return err;
	}
	if (t->nblocks == t->cap) {
		uint32_t ncap = t->cap ? t->cap * 2 : 16;
		struct block *b = realloc(t->blocks, (size_t)ncap * sizeof(*b));
		if (!b)
			return -ENOMEM;
		t->blocks = b;
		t->cap = ncap;
	}
	if (fseek(s->spill, 0, SEEK_END) != 0)
		return -EIO;
	long off = ftell(s->spill);
	if (off < 0 || fwrite(t->buf.p, 1, t->buf.len, s->spill) != t->buf.len)
		return -EIO;
	t->blocks[t->nblocks++] = (struct block){off, t->buf.len};
	t->buf.len = 0;
	return 0;
}

static int frame_index(struct speedscope *s, uint32_t key, uint32_t *out)
{
	if (key >= s->nframe_of) {
		uint32_t n = key + 1 > s->nframe_of * 2 ? key + 1 : s->nframe_of * 2;
		uint32_t *p = realloc(s->frame_of, (size_t)n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		memset(p + s->nframe_of, 0, (size_t)(n - s->nframe_of) * sizeof(*p));
		s->frame_of = p;
		s->nframe_of = n;
	}
	if (!s->frame_of[key]) {
		if (s->nframes == s->cap_frames) {
			uint32_t ncap = s->cap_frames ? s->cap_frames * 2 : 256;
			uint32_t *p = realloc(s->frame_key, (size_t)ncap * sizeof(*p));
			if (!p)
				return -ENOMEM;
			s->frame_key = p;
			s->cap_frames = ncap;
		}
		s->frame_key[s->nframes++] = key;
		s->frame_of[key] = s->nframes;
	}
	*out = s->frame_of[key] - 1;
	return 0;
}

static struct ss_thread *thread_of(struct speedscope *s, uint32_t thread)
{
	if (thread >= s->nthreads) {
		uint32_t n = thread + 1 > s->nthreads * 2 ? thread + 1 : s->nthreads * 2;
		struct ss_thread *p = realloc(s->threads, (size_t)n * sizeof(*p));
		if (!p)
			return NULL;
		memset(p + s->nthreads, 0, (size_t)(n - s->nthreads) * sizeof(*p));
		s->threads = p;
		s->nthreads = n;
	}
	return &s->threads[thread];
}

#define EVENT_ROOM 80 /* an event's most bytes: 21 + 10 digits of frame + 6 + 24 (the time's copy) + 1 */

/* One event at p (EVENT_ROOM bytes of room), after a comma but for the
 * thread's first; returns the end. */
static inline char *put_event(struct ss_thread *t, char *p, bool open, uint32_t frame, uint64_t at)
{
	*p = ',';
	p += t->events != 0;
	memcpy(p, open ? "{\"type\":\"O\",\"frame\":" : "{\"type\":\"C\",\"frame\":", 20);
	p = ulma_put_decimal(p + 20, frame);
	memcpy(p, ",\"at\":", 6);
	p = ulma_put_running_decimal(&t->at, p + 6, at);
	*p++ = '}';
	t->events++;
	return p;
}

static int event(struct speedscope *s, const struct ulma_walk *w, uint32_t thread, bool open, uint32_t func,
		 uint64_t at)
{
	struct ss_thread *t = thread_of(s, thread);
	uint32_t frame;
	int err;
	if (!t)
		return -ENOMEM;
	if ((err = frame_index(s, w->funcs[func].key, &frame)))
		return err;
	if (t->events == 0)
		t->first_at = at;
	if (__builtin_expect(s->lead == NO_LEAD, 0)) {
		s->lead = thread;
		ulma_sbuf_puts(&t->buf, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
					"\"profiles\":[\n{\"type\":\"evented\",\"unit\":\"nanoseconds\",\"events\":[");
	}
	t->last_at = at;
	char *p = ulma_sbuf_room(&t->buf, EVENT_ROOM);
	if (!p)
		return -ENOMEM;
	t->buf.len = (size_t)(put_event(t, p, open, frame, at) - t->buf.p);
	t->buf.p[t->buf.len] = 0;
	return t->buf.len >= SPILL_AT ? spill(s, t) : 0;
}

static int on_open(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	return event(ctx, w, thread, true, f->func, f->start_ns);
}

static int on_close(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	return event(ctx, w, thread, false, f->func, f->end_ns);
}

/* A batch of the thread's opens and closes, when nothing is filtered:
 * what on_open and on_close write, the thread and the buffer looked up
 * once, an event written in place where its frame has its index and the
 * buffer room (the hot path). */
static int on_edges(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_edge *e, size_t n)
{
	struct speedscope *s = ctx;
	struct ss_thread *t = thread_of(s, thread);
	int err = 0;
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < n && !err; i++) {
		uint32_t key = w->funcs[e[i].func].key;
		if (__builtin_expect(t->events == 0 || key >= s->nframe_of || !s->frame_of[key] ||
					     t->buf.cap - t->buf.len <= EVENT_ROOM,
				     0)) {
			err = event(s, w, thread, e[i].open, e[i].func, e[i].ns); /* the first, a new frame, a new block */
			continue;
		}
		char *p = put_event(t, t->buf.p + t->buf.len, e[i].open, s->frame_of[key] - 1, e[i].ns);
		t->buf.len = (size_t)(p - t->buf.p);
		if (__builtin_expect(t->buf.len >= SPILL_AT, 0))
			err = spill(s, t);
	}
	if (n && !err) {
		t->last_at = e[n - 1].ns;
		t->buf.p[t->buf.len] = 0;
	}
	return err;
}

static int copy_blocks(struct speedscope *s, const struct ss_thread *t, FILE *out)
{
	char buf[65536];
	for (uint32_t i = 0; i < t->nblocks; i++) {
		if (fseek(s->spill, t->blocks[i].offset, SEEK_SET) != 0)
			return -EIO;
		for (size_t left = t->blocks[i].len; left;) {
			size_t n = left < sizeof(buf) ? left : sizeof(buf);
			if (fread(buf, 1, n, s->spill) != n || fwrite(buf, 1, n, out) != n)
				return -EIO;
			left -= n;
		}
	}
	return 0;
}

/* A profile's keys after its events: its name, first and last time. */
static void profile_tail(struct ulma_sbuf *b, const struct ulma_walk *w, uint32_t thread, const struct ss_thread *t)
{
	char label[ULMA_WALK_LABEL_MAX];
	ulma_walk_thread_label(w, &w->threads[thread], label, sizeof(label));
	ulma_sbuf_puts(b, "],\"name\":");
	ulma_sbuf_json(b, label);
	ulma_sbuf_printf(b, ",\"startValue\":%llu,\"endValue\":%llu}", (unsigned long long)t->first_at,
			 (unsigned long long)t->last_at);
}

/* The rest, once the lead thread's events are out: its tail, the other
 * profiles, the shared frames and the file's name. */
static int write_file(struct speedscope *s, const struct ulma_walk *w, FILE *out)
{
	struct ulma_sbuf b = {0};
	int err = 0;
	if (s->lead == NO_LEAD) {
		ulma_sbuf_puts(&b, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n\"profiles\":[");
	} else {
		if ((err = spill(s, &s->threads[s->lead])))
			return err;
		profile_tail(&b, w, s->lead, &s->threads[s->lead]);
	}
	uint32_t written = 1, active = 0; /* speedscope opens the program's main thread's profile */
	for (uint32_t i = 0; i < s->nthreads && i < w->nthreads && !err; i++) {
		struct ss_thread *t = &s->threads[i];
		if (t->events == 0 || i == s->lead)
			continue;
		if (w->threads[i].tid == w->pid && w->threads[i].pid == w->pid)
			active = written;
		written++;
		if ((err = spill(s, t)))
			break;
		ulma_sbuf_puts(&b, ",\n{\"type\":\"evented\",\"unit\":\"nanoseconds\",\"events\":["); /* after the lead's */
		if ((err = ulma_sbuf_flush(&b, out)) || (err = copy_blocks(s, t, out)))
			break;
		profile_tail(&b, w, i, t);
	}
	ulma_sbuf_puts(&b, "\n],\n\"shared\":{\"frames\":[");
	for (uint32_t i = 0; i < s->nframes && !err; i++) {
		const struct ulma_walk_func *f = &w->funcs[s->frame_key[i]];
		ulma_sbuf_puts(&b, i ? ",\n{\"name\":" : "\n{\"name\":");
		if (f->kind == ULMA_DEF_NATIVE || f->kind == ULMA_DEF_ZONE) {
			struct ulma_sbuf name = {0};
			ulma_sbuf_printf(&name, "%s [%s]", f->name, ulma_walk_kind_name(f->kind));
			ulma_sbuf_json(&b, name.p ? name.p : "");
			if (name.nomem)
				b.nomem = true;
			ulma_sbuf_free(&name);
		} else {
			ulma_sbuf_json(&b, f->name);
		}
		if (ulma_walk_func_located(f)) {
			ulma_sbuf_puts(&b, ",\"file\":");
			ulma_sbuf_json(&b, f->file);
			ulma_sbuf_printf(&b, ",\"line\":%u", f->line);
		}
		ulma_sbuf_puts(&b, "}");
		if (b.len >= SPILL_AT)
			err = ulma_sbuf_flush(&b, out);
	}
	ulma_sbuf_puts(&b, "]},\n\"name\":");
	ulma_sbuf_json(&b, w->command && *w->command ? w->command : "ulma trace");
	char note[ULMA_WALK_NOTE_MAX], exporter[ULMA_WALK_NOTE_MAX + 16];
	ulma_walk_times_note(w, note, sizeof(note));
	snprintf(exporter, sizeof(exporter), "ulma export: %s", note);
	ulma_sbuf_puts(&b, ",\"exporter\":");
	ulma_sbuf_json(&b, exporter);
	ulma_sbuf_printf(&b, ",\"activeProfileIndex\":%u}\n", active);
	if (!err)
		err = ulma_sbuf_flush(&b, out);
	ulma_sbuf_free(&b);
	return err;
}

int ulma_export_speedscope(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
			   struct ulma_export_result *res)
{
	struct speedscope s = {.out = out, .lead = NO_LEAD};
	struct ulma_walk w;
	(void)dir;
	s.spill = open_spill();
	if (!s.spill)
		return -errno;
	struct ulma_walk_sink sink = {.ctx = &s, .on_open = on_open, .on_close = on_close, .on_edges = on_edges};
	int err = ulma_export_walk(in, o, &w, &sink, res);
	if (!err)
		err = write_file(&s, &w, out);
	for (uint32_t i = 0; i < s.nthreads; i++) {
		ulma_sbuf_free(&s.threads[i].buf);
		free(s.threads[i].blocks);
	}
	free(s.threads);
	free(s.frame_of);
	free(s.frame_key);
	fclose(s.spill);
	ulma_walk_free(&w);
	return err;
}
