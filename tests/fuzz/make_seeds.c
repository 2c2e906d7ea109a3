/* make_seeds.c - write a small seed corpus of valid traces for the trace
 * reader fuzzer, using the real trace writer, and check that each one reads
 * back.  usage: fuzz_make_seeds DIR
 *
 *   basic.ulma  two threads, nesting, direct recursion (ENTER_SAME), cpu
 *               changes, a LOST marker, two flushes, END
 *   cut.ulma    an abandoned writer: no END, a frame left open
 *   wide.ulma   many functions (every kind of definition) and files, long
 *               names, large time deltas
 *   empty.ulma  an empty file name (exec of code compiled as "") and an
 *               empty function name
 *   far.ulma    times near 2^64 ticks, where time arithmetic wraps
 *   native.ulma version 4: native functions (with and without debug
 *               information), zones and marks (instants, counters with
 *               ordinary, extreme and NaN values, thread names) in two
 *               threads, the hook's cost measured, marks inside frames and
 *               after the last one
 *   ctf.ulma    what the CTF export's layout turns on: gaps around 2^27 ns,
 *               CPU changes, functions shared by threads, defined late, twinned
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/trace_reader.h"
#include "core/mpi_event.h"
#include "core/trace_writer.h"
#include "ulma/shm.h"
#include "ulma/trace_format.h"

/* the writer's direct-recursion flag, from the parent's id as the tests state it */
static bool same_fn(uint32_t id, uint32_t parent)
{
	return id == parent && id != 0;
}

