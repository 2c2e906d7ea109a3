/* hostile_trace.c - write the traces of issue 18's bad-input list with the
 * real trace writer, for tests/py/test_hostile_traces.py:
 *
 *   hostile_trace funcs N OUT    N functions, each called once from main
 *   hostile_trace threads N OUT  N threads, each main -> work
 *   hostile_trace names OUT      names and files with control characters,
 *                                escape sequences, right-to-left text and
 *                                overrides, markup and invalid UTF-8; a
 *                                thread named likewise
 *   hostile_trace deep N OUT     a recursion N frames deep
 *
 * Ticks are ns (no TSC), 1000 apart; no hook cost, so times are exact.
 * Exits 0, or 1 with a message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/trace_writer.h"
#include "ulma/shm.h"
#include "ulma/trace_format.h"

#define PID 4242
#define STEP 1000

static const char *const odd_names[] = {
	"esc\x1b[31mred\x1b[0m",
	"bell\x07 and\nnewline\tand tab",
	"del\x7f c1\xc2\x9b csi",
	"line\xe2\x80\xa8separator",
	"\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d rtl hebrew",
	"\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7 arabic",
	"override \xe2\x80\xae" "gnp.exe",
	"isolate \xe2\x81\xa7" "abc\xe2\x81\xa9 end",
	"</script><script>alert(1)</script>",
	"quote\" back\\slash ' &amp;",
	"invalid \xff\xfe utf8 \xc3",
	"",
	"cjk \xe5\x87\xbd\xe6\x95\xb0 emoji \xf0\x9f\x94\xa5",
};
#define NODD (sizeof(odd_names) / sizeof(odd_names[0]))

static int fail(const char *what, int err)
{
	fprintf(stderr, "hostile_trace: %s: %s\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

static int finish(struct ulma_trace_writer *w, uint64_t t, uint64_t events)
{
	struct ulma_trace_end end = {.end_ticks = t, .end_ns = t, .events = events, .exit_status = 0};
	int err = ulma_trace_writer_close(w, &end);
	return err ? fail("close", err) : 0;
}

static int open_trace(const char *path, struct ulma_trace_writer **w)
{
	struct ulma_trace_meta meta = {.pid = PID, .tick_hz = 1000000000u, .command = "hostile"};
	int err = ulma_trace_writer_open(path, &meta, w);
	if (!err)
		err = ulma_trace_define_file(*w, 0, "/tmp/hostile.py", 15);
	if (!err)
		err = ulma_trace_define_func(*w, 1, ULMA_DEF_PY, 0, 1, "main", 4);
	if (err)
		return fail(path, err);
	return 0;
}

static int funcs(uint32_t n, const char *path)
{
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *s;
	if (open_trace(path, &w))
		return 1;
	char name[32];
	for (uint32_t i = 0; i < n; i++) {
		int len = snprintf(name, sizeof(name), "f%u", i);
		int err = ulma_trace_define_func(w, 2 + i, ULMA_DEF_PY, 0, 2 + i, name, (size_t)len);
		if (err)
			return fail("define", err);
	}
	int err = ulma_trace_stream_open(w, 0, PID, PID, &s);
	if (err)
		return fail("stream", err);
	uint64_t t = STEP;
	ulma_trace_enter(s, t, 0, 1, false);
	for (uint32_t i = 0; i < n; i++) {
		ulma_trace_enter(s, t += STEP, 0, 2 + i, false);
		ulma_trace_exit(s, t += STEP, 0);
	}
	ulma_trace_exit(s, t += STEP, 0);
	return finish(w, t + STEP, 2 + 2 * (uint64_t)n);
}

static int threads(uint32_t n, const char *path)
{
	struct ulma_trace_writer *w;
	if (open_trace(path, &w))
		return 1;
	int err = ulma_trace_define_func(w, 2, ULMA_DEF_PY, 0, 5, "work", 4);
	if (err)
		return fail("define", err);
	uint64_t t = STEP;
	for (uint32_t i = 0; i < n; i++) {
		struct ulma_trace_stream *s;
		if ((err = ulma_trace_stream_open(w, i, PID, PID + i, &s)))
			return fail("stream", err);
		ulma_trace_enter(s, t += STEP, i % 4, 1, false);
		ulma_trace_enter(s, t += STEP, i % 4, 2, false);
		ulma_trace_exit(s, t += STEP, i % 4);
		ulma_trace_exit(s, t += STEP, i % 4);
		if ((err = ulma_trace_writer_flush(w)))
			return fail("flush", err);
	}
	return finish(w, t + STEP, 4 * (uint64_t)n);
}

static int names(const char *path)
{
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *s;
	if (open_trace(path, &w))
		return 1;
	int err = 0;
	for (uint32_t i = 0; i < NODD && !err; i++) {
		err = ulma_trace_define_file(w, 1 + i, odd_names[i], strlen(odd_names[i]));
		if (!err)
			err = ulma_trace_define_func(w, 2 + i, ULMA_DEF_PY, 1 + i, 1 + i, odd_names[i], strlen(odd_names[i]));
	}
	/* a thread named with the first odd name, through a mark */
	if (!err)
		err = ulma_trace_define_func(w, 2 + NODD, ULMA_DEF_MARK, 0, 0, odd_names[0], strlen(odd_names[0]));
	if (!err)
		err = ulma_trace_process(w, PID, 0, odd_names[1], strlen(odd_names[1]));
	if (!err)
		err = ulma_trace_stream_open(w, 0, PID, PID, &s);
	if (err)
		return fail("define", err);
	uint64_t t = STEP;
	ulma_trace_mark(s, t, ULMA_EXT_THREAD_NAME, 2 + NODD, 0.0);
	ulma_trace_enter(s, t += STEP, 0, 1, false);
	for (uint32_t i = 0; i < NODD; i++) { /* each odd function calls the next, then all return */
		ulma_trace_enter(s, t += STEP, 0, 2 + i, false);
		ulma_trace_enter(s, t += STEP, 0, 2 + (i + 1) % NODD, false);
		ulma_trace_exit(s, t += STEP, 0);
		ulma_trace_exit(s, t += STEP, 0);
	}
	ulma_trace_exit(s, t += STEP, 0);
	return finish(w, t + STEP, 2 + 4 * (uint64_t)NODD);
}

