/* test_trace_sched.c - schedstat samples in the trace (SCHED chunks,
 * docs/trace-format.md): samples with and without the GIL clock written
 * and read back exactly; a version-1 trace, whose samples have three
 * values and no count of them, still read; a later version's extra values
 * skipped; impossible value counts refused. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/crc32c.h"
#include "core/trace_reader.h"
#include "core/trace_writer.h"
#include "core/varint.h"
#include "tap.h"
#include "ulma/shm.h"
#include "ulma/trace_format.h"

struct seen {
	struct ulma_trace_sched s[16];
	uint32_t thread[16];
	int n;
};

static int on_sched(void *ctx, uint32_t thread, const struct ulma_trace_sched *s)
{
	struct seen *x = ctx;
	if (x->n < 16) {
		x->s[x->n] = *s;
		x->thread[x->n] = thread;
	}
	x->n++;
	return 0;
}

static int read_file(FILE *f, struct seen *x, struct ulma_trace_status *st)
{
	memset(x, 0, sizeof(*x));
	struct ulma_trace_visitor v = {.ctx = x, .on_sched = on_sched};
	rewind(f);
	return ulma_trace_read(f, &v, st);
}

static bool same(const struct ulma_trace_sched *a, const struct ulma_trace_sched *b)
{
	return a->ticks == b->ticks && a->cpu_ns == b->cpu_ns && a->wait_ns == b->wait_ns && a->gil_ns == b->gil_ns &&
	       a->gil_known == b->gil_known;
}

static void test_round_trip(void)
{
	char path[] = "/tmp/ulma-test-sched-XXXXXX";
	int fd = mkstemp(path);
	if (!CHECK(fd >= 0, "temp file"))
		return;
	close(fd);
	struct ulma_trace_meta meta = {0, 1, 5, 6, 1000000000u, "x", 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *a, *b;
	CHECK_EQ_I64(ulma_trace_writer_open(path, &meta, &w), 0, "open writer");
	ulma_trace_stream_open(w, 0, 1, 1, &a);
	ulma_trace_stream_open(w, 1, 1, 2, &b);
	const struct ulma_trace_sched want[] = {
		{100, 10, 1, 0, false},          /* a: no GIL clock */
		{200, 20, 2, 0, false},
		{300, 25, 2, 40, true},          /* a: the GIL clock from here on */
		{400, 30, 3, 1000000000000, true},
		{150, 7, 0, 5, true},            /* b */
	};
	ulma_trace_sched(a, &want[0]);
	ulma_trace_sched(a, &want[1]);
	ulma_trace_sched(a, &want[2]);
	struct ulma_trace_sched stale = {350, 24, 2, 40, true};
	ulma_trace_sched(a, &stale); /* goes back in cpu: dropped */
	ulma_trace_sched(a, &want[3]);
	ulma_trace_sched(b, &want[4]);
	struct ulma_trace_end end = {500, 600, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	CHECK_EQ_I64(ulma_trace_writer_close(w, &end), 0, "close writer");

	FILE *f = fopen(path, "rb");
	struct seen x;
	struct ulma_trace_status st;
	int rc = f ? read_file(f, &x, &st) : -EIO;
	CHECK(rc == 0 && st.complete && x.n == 5, "five samples read back (rc %d, %d samples: %s)", rc, x.n, st.error);
	bool all = x.n == 5;
	for (int i = 0; i < 4 && all; i++)
		all = same(&x.s[i], &want[i]) && x.thread[i] == 0;
	CHECK(all, "thread a's samples: values, and whether the GIL was known, exact across the change of shape");
	CHECK(x.n == 5 && same(&x.s[4], &want[4]) && x.thread[4] == 1, "thread b's sample");
	if (f)
		fclose(f);
	unlink(path);
}

/* ---------- hand-built traces ---------- */

struct bytes {
	uint8_t data[1024];
	size_t len;
};

static void b_varint(struct bytes *b, uint64_t v)
{
	b->len += ulma_varint_put(b->data + b->len, v);
}

static void b_u32(struct bytes *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b->data[b->len++] = (uint8_t)(v >> (8 * i));
}