static int write_basic(const char *path)
{
	struct ulma_trace_meta meta = {ULMA_META_TSC, 4242, 1000, 777000, 2500000000u, "python3 fib.py 20", 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *a, *b, *c;
	int err = ulma_trace_writer_open(path, &meta, &w);
	if (err)
		return err;
	ulma_trace_define_file(w, 0, "fib.py", 6);
	ulma_trace_define_file(w, 1, "<builtin>", 9);
	ulma_trace_define_func(w, 1, ULMA_DEF_PY, 0, 1, "<module>", 8);
	ulma_trace_define_func(w, 2, ULMA_DEF_PY, 0, 4, "fib", 3);
	ulma_trace_define_func(w, 3, ULMA_DEF_C, 1, 0, "print", 5);
	if ((err = ulma_trace_process(w, 4242, 4241, "fib.py 20", 9)) ||
	    (err = ulma_trace_stream_open(w, 0, 4242, 4242, &a)) ||
	    (err = ulma_trace_stream_open(w, 1, 4242, 4243, &b)) ||
	    (err = ulma_trace_process(w, 4300, 4242, "fib.py 20", 9)) || /* a child: the exports' flows */
	    (err = ulma_trace_stream_open(w, 2, 4300, 4300, &c))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	ulma_trace_enter(a, 1100, 0, 1, same_fn(1, 0));
	ulma_trace_enter(a, 1110, 0, 2, same_fn(2, 1));
	ulma_trace_enter(a, 1120, 0, 2, same_fn(2, 2));
	ulma_trace_enter(a, 1130, 0, 2, same_fn(2, 2));
	ulma_trace_exit(a, 1140, 0);
	ulma_trace_exit(a, 1150, 1);
	ulma_trace_enter(b, 1155, 1, 2, same_fn(2, 0));
	ulma_trace_off(b, 1157, ULMA_TRACE_SAME_CPU, ULMA_OFF_BLOCKED, 5);  /* time off the CPU (version 3) */
	ulma_trace_off(b, 1162, ULMA_TRACE_SAME_CPU, ULMA_OFF_RUNNABLE, 2);
	ulma_trace_exit(b, 1165, 1);
	ulma_trace_enter(c, 1160, 2, 2, same_fn(2, 0));
	ulma_trace_exit(c, 1164, 2);
	ulma_trace_writer_flush(w);
	ulma_trace_lost(a, 1170, 12);
	ulma_trace_enter(a, 1180, 1, 3, same_fn(3, 2));
	ulma_trace_off(a, 1185, 1, ULMA_OFF_GIL, 4);
	ulma_trace_exit(a, 1190, 1);
	ulma_trace_exit(a, 1200, 0);
	ulma_trace_exit(a, 1300, 0);
	ulma_trace_off(a, 1350, ULMA_TRACE_SAME_CPU, ULMA_OFF_BLOCKED, 30); /* after the last event: the chunk ends with it */
	struct ulma_trace_end end = {1400, 778000, 13, 12, ULMA_FAIL_NO_SLOT, 0, ULMA_SPLIT_SWITCHES, 12345, 0, 1, 0, 0, 0};
	return ulma_trace_writer_close(w, &end);
}

static int write_cut(const char *path)
{
	struct ulma_trace_meta meta = {0, 7, 0, 0, 1000000000u, NULL, 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *a;
	int err = ulma_trace_writer_open(path, &meta, &w);
	if (err)
		return err;
	ulma_trace_define_file(w, 3, "a.py", 4);
	ulma_trace_define_func(w, 9, ULMA_DEF_PY, 3, 2, "main", 4);
	ulma_trace_define_func(w, 10, ULMA_DEF_PY, 3, 8, "work", 4);
	if ((err = ulma_trace_stream_open(w, 5, 7, 8, &a))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	ulma_trace_enter(a, 50, 2, 9, same_fn(9, 0));
	ulma_trace_enter(a, 60, 2, 10, same_fn(10, 9));
	ulma_trace_exit(a, 70, 3);
	err = ulma_trace_writer_flush(w);
	ulma_trace_writer_abandon(w);
	return err;
}

static int write_wide(const char *path)
{
	struct ulma_trace_meta meta = {ULMA_META_LOSSLESS, 1, UINT64_C(1) << 40, 5, 3000000000u, "x", 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *s[3];
	char name[300];
	int err = ulma_trace_writer_open(path, &meta, &w);
	if (err)
		return err;
	for (uint32_t f = 0; f < 4; f++) {
		snprintf(name, sizeof(name), "/very/long/path/to/package/module_%u.py", f);
		ulma_trace_define_file(w, f * 1000, name, strlen(name));
	}
	for (uint32_t i = 1; i <= 12; i++) {
		int n = snprintf(name, sizeof(name), "Class%u.method_with_a_longer_name_%u", i, i * 7);
		/* every third a C function, of each C kind in turn */
		uint8_t kind = i % 3 ? ULMA_DEF_PY : (uint8_t)(ULMA_DEF_C + i / 3 % 4);
		ulma_trace_define_func(w, i * 300, kind, (i % 4) * 1000, i * 11, name, (size_t)n);
	}
	for (int t = 0; t < 3; t++)
		if ((err = ulma_trace_stream_open(w, (uint64_t)t * 1000000, 1, 100 + (uint32_t)t, &s[t]))) {
			ulma_trace_writer_abandon(w);
			return err;
		}
	uint64_t now = UINT64_C(1) << 40;
	uint32_t stack[3][16], depth[3] = {0, 0, 0};
	uint64_t seed = 12345;
	for (int i = 0; i < 240; i++) {
		seed = seed * 6364136223846793005u + 1442695040888963407u;
		int t = (int)((seed >> 33) % 3);
		now += (seed >> 40) % 4 == 0 ? (UINT64_C(1) << 30) : (seed >> 50) % 100;
		uint32_t cpu = (uint32_t)((seed >> 20) % 4);
		if (depth[t] == 0 || (depth[t] < 16 && (seed >> 45) % 2)) {
			uint32_t id = (uint32_t)((seed >> 24) % 12 + 1) * 300;
			uint32_t parent = depth[t] ? stack[t][depth[t] - 1] : 0;
			ulma_trace_enter(s[t], now, cpu, id, same_fn(id, parent));
			stack[t][depth[t]++] = id;
		} else {
			ulma_trace_exit(s[t], now, cpu);
			depth[t]--;
		}
		if (i == 120)
			ulma_trace_writer_flush(w);
	}
	struct ulma_trace_end end = {now, 6, 240, 0, 0, 256, 0, 0, 0, 0, 0, 0, 0};
	return ulma_trace_writer_close(w, &end);
}

static int write_empty_names(const char *path)
{
	struct ulma_trace_meta meta = {0, 3, 10, 20, 1000000000u, "", 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *a;
	int err = ulma_trace_writer_open(path, &meta, &w);
	if (err)
		return err;
	ulma_trace_define_file(w, 0, "", 0);
	ulma_trace_define_func(w, 1, ULMA_DEF_PY, 0, 1, "<module>", 8);
	ulma_trace_define_func(w, 2, ULMA_DEF_PY, 0, 1, "f", 1);
	ulma_trace_define_func(w, 3, ULMA_DEF_PY, 0, 2, "", 0);
	if ((err = ulma_trace_stream_open(w, 0, 3, 3, &a))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	ulma_trace_enter(a, 100, 0, 1, same_fn(1, 0));
	ulma_trace_enter(a, 110, 0, 2, same_fn(2, 1));
	ulma_trace_exit(a, 120, 0);
	ulma_trace_enter(a, 130, 0, 3, same_fn(3, 1));
	ulma_trace_exit(a, 140, 0);
	ulma_trace_exit(a, 150, 0);
	struct ulma_trace_end end = {200, 120, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	return ulma_trace_writer_close(w, &end);
}

static int write_far(const char *path)
{
	const uint64_t top = UINT64_MAX;
	struct ulma_trace_meta meta = {0, 5, 0, 0, 1000000000u, "far.py", 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *a;
	int err = ulma_trace_writer_open(path, &meta, &w);
	if (err)
		return err;
	ulma_trace_define_file(w, 0, "far.py", 6);
	ulma_trace_define_func(w, 1, ULMA_DEF_PY, 0, 1, "main", 4);
	ulma_trace_define_func(w, 2, ULMA_DEF_PY, 0, 5, "late", 4);
	if ((err = ulma_trace_stream_open(w, 0, 5, 5, &a))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	ulma_trace_enter(a, 10, 0, 1, same_fn(1, 0));
	ulma_trace_enter(a, top - 300, 1, 2, same_fn(2, 1));
	ulma_trace_exit(a, top - 200, 1);
	ulma_trace_exit(a, top - 100, 0);
	struct ulma_trace_end end = {top - 1, top - 1, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	return ulma_trace_writer_close(w, &end);
}

static int write_native(const char *path)
{
	struct ulma_trace_meta meta = {ULMA_META_TSC, 77, 5000, 1000000, 2000000000u, "./api_prog", 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *a, *b;
	int err = ulma_trace_writer_open(path, &meta, &w);
	if (err)
		return err;
	ulma_trace_define_file(w, 0, "~", 1);
	ulma_trace_define_file(w, 1, "api_prog.c", 10);
	ulma_trace_define_func(w, 1, ULMA_DEF_NATIVE, 1, 24, "main", 4);
	ulma_trace_define_func(w, 2, ULMA_DEF_NATIVE, 0, 0, "0x401136", 8);
	ulma_trace_define_func(w, 3, ULMA_DEF_ZONE, 1, 17, "work", 4);
	ulma_trace_define_func(w, 4, ULMA_DEF_C, 0, 0, "builtins.len", 12);
	ulma_trace_define_func(w, 5, ULMA_DEF_MARK, 0, 0, "checkpoint", 10);
	ulma_trace_define_func(w, 6, ULMA_DEF_MARK, 0, 0, "queue", 5);
	ulma_trace_define_func(w, 7, ULMA_DEF_MARK, 0, 0, "main-loop", 9);
	ulma_trace_overhead(w, 1500);
	if ((err = ulma_trace_process(w, 77, 0, "api_prog", 8)) || (err = ulma_trace_stream_open(w, 0, 77, 77, &a)) ||
	    (err = ulma_trace_stream_open(w, 1, 77, 78, &b))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	ulma_trace_enter(a, 5100, 0, 1, false);
	ulma_trace_mark(a, 5101, ULMA_EXT_THREAD_NAME, 7, 0);
	for (int k = 0; k < 4; k++) {
		uint64_t t = 5110 + (uint64_t)k * 40;
		ulma_trace_enter(a, t, 0, 3, false);
		ulma_trace_enter(a, t + 2, 0, 2, false);
		ulma_trace_mark(a, t + 3, ULMA_EXT_INSTANT, 5, 0);
		ulma_trace_exit(a, t + 4, 0);
		ulma_trace_enter(a, t + 5, 1, 2, false);
		ulma_trace_enter(a, t + 6, 1, 2, true);
		ulma_trace_exit(a, t + 7, 1);
		ulma_trace_exit(a, t + 8, 1);
		ulma_trace_mark(a, t + 9, ULMA_EXT_COUNTER, 6, k == 3 ? NAN : k == 2 ? -1e308 : k * 1.5);
		ulma_trace_exit(a, t + 30, 1);
	}
	ulma_trace_enter(b, 5120, 2, 4, false);
	ulma_trace_mark(b, 5125, ULMA_EXT_COUNTER, 6, 0.1);
	ulma_trace_exit(b, 5130, 2);
	ulma_trace_mark(b, 5135, ULMA_EXT_INSTANT, 5, 0);
	ulma_trace_mark(b, 5136, ULMA_EXT_THREAD_NAME, 5, 0);
	ulma_trace_writer_flush(w);
	ulma_trace_overhead(w, 1200); /* the program's measure again at its stop, lower: the run's */
	ulma_trace_exit(a, 5300, 0);
	ulma_trace_mark(a, 5310, ULMA_EXT_INSTANT, 5, 0); /* after the thread's last frame */
	struct ulma_trace_end end = {5400, 1000200, 40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	return ulma_trace_writer_close(w, &end);
}

/* What the CTF export's layout turns on (export_ctf.c): gaps just below,
 * at and past 2^27 ns (the compact header's timestamp bits), the CPU
 * changing between events and at a mark, two threads sharing functions
 * (each stream defines them), a function defined after other frames, a
 * merged twin (same name, file and line). */
static int write_ctf(const char *path)
{
	struct ulma_trace_meta meta = {0, 9, 0, 1000, 1000000000u, "ctf.py", 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *a, *b;
	const uint64_t wrap = UINT64_C(1) << 27;
	int err = ulma_trace_writer_open(path, &meta, &w);
	if (err)
		return err;
	ulma_trace_define_file(w, 0, "ctf.py", 6);
	ulma_trace_define_func(w, 1, ULMA_DEF_PY, 0, 1, "main", 4);
	ulma_trace_define_func(w, 2, ULMA_DEF_PY, 0, 5, "step", 4);
	ulma_trace_define_func(w, 3, ULMA_DEF_PY, 0, 5, "step", 4); /* step's twin */
	ulma_trace_define_func(w, 4, ULMA_DEF_MARK, 0, 0, "tick", 4);
	if ((err = ulma_trace_stream_open(w, 0, 9, 9, &a)) || (err = ulma_trace_stream_open(w, 1, 9, 10, &b))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	uint64_t t = 100;
	ulma_trace_enter(a, t, 0, 1, false);
	const uint64_t gaps[] = {wrap - 1, wrap, wrap + 1, 3, 2 * wrap, wrap / 2, wrap / 2 + 1, 0};
	for (int k = 0; k < 8; k++) {
		ulma_trace_enter(a, t += gaps[k], (uint32_t)k % 3, k % 2 ? 3 : 2, false);
		ulma_trace_mark(a, t + 1, ULMA_EXT_INSTANT, 4, 0);
		ulma_trace_exit(a, t += 2, (uint32_t)(k + 1) % 3);
	}
	ulma_trace_enter(b, 150, 1, 2, false);
	ulma_trace_exit(b, 150 + wrap, 2);
	ulma_trace_writer_flush(w);
	ulma_trace_define_func(w, 5, ULMA_DEF_PY, 0, 9, "other", 5); /* defined after frames */
	ulma_trace_enter(a, t += 10, 1, 5, false);
	ulma_trace_mark(a, t + 1, ULMA_EXT_COUNTER, 4, 2.5);
	ulma_trace_exit(a, t += 20, 1);
	ulma_trace_enter(b, t, 0, 2, false);
	ulma_trace_exit(b, t + 1, 0);
	ulma_trace_exit(a, t += 5, 0);
	struct ulma_trace_end end = {.end_ticks = t + 10, .end_ns = t + 1010, .events = 24};
	return ulma_trace_writer_close(w, &end);
}

/* Version 5: lines of a recursive function and a generator, a source copy. */
static int write_lines(const char *path)
{
	static const char source[] = "@deco\ndef fib(n):\n    if n < 2:\n        return n\n"
				     "    return fib(n - 1) + fib(n - 2)\n\ndef gen():\n    yield 1\n";
	struct ulma_trace_meta meta = {ULMA_META_TSC, 78, 6000, 1000000, 2000000000u, "python fib.py", 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *a;
	int err = ulma_trace_writer_open(path, &meta, &w);
	if (err)
		return err;
	ulma_trace_define_file(w, 0, "/t/fib.py", 9);
	ulma_trace_define_func(w, 1, ULMA_DEF_PY, 0, 1, "fib", 3);
	ulma_trace_define_func(w, 2, ULMA_DEF_PY, 0, 7, "gen", 3);
	ulma_trace_define_source(w, 0, ULMA_SOURCE_CHANGED, source, sizeof(source) - 1);
	if ((err = ulma_trace_stream_open(w, 0, 78, 78, &a))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	uint64_t t = 6100;
	ulma_trace_enter(a, t, 0, 1, false);
	ulma_trace_line(a, t += 1, 3, false);
	ulma_trace_line(a, t += 1, 5, false);
	for (int k = 0; k < 2; k++) {
		ulma_trace_enter(a, t += 2, 0, 1, true);
		ulma_trace_line(a, t += 1, 3, false);
		ulma_trace_line(a, t += 1, 4, false);
		ulma_trace_exit(a, t += 3, 0);
	}
	ulma_trace_exit(a, t += 1, 0);
	for (int k = 0; k < 2; k++) {
		ulma_trace_enter(a, t += 5, 1, 2, false);
		ulma_trace_line(a, t += 1, 8, k == 1);
		ulma_trace_off(a, t + 1, ULMA_TRACE_SAME_CPU, ULMA_OFF_BLOCKED, 700);
		ulma_trace_exit(a, t += 9, 1);
	}
	struct ulma_trace_end end = {t + 100, 1000300, 22, 0, 0, 0, ULMA_SPLIT_SWITCHES, 0, 0, 0, 0, 0, 0};
	return ulma_trace_writer_close(w, &end);
}

/* Version 6 with --memory, sampled: allocations and frees in two threads,
 * a block freed by the other thread, a realloc (free then alloc), a free
 * of a block allocated before tracing, native blocks, objects of two
 * types created and destroyed, and blocks still live at the end. */
static int write_memory(const char *path)
{
	struct ulma_trace_meta meta = {ULMA_META_TSC | ULMA_META_MEMORY, 79, 7000, 1000000, 2000000000u,
				       "python mem.py", 4096};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *a, *b;
	int err = ulma_trace_writer_open(path, &meta, &w);
	if (err)
		return err;
	ulma_trace_define_file(w, 0, "/t/mem.py", 9);
	ulma_trace_define_file(w, 1, "~", 1);
	ulma_trace_define_func(w, 1, ULMA_DEF_PY, 0, 1, "main", 4);
	ulma_trace_define_func(w, 2, ULMA_DEF_PY, 0, 5, "make", 4);
	ulma_trace_define_func(w, 3, ULMA_DEF_C_METHOD, 1, 0, "list.append", 11);
	ulma_trace_define_func(w, 4, ULMA_DEF_TYPE, 1, 0, "list", 4);
	ulma_trace_define_func(w, 5, ULMA_DEF_TYPE, 1, 0, "Point", 5);
	if ((err = ulma_trace_stream_open(w, 0, 79, 79, &a)) || (err = ulma_trace_stream_open(w, 1, 79, 80, &b))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	uint64_t t = 7100, base = 0x7f1234560000;
	ulma_trace_free(a, t, 0x55aa00001000); /* allocated before tracing */
	ulma_trace_enter(a, t += 1, 0, 1, false);
	for (uint64_t k = 0; k < 6; k++) {
		ulma_trace_enter(a, t += 2, 0, 2, false);
		ulma_trace_alloc(a, t += 1, base + k * 64, 56, ULMA_MEM_OBJ);
		ulma_trace_alloc(a, t += 1, base + 0x10000 + k * 1024, 800, ULMA_MEM_MEM);
		ulma_trace_object(a, t, ULMA_EXT_OBJ_NEW, 4 + (k & 1));
		ulma_trace_alloc(a, t += 1, base + 0x40000 + k * 4096, 4000, ULMA_MEM_NATIVE);
		if (k & 1)
			ulma_trace_object(a, t, ULMA_EXT_OBJ_FREE, 4);
		ulma_trace_enter(a, t += 1, 0, 3, false);
		ulma_trace_free(a, t += 1, base + 0x20000);
		ulma_trace_alloc(a, t, base + 0x20000 + k * 16, 8 * (k + 1), ULMA_MEM_MEM);
		ulma_trace_exit(a, t += 1, 0);
		ulma_trace_exit(a, t += 1, 0);
	}
	ulma_trace_enter(b, 7105, 1, 2, false);
	ulma_trace_free(b, 7106, base + 64); /* another thread's block */
	ulma_trace_alloc(b, 7107, 0x7f2200000000, 1u << 20, ULMA_MEM_RAW);
	ulma_trace_exit(b, 7108, 1);
	ulma_trace_exit(a, t += 5, 0);
	ulma_trace_alloc(a, t += 1, base + 0x30000, 24, ULMA_MEM_RAW); /* with no frame open */
	struct ulma_trace_end end = {t + 100, 1000400, 28, 0, 0, 0, ULMA_SPLIT_SWITCHES, 0, 0, 0, 0, 3, 0};
	return ulma_trace_writer_close(w, &end);
}

/* Version 6, an MPI rank's trace (docs/mpi.md): rank 0 of 1, its clock
 * offsets, a message to itself (Isend, Recv) and a barrier, each call a
 * frame of libulma_mpi.so's; `ulma merge` takes it alone. */
static int write_mpi(const char *path)
{
	struct ulma_trace_meta meta = {ULMA_META_TSC, 91, 9000, 1000000, 2000000000u, "./ring", 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *s;
	int err = ulma_trace_writer_open(path, &meta, &w);
	if (err)
		return err;
	ulma_trace_define_file(w, 0, "<MPI>", 5);
	ulma_trace_define_file(w, 1, "/t/ring.c", 9);
	ulma_trace_define_func(w, 1, ULMA_DEF_NATIVE, 1, 9, "main", 4);
	ulma_trace_define_func(w, 2, ULMA_DEF_ZONE, 0, 0, "MPI_Init", 8);
	ulma_trace_define_func(w, 3, ULMA_DEF_ZONE, 0, 0, "MPI_Isend", 9);
	ulma_trace_define_func(w, 4, ULMA_DEF_ZONE, 0, 0, "MPI_Recv", 8);
	ulma_trace_define_func(w, 5, ULMA_DEF_ZONE, 0, 0, "MPI_Barrier", 11);
	struct ulma_trace_rank rank = {.pid = 91, .rank = 0, .size = 1, .host = "node-a", .host_len = 6};
	if ((err = ulma_trace_mpi_rank(w, &rank)) || (err = ulma_trace_stream_open(w, 0, 91, 91, &s))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	uint64_t t = 9100;
	uint64_t init[4] = {0, 1, 0x1234, 0x5678}, clock[3] = {ulma_zigzag(-40) & 0xffffffffu, 0, 900};
	uint64_t msg[4] = {0, ulma_zigzag(3), 0, 108}, coll[5] = {ULMA_MPI_BARRIER, 0, 0, 0, 1};
	ulma_trace_enter(s, t, 0, 1, false);
	ulma_trace_enter(s, t += 2, 0, 2, false);
	ulma_trace_mpi(s, t += 50, ULMA_MPI_INIT, init, 4);
	ulma_trace_mpi(s, t, ULMA_MPI_CLOCK, clock, 3);
	ulma_trace_exit(s, t += 1, 0);
	ulma_trace_enter(s, t += 5, 0, 3, false);
	ulma_trace_mpi(s, t += 1, ULMA_MPI_SEND, msg, 4);
	ulma_trace_exit(s, t += 3, 0);
	ulma_trace_enter(s, t += 5, 0, 4, false);
	ulma_trace_mpi(s, t += 9, ULMA_MPI_RECV, msg, 4);
	ulma_trace_exit(s, t += 1, 0);
	ulma_trace_enter(s, t += 5, 0, 5, false);
	ulma_trace_mpi(s, t += 1, ULMA_MPI_COLL_BEGIN, coll, 5);
	ulma_trace_mpi(s, t += 4, ULMA_MPI_COLL_END, coll, 2);
	ulma_trace_exit(s, t += 1, 0);
	clock[0] = ulma_zigzag(-44) & 0xffffffffu;
	ulma_trace_mpi(s, t += 1, ULMA_MPI_CLOCK, clock, 3);
	ulma_trace_exit(s, t += 2, 0);
	struct ulma_trace_end end = {t + 100, 1000300, 10, 0, 0, 0, ULMA_SPLIT_NONE, 0, 0, 0, 0, 0, 0};
	return ulma_trace_writer_close(w, &end);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*write)(const char *);
		int complete;
	} seeds[] = {{"basic.ulma", write_basic, 1},
		     {"cut.ulma", write_cut, 0},
		     {"wide.ulma", write_wide, 1},
		     {"empty.ulma", write_empty_names, 1},
		     {"far.ulma", write_far, 1},
		     {"native.ulma", write_native, 1},
		     {"lines.ulma", write_lines, 1},
		     {"memory.ulma", write_memory, 1},
		     {"mpi-rank.ulma", write_mpi, 1},
		     {"ctf.ulma", write_ctf, 1}};
	char path[4096];
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", argv[1], seeds[i].name);
		int err = seeds[i].write(path);
		if (err) {
			fprintf(stderr, "make_seeds: writing %s: %s\n", path, strerror(-err));
			return 1;
		}
		struct ulma_trace_visitor none = {0};
		struct ulma_trace_status st;
		err = ulma_trace_read_path(path, &none, &st);
		if (err || st.complete != seeds[i].complete || st.events == 0) {
			fprintf(stderr, "make_seeds: %s does not read back (rc %d, complete %d, events %llu): %s\n",
				path, err, st.complete, (unsigned long long)st.events, st.error);
			return 1;
		}
		printf("seed %s: %llu bytes, %llu events%s\n", path, (unsigned long long)st.bytes,
		       (unsigned long long)st.events, st.complete ? "" : ", incomplete");
	}
	return 0;
}
