/* test_trace_memory.c - allocations and frees in the trace (version 5,
 * ULMA_EXT_ALLOC and ULMA_EXT_FREE): they come back in order with the
 * thread's events, not counted as events, with their addresses (zigzag
 * deltas within a chunk, up and down, across a chunk boundary), sizes and
 * domains; a reader without on_memory skips them; a version 4 trace with
 * one is refused; an address past 2^48 is corruption; the optional END
 * field of unattributed records round-trips.  Objects (version 6,
 * ULMA_EXT_OBJ_NEW and _FREE) come back likewise with their type's
 * definition; a version 5 trace with one is refused, and an undefined
 * type is corruption.  A stream says whether its pending chunk holds memory
 * records, and the chunks of two threads flushed one after the other come
 * back in that order (the collector applies memory records in the order
 * a report will: collector.c, drain_slot). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/trace_reader.h"
#include "core/trace_writer.h"
#include "tap.h"
#include "ulma/shm.h"
#include "ulma/trace_format.h"

#define NMEM 64

struct seen {
	struct ulma_trace_memory mem[NMEM];
	size_t events_before[NMEM];
	size_t nmem, nevents;
	struct ulma_trace_end end;
	struct ulma_trace_object obj[NMEM];
	size_t nobj, events_before_obj[NMEM];
};

static int on_events(void *ctx, uint32_t thread, const struct ulma_trace_event *ev, size_t n)
{
	(void)thread;
	(void)ev;
	((struct seen *)ctx)->nevents += n;
	return 0;
}

static int on_memory(void *ctx, const struct ulma_trace_memory *m)
{
	struct seen *s = ctx;
	if (s->nmem < NMEM) {
		s->mem[s->nmem] = *m;
		s->events_before[s->nmem] = s->nevents;
	}
	s->nmem++;
	return 0;
}

static int on_object(void *ctx, const struct ulma_trace_object *o)
{
	struct seen *s = ctx;
	if (s->nobj < NMEM) {
		s->obj[s->nobj] = *o;
		s->events_before_obj[s->nobj] = s->nevents;
	}
	s->nobj++;
	return 0;
}

static int on_end(void *ctx, const struct ulma_trace_end *e)
{
	((struct seen *)ctx)->end = *e;
	return 0;
}

static char *temp_path(void)
{
	char *path = strdup("/tmp/ulma-test-trace-memory-XXXXXX");
	int fd = path ? mkstemp(path) : -1;
	if (fd < 0) {
		free(path);
		return NULL;
	}
	close(fd);
	return path;
}

static void test_round_trip(void)
{
	char *path = temp_path();
	if (!CHECK(path != NULL, "temp file"))
		return;
	struct ulma_trace_meta meta = {ULMA_META_MEMORY, 42, 1000, 777000, 1000000000u, "prog", 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *s;
	int err = ulma_trace_writer_open(path, &meta, &w);
	err = err ? err : ulma_trace_define_file(w, 0, "/p/m.py", 7);
	err = err ? err : ulma_trace_define_func(w, 1, ULMA_DEF_PY, 0, 1, "f", 1);
	err = err ? err : ulma_trace_define_func(w, 2, ULMA_DEF_TYPE, 0, 0, "list", 4);
	err = err ? err : ulma_trace_stream_open(w, 0, 42, 42, &s);
	if (!CHECK_EQ_I64(err, 0, "a writer"))
		goto out;
	const uint64_t top = (UINT64_C(1) << 48) - 16;
	ulma_trace_enter(s, 1100, 0, 1, false);
	ulma_trace_alloc(s, 1101, 0x7f0000001000, 1033, ULMA_MEM_OBJ);
	ulma_trace_alloc(s, 1102, 0x7f0000000f00, 56, ULMA_MEM_MEM); /* a lower address */
	ulma_trace_free(s, 1103, 0x7f0000001000);
	ulma_trace_alloc(s, 1104, top, ULMA_MEM_SIZE_MAX, ULMA_MEM_RAW);
	ulma_trace_free(s, 1105, 16);
	ulma_trace_object(s, 1106, ULMA_EXT_OBJ_NEW, 2);
	ulma_trace_object(s, 1107, ULMA_EXT_OBJ_FREE, 2);
	ulma_trace_exit(s, 1110, 0);
	err = ulma_trace_writer_flush(w); /* the next one begins a chunk: its deltas from 0 */
	ulma_trace_enter(s, 1200, 0, 1, false);
	ulma_trace_free(s, 1201, 0x7f0000000f00);
	ulma_trace_exit(s, 1210, 0);
	struct ulma_trace_end end = {2000, 778000, 4, 0, 0, 0, 0, 0, 0, 0, 0, 12, 0};
	CHECK_EQ_I64(ulma_trace_writer_close(w, &end), 0, "closed");

	struct seen seen = {0};
	struct ulma_trace_visitor v = {
		.ctx = &seen, .on_events = on_events, .on_memory = on_memory, .on_object = on_object, .on_end = on_end};
	struct ulma_trace_status st;
	err = ulma_trace_read_path(path, &v, &st);
	CHECK(err == 0 && st.complete && st.events == 4 && seen.nevents == 4,
	      "4 events: the memory records are not events (%d, %s)", err, st.error);
	if (CHECK_EQ_U64(seen.nmem, 6, "6 memory records")) {
		const struct ulma_trace_memory *m = seen.mem;
		CHECK(m[0].kind == ULMA_EXT_ALLOC && m[0].addr == 0x7f0000001000 && m[0].size == 1033 &&
			      m[0].domain == ULMA_MEM_OBJ && m[0].ticks == 1101 && seen.events_before[0] == 1,
		      "an object's allocation after the entry");
		CHECK(m[1].addr == 0x7f0000000f00 && m[1].size == 56 && m[1].domain == ULMA_MEM_MEM,
		      "a lower address (a negative delta)");
		CHECK(m[2].kind == ULMA_EXT_FREE && m[2].addr == 0x7f0000001000 && m[2].ticks == 1103, "its free");
		CHECK(m[3].addr == top && m[3].size == ULMA_MEM_SIZE_MAX && m[3].domain == ULMA_MEM_RAW,
		      "the highest address and size");
		CHECK(m[4].addr == 16 && m[4].kind == ULMA_EXT_FREE, "a low address after the highest");
		CHECK(m[5].addr == 0x7f0000000f00 && seen.events_before[5] == 3, "in the next chunk, from 0 again");
	}
	CHECK_EQ_U64(seen.end.mem_unattributed, 12, "END's unattributed records");
	CHECK(seen.nobj == 2 && seen.obj[0].kind == ULMA_EXT_OBJ_NEW && seen.obj[0].ticks == 1106 &&
		      seen.obj[1].kind == ULMA_EXT_OBJ_FREE && seen.obj[1].ticks == 1107 &&
		      seen.obj[0].type == seen.obj[1].type && seen.events_before_obj[0] == 1,
	      "an object created and destroyed, of one type, inside f");

	/* a reader that does not ask for memory skips it */
	struct seen plain = {0};
	struct ulma_trace_visitor pv = {.ctx = &plain, .on_events = on_events, .on_end = on_end};
	err = ulma_trace_read_path(path, &pv, &st);
	CHECK(err == 0 && plain.nevents == 4 && plain.nmem == 0, "skipped without on_memory");
