/* test_export_native.c - native functions, zones and marks in every export
 * (src/analysis/export_*.c) on a hand-written version 4 trace: each
 * format's category, name or key for a native function with and without
 * debug information and for a zone; the instants, counter values and
 * thread names of the timeline formats, at times corrected as the events
 * around them are; and the walker's promise that marks come in time order
 * with the frames when a filter delays the frames' opens.  Outputs are
 * searched for exact strings and bytes; tests/py/test_export_native.py
 * checks a real program's trace with the formats' own readers. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/export.h"
#include "core/trace_writer.h"
#include "tap.h"
#include "ulma/shm.h"
#include "ulma/trace_format.h"
#ifdef ULMA_HAVE_ZLIB
#include <zlib.h>
#endif

static char trace_path[4096];

/* File 0 "~", 1 "k.c", 2 "/src/app.py".  Ticks are ns (no TSC flag) from
 * 1000; the hook's cost is 1 ns per event, so an event's corrected time
 * is its time less 1 ns per earlier event of its thread. */
static int write_trace(void)
{
	const char *dir = getenv("TMPDIR");
	snprintf(trace_path, sizeof(trace_path), "%s/ulma-test-native-XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(trace_path);
	if (fd < 0)
		return -errno;
	close(fd);
	struct ulma_trace_meta meta = {.pid = 10, .start_ticks = 1000, .start_ns = 5000, .tick_hz = 1000000000,
				       .command = "./prog"};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *a, *b;
	int err = ulma_trace_writer_open(trace_path, &meta, &w);
	if (err)
		return err;
	err = ulma_trace_define_file(w, 0, "~", 1);
	err = err ? err : ulma_trace_define_file(w, 1, "k.c", 3);
	err = err ? err : ulma_trace_define_file(w, 2, "/src/app.py", 11);
	err = err ? err : ulma_trace_define_func(w, 1, ULMA_DEF_PY, 2, 1, "main", 4);
	err = err ? err : ulma_trace_define_func(w, 2, ULMA_DEF_ZONE, 1, 30, "load.json", 9);
	err = err ? err : ulma_trace_define_func(w, 3, ULMA_DEF_NATIVE, 1, 12, "kernel.constprop.0", 18);
	err = err ? err : ulma_trace_define_func(w, 4, ULMA_DEF_NATIVE, 0, 0, "0x1234", 6);
	err = err ? err : ulma_trace_define_func(w, 5, ULMA_DEF_C, 0, 0, "builtins.len", 12);
	err = err ? err : ulma_trace_define_func(w, 6, ULMA_DEF_MARK, 0, 0, "checkpoint", 10);
	err = err ? err : ulma_trace_define_func(w, 7, ULMA_DEF_MARK, 0, 0, "queue", 5);
	err = err ? err : ulma_trace_define_func(w, 8, ULMA_DEF_MARK, 0, 0, "worker-1", 8);
	err = err ? err : ulma_trace_overhead(w, 1000);
	err = err ? err : ulma_trace_stream_open(w, 0, 10, 10, &a);
	err = err ? err : ulma_trace_stream_open(w, 1, 10, 11, &b);
	if (err) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	ulma_trace_enter(a, 1100, 0, 1, false);               /* main: 100 */
	ulma_trace_mark(a, 1105, ULMA_EXT_THREAD_NAME, 8, 0); /* 104 */
	ulma_trace_enter(a, 1110, 0, 2, false);               /* load.json: 109 */
	ulma_trace_enter(a, 1120, 0, 3, false);               /* kernel: 118 */
	ulma_trace_mark(a, 1125, ULMA_EXT_INSTANT, 6, 0);     /* 122 */
	ulma_trace_exit(a, 1130, 0);                          /* 127 */
	ulma_trace_mark(a, 1135, ULMA_EXT_COUNTER, 7, 2.5);   /* 131 */
	ulma_trace_enter(a, 1140, 0, 4, false);               /* 0x1234: 136 */
	ulma_trace_exit(a, 1150, 0);                          /* 145 */
	ulma_trace_enter(a, 1160, 0, 5, false);               /* builtins.len: 154 */
	ulma_trace_exit(a, 1170, 0);                          /* 163 */
	ulma_trace_exit(a, 1180, 0);                          /* load.json ends: 172 */
	ulma_trace_mark(a, 1185, ULMA_EXT_COUNTER, 7, NAN);   /* 176, left out where JSON holds it */
	ulma_trace_mark(a, 1190, ULMA_EXT_COUNTER, 7, -1e300); /* 181 */
	ulma_trace_exit(a, 1200, 0);                          /* main ends: 190 */
	ulma_trace_enter(b, 1300, 1, 4, false);               /* thread 11, never named */
	ulma_trace_exit(b, 1310, 1);
	struct ulma_trace_end end = {1400, 5400, 14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	return ulma_trace_writer_close(w, &end);
}

struct out {
	char *p;
	size_t len;
};

/* Export the trace in format name (a file format) into o; returns the export's result. */
static int export_with(const char *name, const struct ulma_walk_filter *flt, bool counts, bool no_compress,
		       struct out *o)
{
	const struct ulma_export_format *fmt = ulma_export_find(name);
	struct ulma_export_opts opts;
	struct ulma_export_result res;
	memset(&opts, 0, sizeof(opts));
	if (flt)
		opts.filter = *flt;
	else
		ulma_walk_filter_init(&opts.filter);
	opts.counts = counts;
	opts.no_compress = no_compress;
	o->p = NULL;
	o->len = 0;
	FILE *in = fopen(trace_path, "rb"), *out = open_memstream(&o->p, &o->len);
	int err = in && out && fmt ? fmt->write(in, &opts, out, NULL, &res) : -EIO;
	if (in)
		fclose(in);
	if (out)
		fclose(out);
	return err;
}

static int export_to(const char *name, const struct ulma_walk_filter *flt, bool counts, struct out *o)
{
	return export_with(name, flt, counts, false, o);
}

/* Whether needle[0..n) occurs in o. */
static bool has(const struct out *o, const void *needle, size_t n)
{
	return o->p && memmem(o->p, o->len, needle, n) != NULL;
}

static bool has_s(const struct out *o, const char *s)
{
	return has(o, s, strlen(s));
}

static size_t count_s(const struct out *o, const char *s)
{
	size_t n = 0, k = strlen(s);
	for (const char *p = o->p; p && (p = memmem(p, o->len - (size_t)(p - o->p), s, k)) != NULL; p += k)
		n++;
	return n;
}

static void test_chrome(void)
{
	struct out o;
	int err = export_to("chrome", NULL, false, &o);
	CHECK_EQ_I64(err, 0, "chrome export");
	CHECK(has_s(&o, "{\"ph\":\"X\",\"name\":\"kernel.constprop.0\",\"cat\":\"native\",\"args\":{\"loc\":\"k.c:12\"},"
			"\"ts\":0.118,\"dur\":0.009,"),
	      "a native function with debug information: cat native, its location, corrected times");
	CHECK(has_s(&o, "\"name\":\"0x1234\",\"cat\":\"native\",\"ts\":0.136,"), "one without: cat native, no location");
	CHECK(has_s(&o, "\"name\":\"load.json\",\"cat\":\"zone\",\"args\":{\"loc\":\"k.c:30\"}"), "a zone: cat zone");
	CHECK(has_s(&o, "\"name\":\"builtins.len\",\"cat\":\"c\",\"ts\""), "a C function: cat c, no location");
	CHECK(has_s(&o, "\"name\":\"main\",\"cat\":\"python\",\"args\":{\"loc\":\"/src/app.py:1\"}"), "Python: cat python");
	CHECK(has_s(&o, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"instant\",\"name\":\"checkpoint\",\"ts\":0.122,\"pid\":10,"
			"\"tid\":10}"),
	      "the instant on its thread, inside its frame [0.118, 0.127]");
	CHECK(has_s(&o, "{\"ph\":\"C\",\"cat\":\"counter\",\"name\":\"queue\",\"args\":{\"queue\":2.5},\"ts\":0.131,"),
	      "a counter's value, as args {name: value}");
	CHECK(has_s(&o, "\"args\":{\"queue\":-1e+300},\"ts\":0.181,"), "an extreme value exactly");
	CHECK(count_s(&o, "\"ph\":\"C\"") == 2 && has_s(&o, "\"counter_values_not_finite\":1"),
	      "NaN has no JSON number: left out, and said so");
	CHECK(has_s(&o, "\"name\":\"thread_name\",\"pid\":10,\"tid\":10,\"args\":{\"name\":\"worker-1\"}"),
	      "the thread's name from its mark");
	CHECK(has_s(&o, "\"name\":\"thread_name\",\"pid\":10,\"tid\":11,\"args\":{\"name\":\"thread 11\"}"),
	      "a thread without one keeps ulma's name");
	CHECK(count_s(&o, "\"thread_name\"") == 2, "one name per thread");
	free(o.p);

	/* a window: marks outside it are left out, the thread's name stays */
	struct ulma_walk_filter f;
	ulma_walk_filter_init(&f);
	f.from_ns = 125;
	f.to_ns = 175;
	err = export_to("chrome", &f, false, &o);
	CHECK(err == 0 && count_s(&o, "\"ph\":\"i\"") == 0 && count_s(&o, "\"ph\":\"C\"") == 1 &&
		      has_s(&o, "\"args\":{\"name\":\"worker-1\"}"),
	      "--from/--to keep the marks in the window (%d)", err);
	free(o.p);
}

/* The Perfetto export's packets (docs/exports.md, perfetto), byte for
 * byte: each is the Trace's field 1 (0x0a) and a length, then the
 * sequence id (0x50; the first thread's is 1, the second's 4), the time
 * since the sequence's previous packet (0x40, corrected ns), and the
 * TrackEvent (0x5a): its type (0x48: 1 begin, 2 end, 3 instant, 4
 * counter), its name's interned id (0x50: the function's index + 1), its
 * category (0x18: 1 c, 2 native, 3 zone, 4 instant). */
static void test_perfetto(void)
{
	struct out o;
	int err = export_with("perfetto", NULL, false, true, &o);
	CHECK_EQ_I64(err, 0, "perfetto export, --no-compress");
	static const uint8_t main_begin[] = {0x0a, 0x0a, 0x50, 1, 0x40, 100, 0x5a, 4, 0x48, 1, 0x50, 1};
	CHECK(has(&o, main_begin, sizeof(main_begin)), "main begins at 100 ns, no category: Python");
	static const uint8_t zone[] = {0x0a, 0x0c, 0x50, 1, 0x40, 9, 0x5a, 6, 0x48, 1, 0x50, 2, 0x18, 3};
	CHECK(has(&o, zone, sizeof(zone)), "load.json begins 9 ns later, category zone");
	static const uint8_t native[] = {0x0a, 0x0c, 0x50, 1, 0x40, 9, 0x5a, 6, 0x48, 1, 0x50, 3, 0x18, 2};
	CHECK(has(&o, native, sizeof(native)), "kernel.constprop.0 9 ns later, category native");
	static const uint8_t instant[] = {0x0a, 0x0c, 0x50, 1, 0x40, 4, 0x5a, 6, 0x48, 3, 0x50, 6, 0x18, 4};
	CHECK(has(&o, instant, sizeof(instant)), "the instant at 122 ns, inside the frame");
	static const uint8_t end[] = {0x0a, 0x08, 0x50, 1, 0x40, 5, 0x5a, 2, 0x48, 2};
	CHECK(has(&o, end, sizeof(end)), "the frame ends at 127 ns: 10 bytes");
	static const uint8_t c_begin[] = {0x5a, 6, 0x48, 1, 0x50, 5, 0x18, 1};
	CHECK(has(&o, c_begin, sizeof(c_begin)), "builtins.len: category c");
	static const uint8_t other[] = {0x0a, 0x0d, 0x50, 4, 0x40, 0xac, 0x02, 0x5a, 6, 0x48, 1, 0x50, 4, 0x18, 2};
	CHECK(has(&o, other, sizeof(other)), "thread 11 on its own sequence, from the trace start (300 ns)");
	static const uint8_t value[] = {0xe1, 0x02, 0, 0, 0, 0, 0, 0, 0x04, 0x40}; /* field 44: the double 2.5 */
	CHECK(has(&o, value, sizeof(value)), "a counter's value as a double");
	CHECK(count_s(&o, "\xe1\x02") == 3, "three counter values, NaN included");
	CHECK(has_s(&o, "\x2a\x08worker-1") && has_s(&o, "\x32\x06./prog"),
	      "the thread named by its mark, the process by its command");
	CHECK(count_s(&o, "\x12\x05queue") == 1, "one counter track, named for the counter");
	CHECK(!has_s(&o, "cpu state"), "no state track without OFF records");
	free(o.p);
}

#ifdef ULMA_HAVE_ZLIB
static uint64_t get_varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	for (int shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
	}
	return v;
}

/* The compressed form, by default: each packet's compressed_packets
 * (field 50, key 0x92 0x03) inflates back to the uncompressed export's
 * packets, byte for byte. */
static void test_perfetto_compressed(void)
{
	struct out plain, packed, inflated = {NULL, 0};
	int err = export_with("perfetto", NULL, false, true, &plain);
	err = err ? err : export_with("perfetto", NULL, false, false, &packed);
	CHECK_EQ_I64(err, 0, "perfetto export, compressed and not");
	FILE *f = open_memstream(&inflated.p, &inflated.len);
	const uint8_t *p = (const uint8_t *)packed.p, *end = p + packed.len;
	int packets = 0, bad = 0;
	while (f && p < end && !bad) {
		const uint8_t *start = p;
		bad = *p++ != 0x0a;
		uint64_t n = get_varint(&p, end);
		if (bad || n > (uint64_t)(end - p)) {
			bad = 1;
			break;
		}
		if (n > 2 && p[0] == 0x92 && p[1] == 0x03) {
			const uint8_t *q = p + 2;
			uint64_t zn = get_varint(&q, p + n);
			static uint8_t buf[1 << 20];
			uLongf len = sizeof(buf);
			bad = q + zn != p + n || uncompress(buf, &len, q, (uLong)zn) != Z_OK;
			if (!bad)
				fwrite(buf, 1, len, f);
			packets++;
		} else {
			fwrite(start, 1, (size_t)(p + n - start), f);
		}
		p += n;
	}
	if (f)
		fclose(f);
	CHECK(!bad && packets >= 1, "every packet is a Trace packet; %d compressed", packets);
	CHECK(inflated.len == plain.len && memcmp(inflated.p, plain.p, plain.len) == 0,
	      "inflated, the packets are the uncompressed export's (%zu bytes, %zu)", inflated.len, plain.len);
	CHECK(packed.len < plain.len, "and smaller: %zu bytes for %zu", packed.len, plain.len);
	free(plain.p);
	free(packed.p);
	free(inflated.p);
}
#endif

static void test_speedscope(void)
{
	struct out o;
	int err = export_to("speedscope", NULL, false, &o);
	CHECK_EQ_I64(err, 0, "speedscope export");
	CHECK(has_s(&o, "{\"name\":\"kernel.constprop.0 [native]\",\"file\":\"k.c\",\"line\":12}"),
	      "a native frame: named so, with file and line");
	CHECK(has_s(&o, "{\"name\":\"0x1234 [native]\"}"), "without debug information: no file");
	CHECK(has_s(&o, "{\"name\":\"load.json [zone]\",\"file\":\"k.c\",\"line\":30}"), "a zone");
	CHECK(has_s(&o, "{\"name\":\"builtins.len\"}") && has_s(&o, "{\"name\":\"main\",\"file\":\"/src/app.py\",\"line\":1}"),
	      "C and Python frames as before");
	CHECK(has_s(&o, "\"name\":\"./prog: worker-1 10 (pid 10)\""), "the profile has the thread's name");
	CHECK(has_s(&o, "\"name\":\"./prog: thread 11 (pid 10)\""), "and an unnamed thread ulma's");
	free(o.p);
}

static void test_pstats(void)
{
	struct out o;
	int err = export_to("pstats", NULL, false, &o);
	CHECK_EQ_I64(err, 0, "pstats export");
	/* ) 3 u "k.c" i 12 u "kernel.constprop.0" ) 5 i 1 i 1 */
	static const char native[] = ")\003u\003\0\0\0k.ci\014\0\0\0u\022\0\0\0kernel.constprop.0)\005i\001\0\0\0i\001\0\0\0";
	static const char bare[] = ")\003u\001\0\0\0~i\0\0\0\0u\006\0\0\0000x1234)\005i\002\0\0\0i\002\0\0\0";
	static const char zone[] = ")\003u\003\0\0\0k.ci\036\0\0\0u\011\0\0\0load.json)\005";
	CHECK(has(&o, native, sizeof(native) - 1), "a native function: (file, line, whole name), 1 call");
	CHECK(has(&o, bare, sizeof(bare) - 1), "without debug information: ('~', 0, name), 2 calls");
	CHECK(has(&o, zone, sizeof(zone) - 1), "a zone: (file, line, whole name)");
	CHECK(has_s(&o, "<built-in method builtins.len>"), "a C function keeps cProfile's label");
	CHECK(!has_s(&o, "checkpoint") && !has_s(&o, "queue"), "marks are no functions");
	free(o.p);
}

static void test_callgrind(void)
{
	struct out o;
	int err = export_to("callgrind", NULL, false, &o);
	CHECK_EQ_I64(err, 0, "callgrind export");
	CHECK(has_s(&o, "cfi=(2) k.c\ncfn=(2) load.json\ncalls=1 30\n"), "a zone called in its file, at its line");
	CHECK(has_s(&o, "cfi=(2)\ncfn=(3) kernel.constprop.0\ncalls=1 12\n") && has_s(&o, "fl=(2)\nfn=(3)\n12 9\n"),
	      "a native function with debug information: file k.c, its self time at line 12");
	CHECK(has_s(&o, "fl=(3) ~\n") && has_s(&o, "cfi=(3)\ncfn=(4) 0x1234\ncalls=1 0\n") &&
		      has_s(&o, "fl=(3)\nfn=(4)\n0 18\n"),
	      "one without: file ~, line 0, both threads' time");
	free(o.p);
}

static void test_folded(void)
{
	struct out o;
	int err = export_to("folded", NULL, true, &o);
	CHECK_EQ_I64(err, 0, "folded export");
	CHECK(has_s(&o, "main (/src/app.py:1);load.json (k.c:30);kernel.constprop.0 (k.c:12) 1\n"),
	      "zones and native functions with debug information located");
	CHECK(has_s(&o, "main (/src/app.py:1);load.json (k.c:30);0x1234 1\n") && (has_s(&o, "\n0x1234 1\n") || (o.len > 9 && memcmp(o.p, "0x1234 1\n", 9) == 0)),
	      "native without: the name only");
	CHECK(has_s(&o, "load.json (k.c:30);builtins.len 1\n"), "C functions as before");
	free(o.p);
}

static void test_html(void)
{
	struct out o;
	int err = export_to("html", NULL, false, &o);
	CHECK_EQ_I64(err, 0, "html export");
	CHECK(has_s(&o, "[\"kernel.constprop.0\",\"k.c\",12,\"native\",1,") && has_s(&o, "[\"load.json\",\"k.c\",30,\"zone\",") &&
		      has_s(&o, "[\"builtins.len\",\"~\",0,\"c\",") && has_s(&o, "[\"main\",\"/src/app.py\",1,\"py\","),
	      "each function's kind");
	CHECK(has_s(&o, "\"i\":[122],\"in\":[\"checkpoint\"]"), "the instant on its lane");
	CHECK(has_s(&o, "{\"name\":\"queue\",\"pid\":10,\"values\":2,\"not_finite\":1,\"min\":-1e+300,\"max\":2.5,"
			"\"last\":-1e+300,\"t\":[131,181],\"v\":[2.5,-1e+300]}"),
	      "the counter's figures and points");
	CHECK(has_s(&o, "\"label\":\"./prog: worker-1 10 (pid 10)\",\"name\":\"worker-1\",\"pid\":10,\"tid\":10"),
	      "the lane has the thread's label and name, its process and id");
	CHECK(has_s(&o, "class=\\\"legend\\\"") || has_s(&o, "class=\"legend\""), "the page has a legend");
	free(o.p);
}

static int read_file(const char *path, struct out *o)
{
	FILE *f = fopen(path, "rb");
	o->p = NULL;
	o->len = 0;
	if (!f)
		return -errno;
	char buf[4096];
	size_t n;
	FILE *m = open_memstream(&o->p, &o->len);
	while (m && (n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, m);
	fclose(f);
	if (m)
		fclose(m);
	return 0;
}

/* An event's compact header as export_ctf.c lays it out (5-bit id, the
 * timestamp's low 27 bits) at p, then n bytes of fields; returns the
 * event's length. */
static size_t ctf_event(char *p, uint32_t id, uint64_t ts, const void *fields, size_t n)
{
	uint32_t word = id | (uint32_t)(ts & ((1u << 27) - 1)) << 5;
	for (int i = 0; i < 4; i++)
		p[i] = (char)(word >> (8 * i));
	memcpy(p + 4, fields, n);
	return 4 + n;
}

static void test_ctf(void)
{
	const char *tmp = getenv("TMPDIR");
	char dir[4096], path[4200];
	snprintf(dir, sizeof(dir), "%s/ulma-test-ctf-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!CHECK(mkdtemp(dir) != NULL, "scratch directory"))
		return;
	struct ulma_export_opts opts;
	struct ulma_export_result res;
	memset(&opts, 0, sizeof(opts));
	ulma_walk_filter_init(&opts.filter);
	FILE *in = fopen(trace_path, "rb");
	int err = in ? ulma_export_ctf(in, &opts, NULL, dir, &res) : -EIO;
	if (in)
		fclose(in);
	CHECK_EQ_I64(err, 0, "ctf export");
	struct out meta, s0;
	snprintf(path, sizeof(path), "%s/metadata", dir);
	read_file(path, &meta);
	snprintf(path, sizeof(path), "%s/stream_0", dir);
	read_file(path, &s0);
	CHECK(has_s(&meta, "name = \"ulma:instant\";") && has_s(&meta, "name = \"ulma:counter\";") &&
		      has_s(&meta, "name = \"ulma:thread_name\";") && has_s(&meta, "\t\tdouble_t value;") &&
		      has_s(&meta, "native = 6, zone = 7") && has_s(&meta, "\t\tulma_kind_t kind;") &&
		      has_s(&meta, "name = \"ulma:function\";") && has_s(&meta, "\t\tuint32_t cpu_id;\n\t};"),
	      "the metadata declares the mark events, the double, the kind, the definitions and the packet's cpu");
	CHECK(has_s(&meta, "typealias enum : uint16_t {\n\t\"main\" = 0,\n\t\"load.json\" = 1,\n"
			   "\t\"kernel.constprop.0\" = 2,\n\t\"0x1234\" = 3,\n\t\"builtins.len\" = 4\n} := ulma_func_t;"),
	      "the function ids in order of first entry, labelled with the names");
	static const char header[] = "\xc1\x1f\xfc\xc1\0\0\0\0" /* magic, stream 0 */
				     "\x64\0\0\0\0\0\0\0";         /* begins at main's entry, 100 */
	CHECK(s0.len > 52 && memcmp(s0.p, header, 16) == 0 && memcmp(s0.p + 40, "\x0a\0\0\0\x0a\0\0\0\0\0\0\0", 12) == 0,
	      "the packet's header and context: magic, stream id, first time, pid 10, tid 10, cpu 0");
	char ev[128];
	static const char kernel[] = "\002\0\0\0kernel.constprop.0\0k.c\0\014\0\0\0\006"; /* id 2 ... line 12, kind 6 */
	size_t n = ctf_event(ev, 5, 118, kernel, sizeof(kernel) - 1);
	n += ctf_event(ev + n, 0, 118, "\002\0", 2); /* then the entry: id 2 in 16 bits */
	CHECK(has(&s0, ev, n), "the native function's definition (file, line 12, kind 6), then its entry");
	n = ctf_event(ev, 2, 122, "checkpoint", 11);
	CHECK(has(&s0, ev, n), "the instant, at its corrected time");
	n = ctf_event(ev, 3, 131, "queue", 6);
	double v = 2.5;
	memcpy(ev + n, &v, 8); /* the machine is little-endian, as CTF's byte_order = le says */
	CHECK(has(&s0, ev, n + 8), "the counter's value as a double");
	n = ctf_event(ev, 4, 104, "worker-1", 9);
	CHECK(has(&s0, ev, n), "the thread's name");
	struct out s1;
	snprintf(path, sizeof(path), "%s/stream_1", dir);
	read_file(path, &s1);
	static const char other[] = "\003\0\0\0" "0x1234\0~\0\0\0\0\0\006";
	CHECK(has(&s1, other, sizeof(other) - 1), "the other thread's stream defines 0x1234 (id 3) too");
	free(s1.p);
	free(meta.p);
	free(s0.p);
	for (const char *f = "metadata\0stream_0\0stream_1\0"; *f; f += strlen(f) + 1) {
		snprintf(path, sizeof(path), "%s/%s", dir, f);
		unlink(path);
	}
	rmdir(dir);
}

/* The walker, filtered so that opens wait for closes: marks still come in
 * time order with the frames of their thread. */
struct seq {
	uint64_t last[2];
	bool ordered;
	unsigned marks, opens;
};

static int seq_at(struct seq *q, uint32_t thread, uint64_t at)
{
	if (thread < 2) {
		if (at < q->last[thread])
			q->ordered = false;
		q->last[thread] = at;
	}
	return 0;
}

static int seq_open(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	(void)w;
	((struct seq *)ctx)->opens++;
	return seq_at(ctx, thread, f->start_ns);
}

static int seq_close(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	(void)w;
	return seq_at(ctx, thread, f->end_ns);
}

static int seq_mark(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_mark *m)
{
	(void)w;
	((struct seq *)ctx)->marks++;
	return seq_at(ctx, thread, m->at_ns);
}

static void test_walk_order(void)
{
	static const char *const excl[] = {"kernel*"};
	for (int variant = 0; variant < 3; variant++) {
		struct ulma_walk_filter f;
		ulma_walk_filter_init(&f);
		if (variant == 0)
			f.min_duration_ns = 20; /* main and load.json only, known when they close */
		else if (variant == 1)
			f.exclude = excl, f.nexclude = 1;
		else
			f.from_ns = 125, f.to_ns = 1000; /* the name (104) comes before the clipped opens (125) */
		struct seq q = {{0, 0}, true, 0, 0};
		struct ulma_walk w;
		struct ulma_trace_status st;
		struct ulma_walk_sink sink = {&q, NULL, NULL, seq_open, seq_close, NULL, NULL, seq_mark, NULL, NULL, NULL, NULL, NULL, NULL};
		ulma_walk_init(&w, &f);
		FILE *in = fopen(trace_path, "rb");
		int err = in ? ulma_walk_run(&w, in, &sink, &st) : -EIO;
		if (in)
			fclose(in);
		unsigned want = variant == 2 ? 4 : 5; /* the window leaves the instant (122) out, not the name */
		CHECK(err == 0 && q.ordered && q.marks == want && q.opens > 0,
		      "filter %d: marks (%u) in time order with the frames", variant, q.marks);
		CHECK(w.threads[0].name == 7, "the thread's name is its mark's definition (%u)", w.threads[0].name);
		ulma_walk_free(&w);
	}
}

int main(void)
{
	int err = write_trace();
	if (!CHECK_EQ_I64(err, 0, "wrote the trace"))
		return tap_done();
	test_chrome();
	test_perfetto();
#ifdef ULMA_HAVE_ZLIB
	test_perfetto_compressed();
#endif
	test_speedscope();
	test_pstats();
	test_callgrind();
	test_folded();
	test_html();
	test_ctf();
	test_walk_order();
	if (!getenv("ULMA_TEST_KEEP"))
		unlink(trace_path);
	else
		printf("# trace kept: %s\n", trace_path);
	return tap_done();
}
