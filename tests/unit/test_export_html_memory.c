/* test_export_html_memory.c - the memory data of the HTML report and the
 * timeline exports' object counts, on a hand-written --memory trace with
 * known answers:
 *
 * thread A: main > grow allocates four 1000-byte blocks (the fourth makes
 * the peak), frees three of them, then main leaks 200 bytes; thread B:
 * other allocates 500 bytes before grow's and keeps them, and a block it
 * frees and allocates again after the peak.  Objects: 5 `list` made in
 * grow (2 destroyed), 1 `dict` in other.
 *
 * The first walk finds the peak (4500 bytes) and its record; the second
 * (ulma_html_memory_replay) stops there: the peak's stacks are main > grow
 * 4000 bytes in 4 blocks and other 500 in 1, adding up to the peak.  With
 * --thread A the peak is 4000, of grow's alone.  The object counts end at
 * 3 lists and 1 dict, the list's series peaking at 5, and both are drawn;
 * merged in time order (the CTF and OTF2 exports' order), the dict's
 * point comes first and the lists' 3 last.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/export_html_memory.h"
#include "analysis/export_objects.h"
#include "core/trace_writer.h"
#include "tap.h"
#include "ulma/shm.h"
#include "ulma/trace_format.h"

static int write_trace(const char *path)
{
	struct ulma_trace_meta meta = {ULMA_META_MEMORY, 50, 1000, 1000000, 1000000000u, "python grow.py", 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *a, *b;
	int err = ulma_trace_writer_open(path, &meta, &w);
	if (err)
		return err;
	ulma_trace_define_file(w, 0, "/t/grow.py", 10);
	ulma_trace_define_file(w, 1, "~", 1);
	ulma_trace_define_func(w, 1, ULMA_DEF_PY, 0, 1, "main", 4);
	ulma_trace_define_func(w, 2, ULMA_DEF_PY, 0, 5, "grow", 4);
	ulma_trace_define_func(w, 3, ULMA_DEF_PY, 0, 9, "other", 5);
	ulma_trace_define_func(w, 4, ULMA_DEF_TYPE, 1, 0, "list", 4);
	ulma_trace_define_func(w, 5, ULMA_DEF_TYPE, 1, 0, "dict", 4);
	if ((err = ulma_trace_stream_open(w, 0, 50, 50, &a)) || (err = ulma_trace_stream_open(w, 1, 50, 51, &b))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	uint64_t base = 0x7f0000000000;
	ulma_trace_enter(b, 1010, 0, 3, false);
	ulma_trace_alloc(b, 1011, base + 0x9000, 500, ULMA_MEM_MEM);
	ulma_trace_object(b, 1011, ULMA_EXT_OBJ_NEW, 5);
	ulma_trace_exit(b, 1012, 0);
	ulma_trace_writer_flush(w); /* B's records come first */
	ulma_trace_enter(a, 1020, 0, 1, false);
	ulma_trace_enter(a, 1021, 0, 2, false);
	for (uint64_t k = 0; k < 4; k++) {
		ulma_trace_alloc(a, 1022 + k, base + k * 0x1000, 1000, ULMA_MEM_OBJ);
		ulma_trace_object(a, 1022 + k, ULMA_EXT_OBJ_NEW, 4);
	}
	ulma_trace_object(a, 1026, ULMA_EXT_OBJ_NEW, 4);
	for (uint64_t k = 0; k < 3; k++)
		ulma_trace_free(a, 1030 + k, base + k * 0x1000);
	ulma_trace_object(a, 1033, ULMA_EXT_OBJ_FREE, 4);
	ulma_trace_object(a, 1033, ULMA_EXT_OBJ_FREE, 4);
	ulma_trace_exit(a, 1034, 0);
	ulma_trace_alloc(a, 1035, base + 0x8000, 200, ULMA_MEM_MEM);
	ulma_trace_exit(a, 1036, 0);
	ulma_trace_writer_flush(w);
	ulma_trace_enter(b, 1040, 0, 3, false);
	ulma_trace_alloc(b, 1041, base + 0xa000, 300, ULMA_MEM_MEM);
	ulma_trace_free(b, 1042, base + 0xa000);
	ulma_trace_exit(b, 1043, 0);
	struct ulma_trace_end end = {1100, 1000100, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	return ulma_trace_writer_close(w, &end);
}

struct sink_state {
	struct ulma_html_memory mem;
	struct ulma_profile p;
	struct ulma_xobjects objects;
};

static int on_memory(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_trace_memory *m,
		     uint64_t at_ns)
{
	struct sink_state *s = ctx;
	(void)w, (void)thread, (void)m;
	ulma_html_memory_record(&s->mem, &s->p, at_ns);
	return 0;
}

static int on_object(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_trace_object *o,
		     uint64_t at_ns)
{
	struct sink_state *s = ctx;
	return ulma_xobjects_add(&s->objects, w, thread, o, at_ns);
}

