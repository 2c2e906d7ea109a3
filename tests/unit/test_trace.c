/* test_trace.c - the trace file format (src/core/trace_writer.h,
 * src/core/trace_reader.h): a writer -> file -> reader round trip checking
 * every visited record (META, definitions, threads, nested events with
 * direct recursion, cpu changes, a LOST marker, END) and the chunk layout;
 * a large stream split into several chunks; a trace cut at every byte
 * length; flipped bytes; hand-built chunks with valid checksums but
 * inconsistent content; foreign files (a directory, a FIFO with no
 * writer: refused at once); visitor early stop. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/crc32c.h"
#include "core/trace_reader.h"
#include "core/trace_writer.h"
#include "core/varint.h"
#include "tap.h"
#include "ulma/shm.h"
#include "ulma/trace_format.h"

/* the writer's direct-recursion flag, from the parent's id as the tests state it */
static bool same_fn(uint32_t id, uint32_t parent)
{
	return id == parent && id != 0;
}

/* ---------- helpers ---------- */

static char *temp_path(void)
{
	const char *dir = getenv("TMPDIR");
	char *path = malloc(4096);
	if (!path)
		return NULL;
	snprintf(path, 4096, "%s/ulma-test-trace-XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(path);
	if (fd < 0) {
		free(path);
		return NULL;
	}
	close(fd);
	return path;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	*len = 0;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0) {
		long n = ftell(f);
		rewind(f);
		data = malloc(n > 0 ? (size_t)n : 1);
		if (data && fread(data, 1, (size_t)n, f) == (size_t)n)
			*len = (size_t)n;
		else {
			free(data);
			data = NULL;
		}
	}
	fclose(f);
	return data;
}

/* A FILE over a byte range; fmemopen refuses size 0, so use /dev/null then. */
static FILE *open_bytes(const uint8_t *data, size_t len)
{
	if (len == 0)
		return fopen("/dev/null", "rb");
	return fmemopen((void *)data, len, "rb");
}