static int deep(uint32_t n, const char *path)
{
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *s;
	if (open_trace(path, &w))
		return 1;
	int err = ulma_trace_define_func(w, 2, ULMA_DEF_PY, 0, 3, "rec", 3);
	if (!err)
		err = ulma_trace_stream_open(w, 0, PID, PID, &s);
	if (err)
		return fail("define", err);
	uint64_t t = STEP;
	ulma_trace_enter(s, t, 0, 1, false);
	for (uint32_t i = 0; i < n; i++)
		ulma_trace_enter(s, t += STEP, 0, 2, i > 0);
	for (uint32_t i = 0; i < n; i++)
		ulma_trace_exit(s, t += STEP, 0);
	ulma_trace_exit(s, t += STEP, 0);
	return finish(w, t + STEP, 2 + 2 * (uint64_t)n);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "names") == 0)
		return names(argv[2]);
	if (argc == 4) {
		uint32_t n = (uint32_t)strtoul(argv[2], NULL, 10);
		if (strcmp(argv[1], "funcs") == 0)
			return funcs(n, argv[3]);
		if (strcmp(argv[1], "threads") == 0)
			return threads(n, argv[3]);
		if (strcmp(argv[1], "deep") == 0)
			return deep(n, argv[3]);
	}
	fputs("usage: hostile_trace funcs N OUT | threads N OUT | names OUT | deep N OUT\n", stderr);
	return 2;
}