out:
	unlink(path);
	free(path);
}

/* A hand-made EVENTS body: [word, ext kind, operands...]. */
static int read_one(uint32_t version, const uint8_t *body, size_t len, struct ulma_trace_status *st)
{
	char *path = temp_path();
	if (!path)
		return -ENOMEM;
	struct ulma_trace_meta meta = {0, 42, 1000, 777000, 1000000000u, "prog", 0};
	struct ulma_trace_writer *w = NULL;
	struct ulma_trace_stream *s;
	int err = ulma_trace_writer_open(path, &meta, &w);
	err = err ? err : ulma_trace_stream_open(w, 0, 42, 42, &s);
	if (!err) {
		memcpy(s->body, body, len); /* a chunk begun by hand: base time, then the record */
		s->len = len;
		s->count = 0;
		err = ulma_trace_writer_flush(w);
	}
	ulma_trace_writer_abandon(w);
	/* the version in the file header */
	FILE *f = fopen(path, "r+b");
	if (f) {
		uint8_t v[4] = {(uint8_t)version, 0, 0, 0};
		fseek(f, 8, SEEK_SET);
		fwrite(v, 1, 4, f);
		fclose(f);
	}
	struct seen seen = {0};
	struct ulma_trace_visitor vis = {.ctx = &seen, .on_events = on_events, .on_memory = on_memory};
	if (!err)
		err = ulma_trace_read_path(path, &vis, st);
	unlink(path);
	free(path);
	return err;
}