static const char *stack_text(const struct ulma_walk *w, const struct ulma_profile *p, uint32_t node, char *out,
			      size_t cap)
{
	uint32_t funcs[8], n = ulma_profile_memory_stack(p, node, funcs, 8);
	out[0] = 0;
	for (uint32_t i = 0; i < n; i++) {
		strncat(out, i ? ">" : "", cap - strlen(out) - 1);
		strncat(out, w->funcs[funcs[i]].name, cap - strlen(out) - 1);
	}
	return out;
}

static void check(const char *path, int64_t tid)
{
	struct sink_state s = {0};
	struct ulma_export_opts o = {0};
	struct ulma_walk w;
	struct ulma_trace_status st;
	char text[64];
	ulma_walk_filter_init(&o.filter);
	o.filter.tid = tid;
	ulma_profile_init(&s.p);
	struct ulma_walk_sink sink = {.ctx = &s, .profile = &s.p, .on_memory = on_memory, .on_object = on_object};
	FILE *f = fopen(path, "rb");
	if (!CHECK(f != NULL, "open"))
		return;
	ulma_walk_init(&w, &o.filter);
	CHECK_EQ_I64(ulma_walk_run(&w, f, &sink, &st), 0, "first walk");
	CHECK_EQ_I64(ulma_html_memory_replay(&s.mem, f, 0, &o), 0, "second walk");
	if (tid == ULMA_WALK_ALL) {
		CHECK_EQ_U64(s.mem.peak_bytes, 4500, "the peak: four of grow's blocks and other's");
		CHECK_EQ_U64(s.mem.peak_record, 5, "made by the fifth record (B's first, then grow's four)");
		CHECK_EQ_U64(s.mem.nat_peak, 2, "two stacks held it");
		if (s.mem.nat_peak == 2) {
			CHECK(s.mem.at_peak[0].bytes == 4000 && s.mem.at_peak[0].count == 4, "grow's four blocks");
			CHECK(strcmp(stack_text(&w, &s.mem.replay, s.mem.at_peak[0].node, text, sizeof(text)), "main>grow") ==
				      0,
			      "main>grow: %s", text);
			CHECK(s.mem.at_peak[1].bytes == 500 && s.mem.at_peak[1].count == 1, "other's block");
			CHECK(strcmp(stack_text(&w, &s.mem.replay, s.mem.at_peak[1].node, text, sizeof(text)), "other") == 0,
			      "other: %s", text);
		}
		CHECK_EQ_U64(s.mem.peak_at_ns, 25, "at the fourth block's time (1025 ticks, from 1000)");
		ulma_xobjects_choose(&s.objects);
		CHECK_EQ_U64(s.objects.n, 2, "two (process, type) pairs");
		if (s.objects.n == 2) {
			const struct ulma_xobj_track *l = &s.objects.t[0], *d = &s.objects.t[1];
			CHECK(strcmp(w.funcs[l->type].name, "list") == 0 && l->net == 3 && l->s.max == 5 && l->drawn,
			      "list: 5 at most, 3 at the end, drawn first");
			CHECK(strcmp(w.funcs[d->type].name, "dict") == 0 && d->net == 1 && d->drawn, "dict: 1, drawn");
			ulma_xobjects_name(&w, l, text, sizeof(text));
			CHECK(strcmp(text, "objects: list (created - destroyed)") == 0, "named: %s", text);
			struct ulma_xobj_point *pts;
			uint32_t n, end, ordered = 1;
			CHECK_EQ_I64(ulma_xobjects_merged(&s.objects, 0, &end, &pts, &n), 0, "the process's points merged");
			for (uint32_t i = 1; i < n; i++)
				ordered &= pts[i - 1].at <= pts[i].at;
			CHECK(end == 2 && n >= 4 && ordered, "both tracks, in time order (%u points)", n);
			CHECK(n && pts[0].track == 1 && pts[0].v == 1, "dict's object first (thread B, before grow)");
			CHECK(n && pts[n - 1].track == 0 && pts[n - 1].v == 3, "the lists' 3 last");
			free(pts);
		}
	} else {
		CHECK_EQ_U64(s.mem.peak_bytes, 4000, "thread A alone: grow's four blocks");
		CHECK(s.mem.nat_peak == 1 && s.mem.at_peak[0].bytes == 4000, "one stack, grow's");
		CHECK(s.objects.n == 1 && s.objects.t[0].net == 3, "thread A's lists only");
	}
	fclose(f);
	ulma_walk_free(&w);
	ulma_html_memory_free(&s.mem);
	ulma_xobjects_free(&s.objects);
	ulma_profile_free(&s.p);
}

int main(void)
{
	char path[] = "/tmp/ulma-test-html-memory-XXXXXX";
	int fd = mkstemp(path);
	if (!CHECK(fd >= 0, "temporary file"))
		return tap_done();
	close(fd);
	if (CHECK_EQ_I64(write_trace(path), 0, "trace written")) {
		check(path, ULMA_WALK_ALL);
		check(path, 50);
	}
	unlink(path);
	return tap_done();
}
