/* decode.c - the shared decode alone: how fast the trace reader turns a
 * trace into events, with no consumer behind it.
 *
 * Every output (`ulma report`, `--html`, each export) reads the trace
 * through ulma_trace_read (src/core/trace_reader.h), so this rate bounds
 * theirs.  The visitor only folds each event's kind, function and time
 * into a checksum, so the reader's work is not optimised away.  Prints,
 * per pass, the CPU time of the process and events per CPU second, then
 * the median.  Usage: bench_decode TRACE [passes] (default 5).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/trace_reader.h"

static int fold(void *ctx, uint32_t thread, const struct ulma_trace_event *ev, size_t n)
{
	uint64_t *sum = ctx;
	for (size_t i = 0; i < n; i++)
		*sum += ev[i].kind ^ ev[i].func ^ ev[i].ticks ^ thread;
	return 0;
}

static double cpu_seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: bench_decode TRACE [passes]\n");
		return 2;
	}
	int passes = argc == 3 ? atoi(argv[2]) : 5;
	if (passes < 1 || passes > 100) {
		fprintf(stderr, "bench_decode: passes must be 1 to 100\n");
		return 2;
	}
	double rates[100];
	uint64_t sum = 0;
	for (int i = 0; i < passes; i++) {
		struct ulma_trace_visitor v = {.ctx = &sum, .on_events = fold};
		struct ulma_trace_status st;
		double t = cpu_seconds();
		int err = ulma_trace_read_path(argv[1], &v, &st);
		t = cpu_seconds() - t;
		if (err) {
			fprintf(stderr, "bench_decode: %s: %s\n", argv[1], err == -EPROTO ? st.error : strerror(-err));
			return 1;
		}
		rates[i] = (double)st.events / t;
		printf("pass %d: %llu events in %.3f s CPU, %.1f M events/s\n", i + 1, (unsigned long long)st.events, t,
		       rates[i] / 1e6);
	}
	qsort(rates, (size_t)passes, sizeof(rates[0]), by_value);
	printf("median: %.1f M events/s (checksum %llx)\n", rates[passes / 2] / 1e6, (unsigned long long)sum);
	return 0;
}