static void test_refused(void)
{
	struct ulma_trace_status st;
	/* base time 5, then word (0 << 2 | EXT), kind FREE, zigzag(2^48) as a varint */
	const uint8_t past[] = {5, ULMA_TAG_EXT, ULMA_EXT_FREE, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x04};
	int err = read_one(5, past, sizeof(past), &st);
	CHECK(err == -EPROTO && strstr(st.error, "out of range"), "an address past 2^48: %s", st.error);
	const uint8_t ok[] = {5, ULMA_TAG_EXT, ULMA_EXT_FREE, 0x20};
	err = read_one(4, ok, sizeof(ok), &st);
	CHECK(err == -EPROTO && strstr(st.error, "unknown event extension 9"), "version 4 with a free: %s", st.error);
	const uint8_t obj[] = {5, ULMA_TAG_EXT, ULMA_EXT_OBJ_NEW, 7};
	err = read_one(5, obj, sizeof(obj), &st);
	CHECK(err == -EPROTO && strstr(st.error, "unknown event extension 10"), "version 5 with an object: %s", st.error);
	err = read_one(6, obj, sizeof(obj), &st);
	CHECK(err == -EPROTO && strstr(st.error, "undefined type"), "an object of an undefined type: %s", st.error);
}

static void test_flush_order(void)
{
	char *path = temp_path();
	if (!CHECK(path != NULL, "temp file"))
		return;
	struct ulma_trace_meta meta = {ULMA_META_MEMORY, 42, 1000, 777000, 1000000000u, "prog", 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *a, *b;
	int err = ulma_trace_writer_open(path, &meta, &w);
	err = err ? err : ulma_trace_define_file(w, 0, "/p/m.py", 7);
	err = err ? err : ulma_trace_define_func(w, 1, ULMA_DEF_PY, 0, 1, "f", 1);
	err = err ? err : ulma_trace_stream_open(w, 0, 42, 42, &a);
	err = err ? err : ulma_trace_stream_open(w, 1, 42, 43, &b);
	if (!CHECK_EQ_I64(err, 0, "a writer with two streams"))
		goto out;
	CHECK(!ulma_trace_stream_has_memory(a), "no chunk begun: no memory");
	ulma_trace_enter(a, 1100, 0, 1, false);
	CHECK(!ulma_trace_stream_has_memory(a), "an entry alone is no memory");
	ulma_trace_alloc(a, 1101, 0x1000, 32, ULMA_MEM_OBJ);
	CHECK(ulma_trace_stream_has_memory(a), "an allocation is");
	/* b's records are older, but a's chunk is flushed first */
	ulma_trace_enter(b, 1000, 0, 1, false);
	ulma_trace_free(b, 1001, 0x1000);
	CHECK(ulma_trace_stream_has_memory(b), "a free is memory too");
	CHECK_EQ_I64(ulma_trace_stream_flush(a), 0, "a's chunk written");
	CHECK(!ulma_trace_stream_has_memory(a), "none pending after a flush");
	CHECK_EQ_I64(ulma_trace_stream_flush(b), 0, "b's chunk written");
	ulma_trace_exit(a, 1110, 0);
	CHECK(!ulma_trace_stream_has_memory(a), "a new chunk without memory");
	ulma_trace_exit(b, 1010, 0);
	struct ulma_trace_end end = {2000, 778000, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	CHECK_EQ_I64(ulma_trace_writer_close(w, &end), 0, "closed");

	struct seen seen = {0};
	struct ulma_trace_visitor v = {.ctx = &seen, .on_events = on_events, .on_memory = on_memory};
	struct ulma_trace_status st;
	err = ulma_trace_read_path(path, &v, &st);
	CHECK(err == 0 && seen.nmem == 2, "two memory records (%d, %s)", err, st.error);
	CHECK(seen.mem[0].kind == ULMA_EXT_ALLOC && seen.mem[0].ticks == 1101 && seen.mem[1].kind == ULMA_EXT_FREE &&
		      seen.mem[1].ticks == 1001 && seen.mem[0].thread != seen.mem[1].thread,
	      "in the order their chunks were flushed, not by time");
out:
	unlink(path);
	free(path);
}

int main(void)
{
	test_round_trip();
	test_flush_order();
	test_refused();
	return tap_done();
}
