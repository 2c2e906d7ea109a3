/* test_export_walk_off.c - the OFF records the exports' walk hands its sink
 * (export_walk.h, on_off: what the perfetto export's CPU lanes are built
 * from), with known answers on a hand-written trace: each comes with its
 * state, its length and the CPU it was written on, the one the thread
 * left, even where the thread ran no traced event there (it woke on CPU 2,
 * ran untraced and slept again: the interval before that OFF record is on
 * CPU 2, not on CPU 0 of its previous event); a trace that writes an OFF
 * record on the stream's CPU gives that of the previous event. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/export_walk.h"
#include "core/trace_writer.h"
#include "tap.h"
#include "ulma/shm.h"
#include "ulma/trace_format.h"

#define MAX_OFF 8

struct seen {
	uint32_t n;
	uint32_t cpu[MAX_OFF];
	uint8_t state[MAX_OFF];
	uint64_t ns[MAX_OFF];
};

static int on_off(void *ctx, const struct ulma_walk *w, uint32_t thread, uint8_t state, uint32_t cpu, uint64_t at_ns,
		  uint64_t ns)
{
	(void)w;
	(void)thread;
	(void)at_ns;
	struct seen *s = ctx;
	if (s->n < MAX_OFF) {
		s->cpu[s->n] = cpu;
		s->state[s->n] = state;
		s->ns[s->n] = ns;
	}
	s->n++;
	return 0;
}

/* Ticks are ns.  One thread: f on CPU 0 from 1000; off 10 ns from 1010
 * (it left CPU 0); back, on CPU 2 with no event, off 20 ns from 1030 (it
 * left CPU 2); back on CPU 0: f ends at 1100; off 5 ns from 1110 on the
 * stream's CPU. */
static int write_trace(const char *path)
{
	struct ulma_trace_meta meta = {.flags = 0, .pid = 10, .start_ticks = 1000, .start_ns = 1000,
				       .tick_hz = 1000000000, .command = "python m.py"};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *a;
	int err = ulma_trace_writer_open(path, &meta, &w);
	if (err)
		return err;
	ulma_trace_define_file(w, 0, "/src/m.py", 9);
	ulma_trace_define_func(w, 1, ULMA_DEF_PY, 0, 1, "f", 1);
	if ((err = ulma_trace_stream_open(w, 0, 10, 10, &a))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	ulma_trace_enter(a, 1000, 0, 1, false);
	ulma_trace_off(a, 1010, 0, ULMA_OFF_BLOCKED, 10);
	ulma_trace_off(a, 1030, 2, ULMA_OFF_GIL, 20);
	ulma_trace_exit(a, 1100, 0);
	ulma_trace_off(a, 1110, ULMA_TRACE_SAME_CPU, ULMA_OFF_RUNNABLE, 5);
	struct ulma_trace_end end = {.end_ticks = 1200, .end_ns = 1200, .events = 2, .exit_status = 0,
				     .split = ULMA_SPLIT_SWITCHES};
	return ulma_trace_writer_close(w, &end);
}

int main(void)
{
	char path[] = "/tmp/ulma-test-walk-off-XXXXXX";
	int fd = mkstemp(path);
	if (!CHECK(fd >= 0, "temp file"))
		return tap_done();
	close(fd);
	if (CHECK_EQ_I64(write_trace(path), 0, "a trace with OFF records on two CPUs")) {
		struct seen seen = {0};
		struct ulma_walk w;
		struct ulma_walk_sink sink = {0};
		struct ulma_trace_status st;
		sink.ctx = &seen;
		sink.on_off = on_off;
		ulma_walk_init(&w, NULL);
		FILE *in = fopen(path, "rb");
		int err = in ? ulma_walk_run(&w, in, &sink, &st) : -errno;
		if (in)
			fclose(in);
		ulma_walk_free(&w);
		CHECK(err == 0 && seen.n == 3, "three OFF records (%d, %u)", err, seen.n);
		if (seen.n == 3) {
			CHECK(seen.cpu[0] == 0 && seen.state[0] == ULMA_OFF_BLOCKED && seen.ns[0] == 10,
			      "blocked 10 ns, leaving CPU 0 (cpu %u)", seen.cpu[0]);
			CHECK(seen.cpu[1] == 2 && seen.state[1] == ULMA_OFF_GIL && seen.ns[1] == 20,
			      "a GIL wait of 20 ns, leaving CPU 2, where it ran no event (cpu %u)", seen.cpu[1]);
			CHECK(seen.cpu[2] == 0 && seen.state[2] == ULMA_OFF_RUNNABLE && seen.ns[2] == 5,
			      "preempted 5 ns on the CPU of its last event, 0 (cpu %u)", seen.cpu[2]);
		}
	}
	unlink(path);
	return tap_done();
}