static uint32_t get_u32le(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_u32le(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* Chunks of a well-formed file, found by walking the headers. */
struct chunk_info {
	size_t offset; /* of the chunk header */
	uint32_t type;
	uint32_t len;
	uint64_t events; /* EVENTS: the count in its prefix */
};

static size_t walk_chunks(const uint8_t *data, size_t len, struct chunk_info *out, size_t max)
{
	size_t n = 0, off = ULMA_TRACE_FILE_HEADER;
	while (off + ULMA_TRACE_CHUNK_HEADER <= len && n < max) {
		uint32_t type = get_u32le(data + off), clen = get_u32le(data + off + 4);
		if (off + ULMA_TRACE_CHUNK_HEADER + clen > len)
			break;
		out[n].offset = off;
		out[n].type = type;
		out[n].len = clen;
		out[n].events = 0;
		if (type == ULMA_CHUNK_EVENTS) {
			const uint8_t *p = data + off + ULMA_TRACE_CHUNK_HEADER, *end = p + clen;
			uint64_t serial, count;
			if (ulma_varint_get(&p, end, &serial) == 0 && ulma_varint_get(&p, end, &count) == 0)
				out[n].events = count;
		}
		n++;
		off += ULMA_TRACE_CHUNK_HEADER + clen;
	}
	return n;
}

/* Growable byte buffer for hand-built traces. */
struct bytes {
	uint8_t data[4096];
	size_t len;
};

static void b_varint(struct bytes *b, uint64_t v)
{
	b->len += ulma_varint_put(b->data + b->len, v);
}

static void b_raw(struct bytes *b, const void *p, size_t n)
{
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void b_file_header(struct bytes *b)
{
	uint8_t fh[ULMA_TRACE_FILE_HEADER] = {0};
	memcpy(fh, ULMA_TRACE_MAGIC, 8);
	put_u32le(fh + 8, ULMA_TRACE_VERSION);
	b_raw(b, fh, sizeof(fh));
}

static void b_chunk(struct bytes *b, uint32_t type, const struct bytes *payload)
{
	uint8_t h[ULMA_TRACE_CHUNK_HEADER];
	put_u32le(h, type);
	put_u32le(h + 4, (uint32_t)payload->len);
	put_u32le(h + 8, ulma_crc32c(0, payload->data, payload->len));
	b_raw(b, h, sizeof(h));
	b_raw(b, payload->data, payload->len);
}

static void b_meta_chunk(struct bytes *b)
{
	struct bytes m = {.len = 0};
	b_varint(&m, 0);    /* flags */
	b_varint(&m, 99);   /* pid */
	b_varint(&m, 10);   /* start ticks */
	b_varint(&m, 20);   /* start ns */
	b_varint(&m, 1000000000); /* tick rate */
	b_varint(&m, 0);    /* command length */
	b_chunk(b, ULMA_CHUNK_META, &m);
}

/* ---------- the recording visitor ---------- */

struct seen_func {
	uint32_t index, id, line;
	uint8_t kind;
	char name[64];
	char file[64];
};

struct seen_thread {
	uint32_t index, pid, tid;
	uint64_t serial;
};

struct record {
	struct ulma_trace_meta meta;
	char command[128];
	int metas;
	struct seen_func funcs[16];
	int nfuncs;
	struct seen_thread threads[8];
	int nthreads;
	struct ulma_trace_event *events;
	size_t nevents, cap;
	struct ulma_trace_end end;
	int ends;
	int stop_after; /* on_event returns 99 once this many events were seen (0: never) */
	uint32_t proc_pid[4];
	char proc_name[4][1100];
	size_t proc_len[4];
	uint32_t proc_ppid[4];
	int nprocs;
	int order_bad;  /* a callback came before META or after END */
	struct ulma_trace_mark marks[8];
	size_t events_before_mark[8]; /* events delivered when each mark came */
	int nmarks;
	char source_path[64];
	char source_text[256];
	unsigned source_flags;
	size_t events_before_source;
	int nsources;
};

static void copy_str(char *dst, size_t cap, const char *s, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = 0;
}

static int rec_meta(void *ctx, const struct ulma_trace_meta *m)
{
	struct record *r = ctx;
	if (r->metas || r->ends)
		r->order_bad++;
	r->metas++;
	r->meta = *m;
	copy_str(r->command, sizeof(r->command), m->command ? m->command : "", m->command ? strlen(m->command) : 0);
	r->meta.command = r->command;
	return 0;
}

static int rec_func(void *ctx, const struct ulma_trace_func *f)
{
	struct record *r = ctx;
	if (!r->metas || r->ends)
		r->order_bad++;
	if (r->nfuncs >= 16)
		return -E2BIG;
	struct seen_func *s = &r->funcs[r->nfuncs++];
	s->index = f->index;
	s->id = f->id;
	s->line = f->line;
	s->kind = f->kind;
	copy_str(s->name, sizeof(s->name), f->name, f->name_len);
	copy_str(s->file, sizeof(s->file), f->file, f->file_len);
	if (strlen(s->name) != f->name_len || strlen(s->file) != f->file_len)
		r->order_bad++;
	return 0;
}

static int rec_thread(void *ctx, const struct ulma_trace_thread *t)
{
	struct record *r = ctx;
	if (!r->metas || r->ends)
		r->order_bad++;
	if (r->nthreads >= 8)
		return -E2BIG;
	r->threads[r->nthreads++] = (struct seen_thread){t->index, t->pid, t->tid, t->serial};
	return 0;
}

static int rec_event(void *ctx, const struct ulma_trace_event *e)
{
	struct record *r = ctx;
	if (!r->metas || r->ends)
		r->order_bad++;
	if (r->nevents == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct ulma_trace_event *p = realloc(r->events, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		r->events = p;
		r->cap = cap;
	}
	r->events[r->nevents++] = *e;
	if (r->stop_after && r->nevents == (size_t)r->stop_after)
		return 99;
	return 0;
}

static int rec_end(void *ctx, const struct ulma_trace_end *e)
{
	struct record *r = ctx;
	if (!r->metas || r->ends)
		r->order_bad++;
	r->ends++;
	r->end = *e;
	return 0;
}

static int rec_process(void *ctx, const struct ulma_trace_process *p)
{
	struct record *r = ctx;
	if (!r->metas || r->ends)
		r->order_bad++;
	if (r->nprocs < 4) {
		r->proc_pid[r->nprocs] = p->pid;
		r->proc_len[r->nprocs] = p->name_len;
		r->proc_ppid[r->nprocs] = p->ppid;
		copy_str(r->proc_name[r->nprocs], sizeof(r->proc_name[0]), p->name, p->name_len);
	}
	r->nprocs++;
	return 0;
}

static int rec_mark(void *ctx, const struct ulma_trace_mark *m)
{
	struct record *r = ctx;
	if (r->nmarks < 8) {
		r->marks[r->nmarks] = *m;
		r->events_before_mark[r->nmarks] = r->nevents;
	}
	r->nmarks++;
	return 0;
}

static int rec_source(void *ctx, const struct ulma_trace_source *src)
{
	struct record *r = ctx;
	copy_str(r->source_path, sizeof(r->source_path), src->path, src->path_len);
	copy_str(r->source_text, sizeof(r->source_text), src->text, src->text_len);
	r->source_flags = src->flags;
	r->events_before_source = r->nevents;
	r->nsources++;
	return 0;
}

static struct ulma_trace_visitor recorder(struct record *r)
{
	memset(r, 0, sizeof(*r));
	return (struct ulma_trace_visitor){r,	    rec_meta, rec_func, rec_thread, rec_event, rec_end,
					   NULL,    rec_process, NULL,  NULL,	    rec_mark, rec_source, NULL, NULL, NULL, NULL, NULL};
}

/* ---------- the round trip ---------- */

struct expect_ev {
	uint32_t thread;
	uint8_t kind;
	uint32_t func;
	uint64_t ticks;
	uint32_t cpu;
	uint64_t count;
};

/* Reader order: chunk by chunk (A's first chunk, B's first, then the
 * second chunks after the mid-way flush). */
static const struct expect_ev expected[] = {
	{0, ULMA_EV_ENTER, 0, 1100, 1, 0},  /* A: main */
	{0, ULMA_EV_ENTER, 1, 1200, 1, 0},  /* A: fib */
	{0, ULMA_EV_ENTER, 1, 1300, 1, 0},  /* A: fib (ENTER_SAME) */
	{0, ULMA_EV_ENTER, 1, 1350, 1, 0},  /* A: fib (ENTER_SAME) */
	{1, ULMA_EV_ENTER, 1, 1250, 0, 0},  /* B: fib */
	{1, ULMA_EV_EXIT, 1, 1260, 0, 0},   /* B */
	{0, ULMA_EV_EXIT, 1, 1400, 1, 0},   /* A: frames opened in the previous chunk */
	{0, ULMA_EV_EXIT, 1, 1450, 1, 0},
	{0, ULMA_EV_EXIT, 1, 1500, 2, 0},   /* A: moved to cpu 2 */
	{0, ULMA_EV_LOST, 0, 1600, 2, 42},  /* A: 42 records lost */
	{0, ULMA_EV_ENTER, 3, 1700, 2, 0},  /* A: helper (defined late) */
	{0, ULMA_EV_ENTER, 2, 1710, 3, 0},  /* A: len, on cpu 3 */
	{0, ULMA_EV_EXIT, 2, 1720, 3, 0},
	{0, ULMA_EV_EXIT, 3, 1800, 3, 0},
	{0, ULMA_EV_EXIT, 0, 1900, 3, 0},
	{1, ULMA_EV_ENTER, 0, 1950, 0, 0},  /* B: main */
	{1, ULMA_EV_EXIT, 0, 1950, 0, 0},   /* B: written at 1940, clamped to 1950 */
	{1, ULMA_EV_ENTER, 1, 1990, 0, 0},  /* B: fib, still open at the end */
};
#define NEXPECTED (sizeof(expected) / sizeof(expected[0]))

static const char *const COMMAND = "python3 app.py --n 3";

static int write_sample(const char *path, uint64_t *bytes_after_flush)
{
	struct ulma_trace_meta meta = {ULMA_META_TSC | ULMA_META_LOSSLESS, 4242, 1000, 777000, 2500000000u,
				       COMMAND, 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *a, *b;
	int err = ulma_trace_writer_open(path, &meta, &w);
	if (err)
		return err;
	ulma_trace_define_file(w, 0, "app.py", 6);
	ulma_trace_define_file(w, 9, "/usr/lib/lib.py", 15);
	ulma_trace_define_func(w, 100, ULMA_DEF_PY, 0, 10, "main", 4);
	ulma_trace_define_func(w, 101, ULMA_DEF_PY, 0, 20, "fib", 3);
	ulma_trace_define_func(w, 7, ULMA_DEF_C, 9, 0, "len", 3);
	if ((err = ulma_trace_stream_open(w, 0, 4242, 4242, &a)) ||
	    (err = ulma_trace_stream_open(w, 3, 4242, 4250, &b))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	ulma_trace_enter(a, 1100, 1, 100, same_fn(100, 0));
	ulma_trace_enter(a, 1200, 1, 101, same_fn(101, 100));
	ulma_trace_enter(a, 1300, 1, 101, same_fn(101, 101));
	ulma_trace_enter(b, 1250, 0, 101, same_fn(101, 0));
	ulma_trace_exit(b, 1260, 0);
	ulma_trace_enter(a, 1350, 1, 101, same_fn(101, 101));
	if ((err = ulma_trace_writer_flush(w))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	*bytes_after_flush = ulma_trace_writer_bytes(w);
	ulma_trace_exit(a, 1400, 1);
	ulma_trace_exit(a, 1450, 1);
	ulma_trace_exit(a, 1500, 2);
	ulma_trace_lost(a, 1600, 42);
	ulma_trace_define_func(w, 200, ULMA_DEF_PY, 9, 33, "helper", 6);
	ulma_trace_enter(a, 1700, 2, 200, same_fn(200, 100));
	ulma_trace_enter(a, 1710, 3, 7, same_fn(7, 200));
	ulma_trace_exit(a, 1720, 3);
	ulma_trace_exit(a, 1800, 3);
	ulma_trace_exit(a, 1900, 3);
	ulma_trace_enter(b, 1950, 0, 100, same_fn(100, 0));
	ulma_trace_exit(b, 1940, 0);
	ulma_trace_enter(b, 1990, 0, 101, same_fn(101, 0));
	struct ulma_trace_end end = {2000, 778000, NEXPECTED, 42, ULMA_FAIL_NO_SLOT | ULMA_FAIL_DEFS_FULL, -1, 0, 0, 0, 0, 0, 0, 0};
	return ulma_trace_writer_close(w, &end);
}

static void check_events(const struct record *r, size_t n, const char *what)
{
	size_t bad = 0, first = 0;
	for (size_t i = 0; i < n && i < r->nevents; i++) {
		const struct ulma_trace_event *e = &r->events[i];
		const struct expect_ev *x = &expected[i];
		if (e->thread != x->thread || e->kind != x->kind || e->func != x->func || e->ticks != x->ticks ||
		    e->cpu != x->cpu || e->count != x->count) {
			if (!bad++)
				first = i;
		}
	}
	CHECK(r->nevents == n && bad == 0, "%s: %zu events match (got %zu, %zu wrong)", what, n, r->nevents, bad);
	if (bad) {
		const struct ulma_trace_event *e = &r->events[first];
		const struct expect_ev *x = &expected[first];
		tap_diag("event %zu: thread %u kind %u func %u ticks %llu cpu %u count %llu; expected "
			 "thread %u kind %u func %u ticks %llu cpu %u count %llu",
			 first, e->thread, e->kind, e->func, (unsigned long long)e->ticks, e->cpu,
			 (unsigned long long)e->count, x->thread, x->kind, x->func, (unsigned long long)x->ticks,
			 x->cpu, (unsigned long long)x->count);
	}
}

/* The first EVENTS chunk of thread A, byte for byte. */
static void check_first_events_payload(const uint8_t *data, const struct chunk_info *c)
{
	struct bytes x = {.len = 0};
	b_varint(&x, 0);    /* serial */
	b_varint(&x, 4);    /* count */
	b_varint(&x, 1);    /* first cpu */
	b_varint(&x, 1100); /* absolute time of the first event */
	b_varint(&x, 0 << 2 | ULMA_TAG_ENTER);
	b_varint(&x, 100);
	b_varint(&x, 100 << 2 | ULMA_TAG_ENTER);
	b_varint(&x, 101);
	b_varint(&x, 100 << 2 | ULMA_TAG_ENTER_SAME); /* recursion costs no id bytes */
	b_varint(&x, 50 << 2 | ULMA_TAG_ENTER_SAME);
	CHECK(c->len == x.len && memcmp(data + c->offset + ULMA_TRACE_CHUNK_HEADER, x.data, x.len) == 0,
	      "thread A's first EVENTS payload is exactly the delta-varint encoding with ENTER_SAME (%u bytes)",
	      c->len);
}

static void test_round_trip(void)
{
	char *path = temp_path();
	if (!CHECK(path != NULL, "temp file"))
		return;
	uint64_t mid = 0;
	CHECK_EQ_I64(write_sample(path, &mid), 0, "write the sample trace");
	size_t len;
	uint8_t *data = slurp(path, &len);
	if (!CHECK(data && len > 100, "read the file back (%zu bytes)", len))
		goto out;
	CHECK(memcmp(data, ULMA_TRACE_MAGIC, 8) == 0 && get_u32le(data + 8) == ULMA_TRACE_VERSION &&
		      get_u32le(data + 12) == 0,
	      "file header: magic, version 1, reserved zero");

	struct chunk_info ch[32];
	size_t nch = walk_chunks(data, len, ch, 32);
	static const uint32_t layout[] = {ULMA_CHUNK_META,   ULMA_CHUNK_DEFS,   ULMA_CHUNK_THREAD, ULMA_CHUNK_THREAD,
					  ULMA_CHUNK_EVENTS, ULMA_CHUNK_EVENTS, ULMA_CHUNK_DEFS,   ULMA_CHUNK_EVENTS,
					  ULMA_CHUNK_EVENTS, ULMA_CHUNK_END};
	int layout_ok = nch == sizeof(layout) / sizeof(layout[0]) &&
			ch[nch - 1].offset + ULMA_TRACE_CHUNK_HEADER + ch[nch - 1].len == len;
	for (size_t i = 0; layout_ok && i < nch; i++)
		if (ch[i].type != layout[i])
			layout_ok = 0;
	CHECK(layout_ok, "chunks: META DEFS THREAD THREAD EVENTS EVENTS DEFS EVENTS EVENTS END (%zu chunks)", nch);
	int crc_ok = 1;
	for (size_t i = 0; i < nch; i++)
		if (ulma_crc32c(0, data + ch[i].offset + ULMA_TRACE_CHUNK_HEADER, ch[i].len) !=
		    get_u32le(data + ch[i].offset + 8))
			crc_ok = 0;
	CHECK(crc_ok, "every chunk carries the CRC-32C of its payload");
	CHECK_EQ_U64(mid, layout_ok ? ch[6].offset : 0, "writer_bytes after the flush counts the flushed chunks");
	if (layout_ok) {
		check_first_events_payload(data, &ch[4]);
		CHECK(ch[4].events == 4 && ch[5].events == 2 && ch[7].events == 9 && ch[8].events == 3,
		      "EVENTS counts 4, 2, 9, 3 (cpu changes are not events)");
	}

	struct record r;
	struct ulma_trace_visitor v = recorder(&r);
	struct ulma_trace_status st;
	int rc = ulma_trace_read_path(path, &v, &st);
	CHECK_EQ_I64(rc, 0, "read the sample trace");
	if (rc)
		tap_diag("reader error: %s", st.error);
	CHECK(st.complete, "status.complete");
	CHECK_EQ_U64(st.bytes, len, "status.bytes is the file size");
	CHECK_EQ_U64(st.events, NEXPECTED, "status.events");
	CHECK_EQ_U64(st.last_ticks, 1990, "status.last_ticks is the latest event");
	CHECK(r.order_bad == 0, "META first, END last, strings sized as reported");

	CHECK(r.metas == 1 && r.meta.flags == (ULMA_META_TSC | ULMA_META_LOSSLESS) && r.meta.pid == 4242 &&
		      r.meta.start_ticks == 1000 && r.meta.start_ns == 777000 && r.meta.tick_hz == 2500000000u &&
		      strcmp(r.command, COMMAND) == 0,
	      "META: flags, pid, start pair, tick rate, command");

	CHECK_EQ_U64(r.nfuncs, 4, "four functions visited");
	static const struct seen_func fx[] = {
		{0, 100, 10, ULMA_DEF_PY, "main", "app.py"},
		{1, 101, 20, ULMA_DEF_PY, "fib", "app.py"},
		{2, 7, 0, ULMA_DEF_C, "len", "/usr/lib/lib.py"},
		{3, 200, 33, ULMA_DEF_PY, "helper", "/usr/lib/lib.py"},
	};
	for (int i = 0; i < r.nfuncs && i < 4; i++)
		CHECK(r.funcs[i].index == fx[i].index && r.funcs[i].id == fx[i].id && r.funcs[i].line == fx[i].line &&
			      r.funcs[i].kind == fx[i].kind && strcmp(r.funcs[i].name, fx[i].name) == 0 &&
			      strcmp(r.funcs[i].file, fx[i].file) == 0,
		      "function %d: dense %u, id %u, %s at %s:%u (got dense %u id %u %s at %s:%u)", i, fx[i].index,
		      fx[i].id, fx[i].name, fx[i].file, fx[i].line, r.funcs[i].index, r.funcs[i].id, r.funcs[i].name,
		      r.funcs[i].file, r.funcs[i].line);

	CHECK(r.nthreads == 2 && r.threads[0].index == 0 && r.threads[0].serial == 0 && r.threads[0].pid == 4242 &&
		      r.threads[0].tid == 4242 && r.threads[1].index == 1 && r.threads[1].serial == 3 &&
		      r.threads[1].pid == 4242 && r.threads[1].tid == 4250,
	      "threads: (dense 0, serial 0, tid 4242), (dense 1, serial 3, tid 4250)");

	check_events(&r, NEXPECTED, "round trip");

	CHECK(r.ends == 1 && r.end.end_ticks == 2000 && r.end.end_ns == 778000 && r.end.events == NEXPECTED &&
		      r.end.lost == 42 && r.end.failures == (ULMA_FAIL_NO_SLOT | ULMA_FAIL_DEFS_FULL) &&
		      r.end.exit_status == -1,
	      "END: end pair, totals, failures, exit status -1");
	free(r.events);

	/* visitor early stop */
	v = recorder(&r);
	r.stop_after = 3;
	rc = ulma_trace_read_path(path, &v, &st);
	CHECK(rc == 99 && r.nevents == 3 && !st.complete && r.ends == 0,
	      "a visitor's non-zero return stops reading and is returned (rc %d, %zu events)", rc, r.nevents);
	free(r.events);

	/* NULL callbacks are allowed */
	struct ulma_trace_visitor none = {0};
	rc = ulma_trace_read_path(path, &none, &st);
	CHECK(rc == 0 && st.complete && st.events == NEXPECTED, "a visitor with no callbacks reads the whole trace");

	/* ---- cut at every length ---- */
	size_t meta_end = ch[0].offset + ULMA_TRACE_CHUNK_HEADER + ch[0].len;
	size_t wrong = 0, first_wrong = 0;
	char why[512] = "";
	for (size_t cut = 0; cut <= len; cut++) {
		FILE *f = open_bytes(data, cut);
		if (!f) {
			if (!wrong++)
				first_wrong = cut;
			continue;
		}
		v = recorder(&r);
		memset(&st, 0xAB, sizeof(st));
		rc = ulma_trace_read(f, &v, &st);
		fclose(f);
		/* whole chunks within the cut, and the events they hold */
		size_t boundary = ULMA_TRACE_FILE_HEADER;
		uint64_t events = 0;
		for (size_t i = 0; i < nch; i++) {
			size_t e = ch[i].offset + ULMA_TRACE_CHUNK_HEADER + ch[i].len;
			if (e > cut)
				break;
			boundary = e;
			events += ch[i].events;
		}
		int ok;
		if (cut < meta_end)
			ok = rc == -EPROTO && st.error[0] != 0 && r.metas == 0 && r.nevents == 0 && !st.complete;
		else
			ok = rc == 0 && st.complete == (cut == len) && st.bytes == boundary && st.events == events &&
			     r.nevents == events && r.metas == 1 && r.ends == (cut == len);
		if (ok && cut >= meta_end && cut < len) {
			/* the events of a prefix are a prefix of the events */
			for (size_t i = 0; i < r.nevents; i++)
				if (r.events[i].ticks != expected[i].ticks || r.events[i].func != expected[i].func)
					ok = 0;
		}
		if (!ok && !wrong++) {
			first_wrong = cut;
			snprintf(why, sizeof(why), "rc %d complete %d bytes %llu (want %zu) events %llu (want %llu) err '%s'",
				 rc, st.complete, (unsigned long long)st.bytes, boundary,
				 (unsigned long long)st.events, (unsigned long long)events, st.error);
		}
		free(r.events);
	}
	CHECK(wrong == 0,
	      "cut at each of %zu lengths: -EPROTO before the META chunk ends (%zu), else a clean incomplete prefix",
	      len + 1, meta_end);
	if (wrong)
		tap_diag("%zu cuts wrong, first at %zu: %s", wrong, first_wrong, why);

	/* ---- flipped bytes ---- */
	struct {
		size_t at;
		const char *what;
		const char *needle;
	} flips[] = {
		{ch[4].offset + ULMA_TRACE_CHUNK_HEADER + 5, "a byte inside an EVENTS payload", "checksum"},
		{ch[0].offset + ULMA_TRACE_CHUNK_HEADER + 1, "a byte inside the META payload", "checksum"},
		{ch[1].offset + ULMA_TRACE_CHUNK_HEADER + ch[1].len - 1, "the last byte of a DEFS payload", "checksum"},
		{ch[4].offset + 8, "a byte of an EVENTS chunk's CRC", "checksum"},
		{3, "a byte of the magic", "magic"},
		{8, "the version", "version"},
	};
	for (size_t i = 0; i < sizeof(flips) / sizeof(flips[0]) && layout_ok; i++) {
		data[flips[i].at] ^= 0x10;
		FILE *f = open_bytes(data, len);
		v = recorder(&r);
		rc = f ? ulma_trace_read(f, &v, &st) : -EIO;
		if (f)
			fclose(f);
		data[flips[i].at] ^= 0x10;
		CHECK(rc == -EPROTO && st.error[0] && strstr(st.error, flips[i].needle) && !st.complete,
		      "flipped %s: -EPROTO, error \"%s\"", flips[i].what, st.error);
		free(r.events);
	}
out:
	free(data);
	unlink(path);
	free(path);
}

/* A long stream is split into 64 KiB chunks; times survive large deltas. */
static void test_big_stream(void)
{
	char *path = temp_path();
	if (!CHECK(path != NULL, "temp file"))
		return;
	struct ulma_trace_meta meta = {0, 1, 0, 0, 1000000000u, NULL, 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *s;
	int rc = ulma_trace_writer_open(path, &meta, &w);
	if (!CHECK_EQ_I64(rc, 0, "open writer"))
		goto out;
	ulma_trace_define_file(w, 1, "f.py", 4);
	ulma_trace_define_func(w, 5, ULMA_DEF_PY, 1, 1, "a", 1);
	ulma_trace_define_func(w, 6, ULMA_DEF_PY, 1, 2, "b", 1);
	ulma_trace_stream_open(w, 77, 1, 2, &s);
	const uint32_t n = 200000;
	uint64_t t = UINT64_C(1) << 40, tsum = 0;
	for (uint32_t i = 0; i < n; i++) {
		t += (i % 1000 == 0) ? (UINT64_C(1) << 45) : (i % 7);
		tsum += t;
		if (i % 2 == 0)
			ulma_trace_enter(s, t, i % 3, (i % 4 == 0) ? 5 : 6, same_fn((i % 4 == 0) ? 5 : 6, 0));
		else
			ulma_trace_exit(s, t, i % 3);
	}
	struct ulma_trace_end end = {t, 0, n, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	CHECK_EQ_I64(ulma_trace_writer_close(w, &end), 0, "close writer");

	size_t len;
	uint8_t *data = slurp(path, &len);
	struct chunk_info ch[256];
	size_t nch = data ? walk_chunks(data, len, ch, 256) : 0, nev = 0;
	uint64_t counted = 0;
	for (size_t i = 0; i < nch; i++)
		if (ch[i].type == ULMA_CHUNK_EVENTS) {
			nev++;
			counted += ch[i].events;
			if (ch[i].len > (64u << 10) + 64)
				counted = UINT64_MAX;
		}
	CHECK(nev >= 2 && counted == n, "%u events split over %zu EVENTS chunks of at most ~64 KiB", n, nev);
	free(data);

	struct record r;
	struct ulma_trace_visitor v = recorder(&r);
	struct ulma_trace_status st;
	rc = ulma_trace_read_path(path, &v, &st);
	uint64_t got_sum = 0, bad = 0;
	for (size_t i = 0; i < r.nevents; i++) {
		const struct ulma_trace_event *e = &r.events[i];
		got_sum += e->ticks;
		uint8_t kind = (i % 2 == 0) ? ULMA_EV_ENTER : ULMA_EV_EXIT;
		uint32_t func = (i % 4 == 0 || i % 4 == 1) ? 0 : 1;
		if (e->kind != kind || e->func != func || e->cpu != i % 3 || e->thread != 0)
			bad++;
	}
	CHECK(rc == 0 && st.complete && r.nevents == n && bad == 0 && got_sum == tsum && st.last_ticks == t,
	      "all %u events read back with kind, func, cpu and ticks (rc %d, %zu events, %llu wrong)", n, rc,
	      r.nevents, (unsigned long long)bad);
	free(r.events);
out:
	unlink(path);
	free(path);
}

/* An abandoned writer leaves a readable, incomplete trace. */
static void test_abandon(void)
{
	char *path = temp_path();
	if (!CHECK(path != NULL, "temp file"))
		return;
	struct ulma_trace_meta meta = {0, 1, 5, 6, 1000000000u, "x", 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *s;
	if (!CHECK_EQ_I64(ulma_trace_writer_open(path, &meta, &w), 0, "open writer"))
		goto out;
	ulma_trace_define_file(w, 0, "f", 1);
	ulma_trace_define_func(w, 1, ULMA_DEF_PY, 0, 1, "g", 1);
	ulma_trace_stream_open(w, 0, 1, 1, &s);
	ulma_trace_enter(s, 10, 0, 1, same_fn(1, 0));
	ulma_trace_writer_flush(w);
	ulma_trace_exit(s, 20, 0); /* never flushed */
	uint64_t flushed = ulma_trace_writer_bytes(w);
	ulma_trace_writer_abandon(w);
	struct stat sb;
	CHECK(stat(path, &sb) == 0 && (uint64_t)sb.st_size == flushed, "file holds exactly the flushed bytes");
	struct record r;
	struct ulma_trace_visitor v = recorder(&r);
	struct ulma_trace_status st;
	int rc = ulma_trace_read_path(path, &v, &st);
	CHECK(rc == 0 && !st.complete && r.nevents == 1 && r.ends == 0 && st.bytes == flushed,
	      "abandoned trace reads as an incomplete prefix with its flushed event");
	free(r.events);
out:
	unlink(path);
	free(path);
}

static int read_bytes(const uint8_t *data, size_t len, struct record *r, struct ulma_trace_status *st)
{
	struct ulma_trace_visitor v = recorder(r);
	FILE *f = open_bytes(data, len);
	if (!f)
		return -EIO;
	int rc = ulma_trace_read(f, &v, st);
	fclose(f);
	free(r->events);
	r->events = NULL;
	return rc;
}

/* Write a trace of extreme values with the given file id and first event
 * time (the second event is at 2^64 - 6); read it back. */
static int extremes_trace(const char *path, uint32_t file_id, uint64_t t0, struct record *r,
			  struct ulma_trace_status *st)
{
	struct ulma_trace_meta meta = {UINT32_MAX, UINT32_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, "", 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *s;
	memset(r, 0, sizeof(*r));
	int rc = ulma_trace_writer_open(path, &meta, &w);
	if (rc)
		return rc;
	ulma_trace_define_file(w, file_id, "f.py", 4);
	ulma_trace_define_func(w, UINT32_MAX, ULMA_DEF_PY, file_id, UINT32_MAX, "g", 1);
	ulma_trace_define_func(w, 1, ULMA_DEF_C, file_id, 0, "", 0);
	if ((rc = ulma_trace_stream_open(w, UINT64_MAX - 1, UINT32_MAX, UINT32_MAX, &s))) {
		ulma_trace_writer_abandon(w);
		return rc;
	}
	ulma_trace_enter(s, t0, UINT32_MAX, UINT32_MAX, same_fn(UINT32_MAX, 0));
	ulma_trace_enter(s, UINT64_MAX - 5, 0, UINT32_MAX, same_fn(UINT32_MAX, UINT32_MAX));
	ulma_trace_enter(s, UINT64_MAX - 5, 0, 1, same_fn(1, UINT32_MAX));
	ulma_trace_lost(s, UINT64_MAX, UINT64_MAX);
	ulma_trace_exit(s, UINT64_MAX, UINT32_MAX);
	struct ulma_trace_end end = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT32_MAX, INT32_MIN, UINT32_MAX, UINT64_MAX, UINT64_MAX, UINT32_MAX, UINT64_MAX, 0, UINT64_MAX};
	if ((rc = ulma_trace_writer_close(w, &end)))
		return rc;
	struct ulma_trace_visitor v = recorder(r);
	return ulma_trace_read_path(path, &v, st);
}

/* Every field at the top of its range survives the round trip. */
static void test_extremes(void)
{
	char *path = temp_path();
	if (!CHECK(path != NULL, "temp file"))
		return;
	struct record r;
	struct ulma_trace_status st;
	/* the largest delta the format holds: 2^62 - 1 ticks; this one is 2^62 - 6 */
	const uint64_t t0 = UINT64_MAX - (UINT64_C(1) << 62) + 1;
	int rc = extremes_trace(path, UINT32_MAX - 1, t0, &r, &st);
	CHECK(rc == 0 && st.complete, "extreme values: trace reads (rc %d, %s)", rc, st.error);
	CHECK(r.meta.flags == UINT32_MAX && r.meta.pid == UINT32_MAX && r.meta.start_ticks == UINT64_MAX &&
		      r.meta.start_ns == UINT64_MAX && r.meta.tick_hz == UINT64_MAX && r.command[0] == 0,
	      "extreme META fields");
	CHECK(r.nfuncs == 2 && r.funcs[0].id == UINT32_MAX && r.funcs[0].line == UINT32_MAX &&
		      r.funcs[1].name[0] == 0 && r.funcs[1].id == 1,
	      "function id and line UINT32_MAX, an empty name");
	CHECK(r.nthreads == 1 && r.threads[0].serial == UINT64_MAX - 1 && r.threads[0].pid == UINT32_MAX &&
		      r.threads[0].tid == UINT32_MAX,
	      "thread serial 2^64-2, pid and tid UINT32_MAX");
	int ev_ok = r.nevents == 5;
	if (ev_ok) {
		const struct ulma_trace_event *e = r.events;
		ev_ok = e[0].kind == ULMA_EV_ENTER && e[0].ticks == t0 && e[0].cpu == UINT32_MAX && e[0].func == 0 &&
			e[1].kind == ULMA_EV_ENTER && e[1].ticks == UINT64_MAX - 5 && e[1].cpu == 0 && e[1].func == 0 &&
			e[2].kind == ULMA_EV_ENTER && e[2].func == 1 && e[3].kind == ULMA_EV_LOST &&
			e[3].count == UINT64_MAX && e[3].ticks == UINT64_MAX && e[4].kind == ULMA_EV_EXIT &&
			e[4].func == 1 && e[4].cpu == UINT32_MAX && e[4].ticks == UINT64_MAX;
	}
	CHECK(ev_ok, "events up to tick 2^64-1 with a 2^62-6 delta, cpu UINT32_MAX, lost count 2^64-1 (%zu events)",
	      r.nevents);
	CHECK(r.ends == 1 && r.end.end_ticks == UINT64_MAX && r.end.events == UINT64_MAX &&
		      r.end.failures == UINT32_MAX && r.end.exit_status == INT32_MIN &&
		      r.end.resynced == UINT64_MAX && r.end.mem_unattributed == 0 && r.end.refused == UINT64_MAX,
	      "extreme END fields, exit status INT32_MIN, resynchronised 2^64-1");
	free(r.events);

	/* the writer takes any uint32_t file id; the reader must accept it back */
	rc = extremes_trace(path, UINT32_MAX, t0, &r, &st);
	int ok = rc == 0 && st.complete && r.nevents == 5 && r.nfuncs == 2 && strcmp(r.funcs[0].file, "f.py") == 0;
	CHECK(ok, "%s (rc %d, error '%s')",
	      ok ? "file id UINT32_MAX round trips"
		 : "BUG: file id UINT32_MAX: ulma_trace_define_file accepts it, but "
		   "src/core/trace_reader.c parse_defs rejects a FUNC naming it (file_id >= UINT32_MAX)",
	      rc, st.error);
	free(r.events);

	/* a delta of 2^62 ticks or more does not fit the event word */
	rc = extremes_trace(path, UINT32_MAX - 1, 0, &r, &st);
	ok = rc == 0 && r.nevents == 5 && r.events[0].ticks == 0 && r.events[1].ticks == UINT64_MAX - 5;
	CHECK(ok, "%s (rc %d, second event at %llu)",
	      ok ? "a 2^64-6 tick delta round trips"
		 : "BUG: src/core/trace_writer.c ulma_trace_enter/exit/lost encode (ticks - last_ticks) << 2, "
		   "which drops the top bits of a delta >= 2^62: the reader gets a wrong time, no error",
	      rc, r.nevents >= 2 ? (unsigned long long)r.events[1].ticks : 0ull);
	free(r.events);
	unlink(path);
	free(path);
}

/* Hand-built traces with correct checksums but inconsistent content. */
static void test_semantic_corruption(void)
{
	struct record r;
	struct ulma_trace_status st;
	for (int c = 0; c <= 16; c++) {
		struct bytes b = {.len = 0}, p = {.len = 0};
		const char *what = "";
		int want = -EPROTO;
		b_file_header(&b);
		if (c != 1)
			b_meta_chunk(&b);
		/* definitions: file 0, function 1 */
		p.len = 0;
		b_varint(&p, ULMA_DEFTAG_FILE);
		b_varint(&p, 0);
		b_varint(&p, 1);
		b_raw(&p, "f", 1);
		b_varint(&p, ULMA_DEFTAG_FUNC);
		b_varint(&p, 1);
		b_varint(&p, ULMA_DEF_PY);
		b_varint(&p, c == 7 ? 5 : 0); /* file id */
		b_varint(&p, 3);
		b_varint(&p, 1);
		b_raw(&p, "g", 1);
		if (c == 8) { /* the same function again */
			b_varint(&p, ULMA_DEFTAG_FUNC);
			b_varint(&p, 1);
			b_varint(&p, ULMA_DEF_PY);
			b_varint(&p, 0);
			b_varint(&p, 3);
			b_varint(&p, 1);
			b_raw(&p, "g", 1);
		}
		if (c == 13) /* unknown definition tag */
			b_varint(&p, 9);
		b_chunk(&b, ULMA_CHUNK_DEFS, &p);
		/* thread serial 4 */
		p.len = 0;
		b_varint(&p, 4);
		b_varint(&p, 1);
		b_varint(&p, 2);
		b_chunk(&b, ULMA_CHUNK_THREAD, &p);
		if (c == 14)
			b_chunk(&b, ULMA_CHUNK_THREAD, &p);
		if (c == 10) { /* a newer writer's chunk type is skipped */
			p.len = 0;
			b_raw(&p, "future", 6);
			b_chunk(&b, 99, &p);
		}
		if (c == 2)
			b_meta_chunk(&b);
		/* events: enter 1, exit (count 2) */
		p.len = 0;
		b_varint(&p, c == 3 ? 5 : 4); /* serial */
		b_varint(&p, c == 12 ? 3 : 2);
		b_varint(&p, 0);   /* cpu */
		b_varint(&p, 100); /* base time */
		if (c == 4) {
			b_varint(&p, 0 << 2 | ULMA_TAG_EXIT);
			b_varint(&p, 0 << 2 | ULMA_TAG_EXIT);
		} else if (c == 6) {
			b_varint(&p, 0 << 2 | ULMA_TAG_ENTER_SAME);
			b_varint(&p, 0 << 2 | ULMA_TAG_EXIT);
		} else if (c == 11) {
			b_varint(&p, 0 << 2 | ULMA_TAG_EXT);
			b_varint(&p, 7); /* unknown extension */
			b_varint(&p, 0 << 2 | ULMA_TAG_EXIT);
		} else {
			b_varint(&p, 0 << 2 | ULMA_TAG_ENTER);
			b_varint(&p, c == 5 ? 2 : 1); /* function id */
			b_varint(&p, 5 << 2 | ULMA_TAG_EXIT);
		}
		if (c == 9)
			b_varint(&p, 0); /* a stray byte after the last event */
		if (c == 16) { /* a time delta that overflows 64 bits */
			p.len = 0;
			b_varint(&p, 4);
			b_varint(&p, 1);
			b_varint(&p, 0);
			b_varint(&p, UINT64_MAX - 3);
			b_varint(&p, UINT64_C(8) << 2 | ULMA_TAG_ENTER);
			b_varint(&p, 1);
		}
		b_chunk(&b, ULMA_CHUNK_EVENTS, &p);
		if (c == 15) { /* a chunk claiming more than the 64 MiB limit */
			uint8_t h[ULMA_TRACE_CHUNK_HEADER];
			put_u32le(h, ULMA_CHUNK_EVENTS);
			put_u32le(h + 4, ULMA_TRACE_MAX_CHUNK + 1);
			put_u32le(h + 8, 0);
			b_raw(&b, h, sizeof(h));
		}
		switch (c) {
		case 0: what = "well-formed hand-built trace"; want = 0; break;
		case 1: what = "no META chunk first"; break;
		case 2: what = "a second META chunk"; break;
		case 3: what = "events of an undeclared thread"; break;
		case 4: what = "exit with no open frame"; break;
		case 5: what = "enter of an undefined function"; break;
		case 6: what = "recursive entry with no open frame"; break;
		case 7: what = "function naming an undefined file"; break;
		case 8: what = "function defined twice"; break;
		case 9: what = "bytes after the last event"; break;
		case 10: what = "unknown chunk type skipped"; want = 0; break;
		case 11: what = "unknown event extension"; break;
		case 12: what = "event count beyond the payload"; break;
		case 13: what = "unknown definition tag"; break;
		case 14: what = "thread declared twice"; break;
		case 15: what = "chunk length over the limit"; break;
		case 16: what = "event time overflowing 64 bits"; break;
		}
		int rc = read_bytes(b.data, b.len, &r, &st);
		if (want == 0)
			CHECK(rc == 0 && st.events == 2 && st.last_ticks == 105 && !st.complete,
			      "%s: reads (rc %d, %llu events, error '%s')", what, rc, (unsigned long long)st.events,
			      st.error);
		else
			CHECK(rc == want && st.error[0] != 0, "%s: -EPROTO (rc %d, error '%s')", what, rc, st.error);
	}
}

/* A zero-length chunk read before any payload buffer exists.  Run in a
 * child so that an abort under the sanitizers fails only this check. */
static void test_zero_length_first_chunk(void)
{
	struct bytes b = {.len = 0}, empty = {.len = 0};
	b_file_header(&b);
	b_chunk(&b, ULMA_CHUNK_META, &empty); /* type 1, length 0, CRC of nothing (0) */
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		struct record r;
		struct ulma_trace_status st;
		int rc = read_bytes(b.data, b.len, &r, &st);
		_exit(rc == -EPROTO && st.error[0] ? 0 : 3);
	}
	int status = 0;
	int ok = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	CHECK(ok, "%s",
	      ok ? "zero-length first chunk: -EPROTO"
		 : "BUG: zero-length first chunk: the reader died or misread it; src/core/trace_reader.c "
		   "ulma_trace_read computes payload + len with payload == NULL (UB) when no payload buffer "
		   "was allocated yet");
	if (!ok)
		tap_diag("child status 0x%x", status);
}

/* PROCESS chunks: written and read back in order, a long name cut to
 * ULMA_TRACE_MAX_NAME; a length that does not match the chunk, or pid 0,
 * is corrupt. */
static void test_process_names(void)
{
	char *path = temp_path();
	if (!CHECK(path != NULL, "temp file"))
		return;
	static char long_name[2000];
	memset(long_name, 'x', sizeof(long_name));
	struct ulma_trace_meta meta = {0, 42, 1000, 777000, 1000000000u, COMMAND, 0};
	struct ulma_trace_writer *w;
	int err = ulma_trace_writer_open(path, &meta, &w);
	if (!CHECK_EQ_I64(err, 0, "open a writer"))
		goto out;
	struct ulma_trace_end end = {2000, 778000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	err = ulma_trace_process(w, 42, 0, "work.py --n 3", 13);
	err = err ? err : ulma_trace_process(w, 43, 42, long_name, sizeof(long_name));
	err = err ? err : ulma_trace_process(w, 42, 7, "renamed", 7);
	err = err ? err : ulma_trace_writer_close(w, &end);
	CHECK_EQ_I64(err, 0, "three PROCESS chunks and the END written");
	struct record r;
	struct ulma_trace_status st;
	struct ulma_trace_visitor v = recorder(&r);
	err = ulma_trace_read_path(path, &v, &st);
	CHECK(err == 0 && st.complete && r.nprocs == 3 && r.order_bad == 0, "read back: 3 processes (%d, err %d)",
	      r.nprocs, err);
	CHECK(r.proc_pid[0] == 42 && strcmp(r.proc_name[0], "work.py --n 3") == 0, "pid 42: %s", r.proc_name[0]);
	CHECK(r.proc_pid[1] == 43 && r.proc_len[1] == ULMA_TRACE_MAX_NAME && r.proc_name[1][1023] == 'x',
	      "a 2000-byte name is cut to %u bytes (%zu)", ULMA_TRACE_MAX_NAME, r.proc_len[1]);
	CHECK(r.proc_pid[2] == 42 && strcmp(r.proc_name[2], "renamed") == 0, "a later name of pid 42 comes after");
	CHECK(r.proc_ppid[0] == 0 && r.proc_ppid[1] == 42 && r.proc_ppid[2] == 7,
	      "parents read back: none, 42, 7 (%u, %u, %u)", r.proc_ppid[0], r.proc_ppid[1], r.proc_ppid[2]);

	/* the optional parent: read, a field after it skipped; cut short, or beyond 32 bits */
	for (int c = 0; c < 4; c++) {
		struct bytes b = {.len = 0}, p = {.len = 0};
		b_file_header(&b);
		b_meta_chunk(&b);
		b_varint(&p, 9);
		b_varint(&p, 3);
		b_raw(&p, "abc", 3);
		if (c < 2)
			b_varint(&p, 8);
		if (c == 1)
			b_varint(&p, 123456);
		if (c == 2)
			b_raw(&p, "\x80", 1);
		if (c == 3)
			b_varint(&p, UINT64_C(1) << 32);
		b_chunk(&b, ULMA_CHUNK_PROCESS, &p);
		int rc = read_bytes(b.data, b.len, &r, &st);
		if (c < 2)
			CHECK(rc == 0 && r.nprocs == 1 && r.proc_pid[0] == 9 && r.proc_ppid[0] == 8 &&
				      strcmp(r.proc_name[0], "abc") == 0,
			      "PROCESS with a parent%s: pid 9 'abc', parent 8 (rc %d)", c ? " and a later field" : "", rc);
		else
			CHECK(rc == -EPROTO && st.error[0], "corrupt parent %d: -EPROTO (%s)", c, st.error);
	}
	free(r.events);

	for (int c = 0; c < 3; c++) {
		struct bytes b = {.len = 0}, p = {.len = 0};
		b_file_header(&b);
		b_meta_chunk(&b);
		b_varint(&p, c == 0 ? 0 : 7);        /* pid 0 is no process */
		b_varint(&p, c == 1 ? 5 : 3);        /* a length beyond the chunk */
		b_raw(&p, "abc", c == 2 ? 2 : 3);    /* or bytes missing */
		b_chunk(&b, ULMA_CHUNK_PROCESS, &p);
		int rc = read_bytes(b.data, b.len, &r, &st);
		CHECK(rc == -EPROTO && st.error[0], "corrupt PROCESS chunk %d: -EPROTO (%s)", c, st.error);
	}
out:
	unlink(path);
	free(path);
}

/* Version 3's OFF records: written between events (and after the last),
 * read back in place with their state and ns, never counted as events; the
 * END's split fields round-trip; an OFF record in a version 2 trace is
 * corrupt. */
/* A trace of format `version` whose one thread's EVENTS chunk holds
 * nothing but one extension record: the varints ext[0..n). */
static void one_extension_trace(struct bytes *b, uint32_t version, const uint64_t *ext, size_t n)
{
	struct bytes t = {.len = 0}, p = {.len = 0};
	b->len = 0;
	b_file_header(b);
	put_u32le(b->data + 8, version);
	b_meta_chunk(b);
	b_varint(&t, 0); /* serial, pid, tid */
	b_varint(&t, 1);
	b_varint(&t, 1);
	b_chunk(b, ULMA_CHUNK_THREAD, &t);
	b_varint(&p, 0);   /* serial */
	b_varint(&p, 0);   /* no event */
	b_varint(&p, 0);   /* cpu */
	b_varint(&p, 100); /* base time */
	b_varint(&p, ULMA_TAG_EXT);
	for (size_t i = 0; i < n; i++)
		b_varint(&p, ext[i]);
	b_chunk(b, ULMA_CHUNK_EVENTS, &p);
}

static void test_off_records(void)
{
	char *path = temp_path();
	if (!CHECK(path != NULL, "temp file"))
		return;
	struct ulma_trace_meta meta = {0, 42, 1000, 777000, 1000000000u, COMMAND, 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *s;
	int err = ulma_trace_writer_open(path, &meta, &w);
	err = err ? err : ulma_trace_define_file(w, 0, "m.py", 4);
	err = err ? err : ulma_trace_define_func(w, 1, ULMA_DEF_PY, 0, 3, "f", 1);
	err = err ? err : ulma_trace_stream_open(w, 0, 42, 42, &s);
	if (!CHECK_EQ_I64(err, 0, "a writer with one function and one thread"))
		goto out;
	ulma_trace_enter(s, 1100, 0, 1, false);
	ulma_trace_off(s, 1110, ULMA_TRACE_SAME_CPU, ULMA_OFF_BLOCKED, 500);
	ulma_trace_off(s, 1120, 3, ULMA_OFF_RUNNABLE, 70); /* it had run on CPU 3 since it came back */
	ulma_trace_exit(s, 1200, 1);
	ulma_trace_off(s, 1210, 1, ULMA_OFF_GIL, 9);
	struct ulma_trace_end end = {2000, 778000, 2, 0, 0, 0, ULMA_SPLIT_SWITCHES, 123456789, 3, 1, 0, 0, 0};
	CHECK_EQ_I64(ulma_trace_writer_close(w, &end), 0, "closed");
	struct record r;
	struct ulma_trace_status st;
	struct ulma_trace_visitor v = recorder(&r);
	err = ulma_trace_read_path(path, &v, &st);
	CHECK(err == 0 && st.complete && st.events == 2 && r.nevents == 5, "2 events and 3 OFF records read (%d, %s)",
	      err, st.error);
	if (r.nevents == 5) {
		const struct ulma_trace_event *e = r.events;
		CHECK(e[0].kind == ULMA_EV_ENTER && e[1].kind == ULMA_EV_OFF && e[1].ticks == 1110 &&
			      e[1].off == ULMA_OFF_BLOCKED && e[1].count == 500 && e[1].cpu == 0,
		      "blocked 500 ns from 1110, after the entry, on its CPU");
		CHECK(e[2].kind == ULMA_EV_OFF && e[2].ticks == 1120 && e[2].off == ULMA_OFF_RUNNABLE && e[2].count == 70 &&
			      e[2].cpu == 3,
		      "runnable 70 ns from 1120, leaving CPU 3 (no event there)");
		CHECK(e[3].kind == ULMA_EV_EXIT && e[3].ticks == 1200 && e[3].cpu == 1, "the exit at 1200 on cpu 1");
		CHECK(e[4].kind == ULMA_EV_OFF && e[4].ticks == 1210 && e[4].off == ULMA_OFF_GIL && e[4].count == 9 &&
			      e[4].cpu == 1,
		      "a GIL wait after the last event ends the chunk");
	}
	CHECK(r.end.split == ULMA_SPLIT_SWITCHES && r.end.monitor_cpu_ns == 123456789 && r.end.switches_lost == 3 &&
		      r.end.gil_split == 1,
	      "END's split method, monitor CPU, lost switches and GIL split");
	free(r.events);

	/* an OFF record in a version 2 trace: corrupt */
	struct bytes b;
	const uint64_t off[] = {ULMA_EXT_OFF, 0, 5};
	one_extension_trace(&b, 2, off, 3);
	int rc = read_bytes(b.data, b.len, &r, &st);
	CHECK(rc == -EPROTO && strstr(st.error, "unknown event extension 2"), "version 2 with an OFF record: %s",
	      st.error);
out:
	unlink(path);
	free(path);
}

/* Version 4: native functions and zones are functions of new kinds, and
 * marks (instant, counter, thread name) come in order with the events. */
static void test_marks(void)
{
	char *path = temp_path();
	if (!CHECK(path != NULL, "temp file"))
		return;
	struct ulma_trace_meta meta = {0, 42, 1000, 777000, 1000000000u, COMMAND, 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *s;
	int err = ulma_trace_writer_open(path, &meta, &w);
	err = err ? err : ulma_trace_define_file(w, 0, "~", 1);
	err = err ? err : ulma_trace_define_file(w, 1, "k.c", 3);
	err = err ? err : ulma_trace_define_func(w, 1, ULMA_DEF_NATIVE, 1, 12, "kernel", 6);
	err = err ? err : ulma_trace_define_func(w, 2, ULMA_DEF_ZONE, 1, 30, "load", 4);
	err = err ? err : ulma_trace_define_func(w, 3, ULMA_DEF_MARK, 0, 0, "checkpoint", 10);
	err = err ? err : ulma_trace_define_func(w, 4, ULMA_DEF_MARK, 0, 0, "queue", 5);
	err = err ? err : ulma_trace_stream_open(w, 0, 42, 42, &s);
	if (!CHECK_EQ_I64(err, 0, "a writer with native, zone and mark definitions"))
		goto out;
	ulma_trace_enter(s, 1100, 0, 1, false);
	ulma_trace_mark(s, 1105, ULMA_EXT_THREAD_NAME, 3, 0);
	ulma_trace_enter(s, 1110, 0, 2, false);
	ulma_trace_mark(s, 1120, ULMA_EXT_INSTANT, 3, 0);
	ulma_trace_mark(s, 1130, ULMA_EXT_COUNTER, 4, -2.5e300);
	ulma_trace_exit(s, 1140, 0);
	ulma_trace_exit(s, 1150, 0);
	struct ulma_trace_end end = {2000, 778000, 4, 0, 0, 0, ULMA_SPLIT_SWITCHES, 1, 0, 0, 0, 0, 0};
	CHECK_EQ_I64(ulma_trace_writer_close(w, &end), 0, "closed");
	struct record r;
	struct ulma_trace_status st;
	struct ulma_trace_visitor v = recorder(&r);
	err = ulma_trace_read_path(path, &v, &st);
	CHECK(err == 0 && st.complete && st.events == 4 && r.nevents == 4 && r.nmarks == 3,
	      "4 events and 3 marks read (%d, %s, %zu events, %d marks)", err, st.error, r.nevents, r.nmarks);
	CHECK(r.nfuncs == 4 && r.funcs[0].kind == ULMA_DEF_NATIVE && strcmp(r.funcs[0].name, "kernel") == 0 &&
		      strcmp(r.funcs[0].file, "k.c") == 0 && r.funcs[0].line == 12 && r.funcs[1].kind == ULMA_DEF_ZONE &&
		      r.funcs[2].kind == ULMA_DEF_MARK,
	      "the kinds and names of a native function, a zone and a mark");
	if (r.nmarks == 3) {
		CHECK(r.marks[0].kind == ULMA_EXT_THREAD_NAME && r.marks[0].ticks == 1105 && r.marks[0].name == 2 &&
			      r.events_before_mark[0] == 1,
		      "the thread's name after its first event");
		CHECK(r.marks[1].kind == ULMA_EXT_INSTANT && r.marks[1].ticks == 1120 && r.events_before_mark[1] == 2,
		      "the instant inside the zone");
		CHECK(r.marks[2].kind == ULMA_EXT_COUNTER && r.marks[2].name == 3 && r.marks[2].value == -2.5e300 &&
			      r.marks[2].ticks == 1130,
		      "the counter's value, exactly");
	}
	if (r.nevents == 4)
		CHECK(r.events[2].kind == ULMA_EV_EXIT && r.events[2].ticks == 1140 && r.events[2].func == 1,
		      "the zone's exit after the marks, timed from them");
	free(r.events);

	/* a mark in a version 3 trace: corrupt */
	struct bytes b;
	const uint64_t instant[] = {ULMA_EXT_INSTANT, 1};
	one_extension_trace(&b, 3, instant, 2);
	int rc = read_bytes(b.data, b.len, &r, &st);
	CHECK(rc == -EPROTO && strstr(st.error, "unknown event extension 3"), "version 3 with a mark: %s", st.error);
out:
	unlink(path);
	free(path);
}

/* Version 5: line events belong to the innermost open frame; a source
 * copy arrives before the events; a line with no open frame, or a line
 * event in a version 4 trace, is corrupt. */
static void test_lines(void)
{
	char *path = temp_path();
	if (!CHECK(path != NULL, "temp file"))
		return;
	struct ulma_trace_meta meta = {0, 42, 1000, 777000, 1000000000u, COMMAND, 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *s;
	int err = ulma_trace_writer_open(path, &meta, &w);
	err = err ? err : ulma_trace_define_file(w, 0, "/p/m.py", 7);
	err = err ? err : ulma_trace_define_func(w, 1, ULMA_DEF_PY, 0, 1, "gen", 3);
	err = err ? err : ulma_trace_define_source(w, 0, ULMA_SOURCE_CHANGED, "def gen():\n    yield 1\n", 23);
	err = err ? err : ulma_trace_stream_open(w, 0, 42, 42, &s);
	if (!CHECK_EQ_I64(err, 0, "a writer with a source copy"))
		goto out;
	ulma_trace_enter(s, 1100, 0, 1, false);
	ulma_trace_line(s, 1110, 2, false);
	ulma_trace_exit(s, 1120, 0);
	ulma_trace_enter(s, 1130, 0, 1, false);
	ulma_trace_line(s, 1131, 2, true);
	ulma_trace_line(s, 1140, 300000, false);
	ulma_trace_exit(s, 1150, 0);
	struct ulma_trace_end end = {2000, 778000, 7, 0, 0, 0, ULMA_SPLIT_SWITCHES, 1, 0, 0, 0, 0, 0};
	CHECK_EQ_I64(ulma_trace_writer_close(w, &end), 0, "closed");
	struct record r;
	struct ulma_trace_status st;
	struct ulma_trace_visitor v = recorder(&r);
	err = ulma_trace_read_path(path, &v, &st);
	CHECK(err == 0 && st.complete && st.events == 7 && r.nevents == 7,
	      "7 events, lines among them (%d, %s, %zu)", err, st.error, r.nevents);
	CHECK(r.nsources == 1 && strcmp(r.source_path, "/p/m.py") == 0 &&
		      strcmp(r.source_text, "def gen():\n    yield 1\n") == 0 && r.source_flags == ULMA_SOURCE_CHANGED &&
		      r.events_before_source == 0,
	      "the source copy, its flags, before the events");
	if (r.nevents == 7) {
		const struct ulma_trace_event *e = r.events;
		CHECK(e[1].kind == ULMA_EV_LINE && e[1].ticks == 1110 && e[1].count == 2 && !e[1].resumed &&
			      e[1].func == 0,
		      "a hit on line 2 of the open frame");
		CHECK(e[4].kind == ULMA_EV_LINE && e[4].count == 2 && e[4].resumed, "a resume inside line 2");
		CHECK(e[5].kind == ULMA_EV_LINE && e[5].count == 300000 && !e[5].resumed && e[6].kind == ULMA_EV_EXIT,
		      "a large line number, then the exit");
	}
	free(r.events);

	struct bytes b;
	const uint64_t line[] = {ULMA_EXT_LINE, 5};
	one_extension_trace(&b, 4, line, 2);
	int rc = read_bytes(b.data, b.len, &r, &st);
	CHECK(rc == -EPROTO && strstr(st.error, "unknown event extension 6"), "version 4 with a line: %s", st.error);
	one_extension_trace(&b, 5, line, 2);
	rc = read_bytes(b.data, b.len, &r, &st);
	CHECK(rc == -EPROTO && strstr(st.error, "no open frame"), "a line with no open frame: %s", st.error);
out:
	unlink(path);
	free(path);
}

static void test_foreign(void)
{
	struct record r;
	struct ulma_trace_status st;
	static const uint8_t hello[] = "hello world";
	int rc = read_bytes(hello, sizeof(hello) - 1, &r, &st);
	CHECK(rc == -EPROTO && st.error[0], "\"hello world\": -EPROTO (%s)", st.error);
	rc = read_bytes(hello, 0, &r, &st);
	CHECK(rc == -EPROTO && st.error[0], "empty input: -EPROTO (%s)", st.error);
	uint8_t hdr_only[ULMA_TRACE_FILE_HEADER] = {0};
	memcpy(hdr_only, ULMA_TRACE_MAGIC, 8);
	put_u32le(hdr_only + 8, ULMA_TRACE_VERSION);
	rc = read_bytes(hdr_only, sizeof(hdr_only), &r, &st);
	CHECK(rc == -EPROTO && st.error[0], "file header alone: -EPROTO (%s)", st.error);

	rc = ulma_trace_read_path("/nonexistent/dir/x.trace", &(struct ulma_trace_visitor){0}, &st);
	CHECK_EQ_I64(rc, -ENOENT, "read_path on a missing file: -ENOENT");

	/* not regular files: refused by kind, and a FIFO without waiting for a writer */
	char *dir = temp_path();
	if (dir && unlink(dir) == 0 && mkdir(dir, 0700) == 0) {
		FILE *f = (FILE *)(uintptr_t)1;
		const char *why = NULL;
		rc = ulma_trace_open(dir, &f, &why);
		CHECK(rc == -EISDIR && f == NULL && why && strcmp(why, "it is a directory") == 0,
		      "a directory: -EISDIR, 'it is a directory' (%d, %s)", rc, why ? why : "-");
		rc = ulma_trace_read_path(dir, &(struct ulma_trace_visitor){0}, &st);
		CHECK_EQ_I64(rc, -EISDIR, "read_path on a directory: -EISDIR");
		char fifo[4200];
		snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
		if (mkfifo(fifo, 0600) == 0) {
			rc = ulma_trace_open(fifo, &f, &why);
			CHECK(rc == -EINVAL && f == NULL && why && strstr(why, "FIFO"),
			      "a FIFO with no writer: refused at once (%d, %s)", rc, why ? why : "-");
			unlink(fifo);
		}
		rmdir(dir);
	}
	free(dir);

	struct ulma_trace_writer *w = (struct ulma_trace_writer *)(uintptr_t)1;
	struct ulma_trace_meta meta = {0};
	rc = ulma_trace_writer_open("/nonexistent/dir/x.trace", &meta, &w);
	CHECK(rc == -ENOENT && w == NULL, "writer_open in a missing directory: -ENOENT, no writer");
}

int main(void)
{
	test_round_trip();
	test_off_records();
	test_marks();
	test_lines();
	test_big_stream();
	test_process_names();
	test_abandon();
	test_extremes();
	test_semantic_corruption();
	test_zero_length_first_chunk();
	test_foreign();
	return tap_done();
}