static void b_chunk(struct bytes *b, uint32_t type, const struct bytes *payload)
{
	b_u32(b, type);
	b_u32(b, (uint32_t)payload->len);
	b_u32(b, ulma_crc32c(0, payload->data, payload->len));
	memcpy(b->data + b->len, payload->data, payload->len);
	b->len += payload->len;
}

/* File header of `version`, META, one thread, one SCHED chunk of two
 * samples whose deltas are 1, 2, 3, ... (fields values each); `count_fields`
 * puts the number of values in the chunk, as version 2 does. */
static int read_built(uint32_t version, bool count_fields, uint64_t fields, struct seen *x,
		      struct ulma_trace_status *st)
{
	struct bytes b = {.len = 0}, m = {.len = 0}, t = {.len = 0}, s = {.len = 0};
	memcpy(b.data, ULMA_TRACE_MAGIC, 8);
	b.len = 8;
	b_u32(&b, version);
	b_u32(&b, 0);
	uint64_t meta[] = {0, 99, 10, 20, 1000000000, 0};
	for (size_t i = 0; i < 6; i++)
		b_varint(&m, meta[i]);
	b_chunk(&b, ULMA_CHUNK_META, &m);
	b_varint(&t, 0);
	b_varint(&t, 99);
	b_varint(&t, 100);
	b_chunk(&b, ULMA_CHUNK_THREAD, &t);
	b_varint(&s, 0);
	if (count_fields)
		b_varint(&s, fields);
	b_varint(&s, 2);
	for (uint64_t i = 0; i < 2 * fields; i++)
		b_varint(&s, i + 1);
	b_chunk(&b, ULMA_CHUNK_SCHED, &s);
	FILE *f = fmemopen(b.data, b.len, "rb");
	if (!f)
		return -EIO;
	int rc = read_file(f, x, st);
	fclose(f);
	return rc;
}

static void test_versions(void)
{
	struct seen x;
	struct ulma_trace_status st;
	int rc = read_built(1, false, 3, &x, &st);
	CHECK(rc == 0 && x.n == 2, "a version-1 trace's samples are read (rc %d: %s)", rc, st.error);
	CHECK(x.n == 2 && x.s[1].ticks == 1 + 4 && x.s[1].cpu_ns == 2 + 5 && x.s[1].wait_ns == 3 + 6 &&
		      !x.s[1].gil_known && x.s[1].gil_ns == 0,
	      "with three values each and no GIL clock");

	rc = read_built(2, true, 4, &x, &st);
	CHECK(rc == 0 && x.n == 2 && x.s[1].gil_known && x.s[1].gil_ns == 4 + 8 && x.s[1].ticks == 1 + 5,
	      "version 2, four values: the GIL clock");
	rc = read_built(2, true, 6, &x, &st);
	CHECK(rc == 0 && x.n == 2 && x.s[1].ticks == 1 + 7 && x.s[1].gil_ns == 4 + 10,
	      "six values: the four known are read, the rest skipped");
	rc = read_built(2, true, 2, &x, &st);
	CHECK(rc < 0 && strstr(st.error, "values per sample"), "two values per sample: refused (%s)", st.error);
	rc = read_built(3, true, 4, &x, &st);
	CHECK(rc == 0 && x.n == 2 && x.s[1].gil_ns == 4 + 8, "version 3 reads samples as version 2 (%s)", st.error);
	rc = read_built(4, true, 4, &x, &st);
	CHECK(rc == 0 && x.n == 2 && x.s[1].gil_ns == 4 + 8, "version 4 reads samples as version 2 (%s)", st.error);
	rc = read_built(5, true, 4, &x, &st);
	CHECK(rc == 0 && x.n == 2 && x.s[1].gil_ns == 4 + 8, "version 5 reads samples as version 2 (%s)", st.error);
	rc = read_built(ULMA_TRACE_VERSION + 1, true, 4, &x, &st);
	CHECK(rc < 0 && strstr(st.error, "unsupported trace version"), "a later version: refused (%s)", st.error);
}

int main(void)
{
	test_round_trip();
	test_versions();
	return tap_done();
}
