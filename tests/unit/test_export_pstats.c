/* test_export_pstats.c - the pstats export's keys (src/analysis/export_pstats.c)
 * on a hand-written trace holding every kind of definition: each kind's
 * cProfile label, Python functions by co_name, a kind-2 method as a trace
 * older than the method kinds has it, and functions with one key merged
 * into one entry, with recursion between them counted as recursion.  The
 * marshalled output is searched for each key's name followed by its
 * (cc, nc, ...) tuple; tests/py/test_export_pstats.py checks the same
 * rules against cProfile itself. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/export.h"
#include "core/trace_writer.h"
#include "tap.h"
#include "ulma/shm.h"

static char trace_path[4096];

struct def {
	uint32_t id;
	uint8_t kind;
	uint32_t file, line;
	const char *name;
	unsigned calls; /* root frames of it, one after another */
};

/* file 0 is "/src/app.py", file 1 "~" */
static const struct def defs[] = {
	{1, ULMA_DEF_PY, 0, 3, "Shape.make", 1},
	{2, ULMA_DEF_C, 1, 0, "time.sleep", 2},
	{3, ULMA_DEF_C_METHOD, 1, 0, "list.append", 3},
	{4, ULMA_DEF_C_METHOD, 1, 0, "datetime.datetime.isoformat", 1},
	{5, ULMA_DEF_C_CLASSMETHOD, 1, 0, "dict.fromkeys", 2},
	{6, ULMA_DEF_C_CLASSMETHOD, 1, 0, "collections.OrderedDict.fromkeys", 3},
	{7, ULMA_DEF_C_UNBOUND, 1, 0, "builtins.len", 1},
	{8, ULMA_DEF_C_UNBOUND, 1, 0, "ignore_errors", 2},
	{9, ULMA_DEF_C_UNBOUND, 1, 0, "_codecs.strict_errors", 1},
	{10, ULMA_DEF_C, 1, 0, "list.append", 4}, /* as traces before kind 3 have it */
	{11, ULMA_DEF_PY, 0, 9, "f.<locals>.<lambda>", 1}, /* calls 12 once */
	{12, ULMA_DEF_PY, 0, 9, "<lambda>", 0},
};
#define NDEFS (sizeof(defs) / sizeof(defs[0]))

static int write_trace(void)
{
	const char *dir = getenv("TMPDIR");
	snprintf(trace_path, sizeof(trace_path), "%s/ulma-test-pstats-XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(trace_path);
	if (fd < 0)
		return -errno;
	close(fd);
	struct ulma_trace_meta meta = {.pid = 10, .start_ticks = 1000, .start_ns = 1000, .tick_hz = 1000000000,
				       .command = "python app.py"};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *s;
	int err = ulma_trace_writer_open(trace_path, &meta, &w);
	if (err)
		return err;
	ulma_trace_define_file(w, 0, "/src/app.py", 11);
	ulma_trace_define_file(w, 1, "~", 1);
	for (size_t i = 0; i < NDEFS; i++)
		ulma_trace_define_func(w, defs[i].id, defs[i].kind, defs[i].file, defs[i].line, defs[i].name,
				       strlen(defs[i].name));
	if ((err = ulma_trace_stream_open(w, 0, 10, 10, &s))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	uint64_t t = 1000;
	for (size_t i = 0; i < NDEFS; i++) {
		for (unsigned c = 0; c < defs[i].calls; c++) {
			ulma_trace_enter(s, t += 10, 0, defs[i].id, 0);
			if (defs[i].id == 11) {
				ulma_trace_enter(s, t += 10, 0, 12, 11);
				ulma_trace_exit(s, t += 10, 0);
			}
			ulma_trace_exit(s, t += 10, 0);
		}
	}
	struct ulma_trace_end end = {.end_ticks = t + 10, .end_ns = t + 10, .events = 0, .exit_status = 0};
	return ulma_trace_writer_close(w, &end);
}

/* The export of the trace, in memory. */
static char *export_it(size_t *len)
{
	struct ulma_export_opts o;
	struct ulma_export_result res;
	memset(&o, 0, sizeof(o));
	ulma_walk_filter_init(&o.filter);
	char *buf = NULL;
	FILE *out = open_memstream(&buf, len);
	FILE *in = fopen(trace_path, "rb");
	int err = in && out ? ulma_export_pstats(in, &o, out, NULL, &res) : -errno;
	if (in)
		fclose(in);
	if (out)
		fclose(out);
	if (!CHECK(err == 0, "export (%d)", err)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static uint32_t le32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;
	return u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
}

/* How many entries (not callers) are keyed by `name`; the last one's cc, nc. */
static int entries(const char *buf, size_t len, const char *name, uint32_t *cc, uint32_t *nc)
{
	size_t n = strlen(name);
	int found = 0;
	for (size_t i = 0; i + 5 + n + 12 <= len; i++) {
		if (buf[i] != 'u' || le32(buf + i + 1) != n || memcmp(buf + i + 5, name, n) != 0)
			continue;
		const char *v = buf + i + 5 + n; /* ')' 5 'i' cc 'i' nc for an entry, ')' 4 in callers */
		if (v[0] == ')' && v[1] == 5 && v[2] == 'i' && v[7] == 'i') {
			*cc = le32(v + 3);
			*nc = le32(v + 8);
			found++;
		}
	}
	return found;
}

static void test_keys(void)
{
	static const struct {
		const char *name;
		uint32_t cc, nc;
	} want[] = {
		{"make", 1, 1},
		{"<built-in method time.sleep>", 2, 2},
		{"<method 'append' of 'list' objects>", 3, 3},
		{"<method 'isoformat' of 'datetime.datetime' objects>", 1, 1},
		{"<built-in method fromkeys>", 5, 5},
		{"<len>", 1, 1},
		{"<ignore_errors>", 2, 2},
		{"<_codecs.strict_errors>", 1, 1},
		{"<built-in method list.append>", 4, 4},
		{"<lambda>", 1, 2},
	};
	size_t len = 0;
	char *buf = export_it(&len);
	if (!buf)
		return;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		uint32_t cc = 0, nc = 0;
		int n = entries(buf, len, want[i].name, &cc, &nc);
		CHECK(n == 1 && cc == want[i].cc && nc == want[i].nc, "%s: one entry, %u/%u calls (%d entries, %u/%u)",
		      want[i].name, want[i].nc, want[i].cc, n, nc, cc);
	}
	uint32_t cc, nc;
	CHECK(entries(buf, len, "Shape.make", &cc, &nc) == 0 &&
		      entries(buf, len, "<built-in method dict.fromkeys>", &cc, &nc) == 0,
	      "no key keeps a qualified name");
	free(buf);
}

int main(void)
{
	int err = write_trace();
	if (CHECK(err == 0, "trace written (%d)", err)) {
		test_keys();
		unlink(trace_path);
	}
	return tap_done();
}
