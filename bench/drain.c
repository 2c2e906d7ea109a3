/* drain.c - how fast one monitor core drains the rings, without Python.
 *
 * Producer threads (a synthetic C program) write enter/exit records into
 * their own rings of a real session as fast as they can, in the shape of a
 * recursive fib: mostly direct recursion, some calls of a second and third
 * function, real rdtsc timestamps.  The main thread is the monitor: the
 * real collector and trace writer, draining every ring into a profile and
 * a trace file, as `ulma run` does.  Writers wait for room, so nothing is
 * lost and the producers go exactly as fast as the monitor lets them.
 *
 * Prints the events drained, the monitor thread's CPU time, and events per
 * second of monitor CPU: the drain rate of one core.  Usage:
 *   bench_drain [producers] [events per producer] [trace path]
 * (defaults 3, 50,000,000, /tmp/ulma-bench-drain.trace; the trace is
 * removed at the end).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/ring.h"
#include "core/session.h"
#include "core/trace_writer.h"
#include "monitor/collector.h"
#include "monitor/pace.h"
#include "ulma/shm.h"

struct producer {
	pthread_t thread;
	struct ulma_session *session;
	uint64_t events;  /* to write, about */
	uint64_t written; /* written */
	uint32_t ids[3];
};

static _Atomic int go;

/* One fib-shaped call tree: fib(n) calls fib(n-1) and fib(n-2); every
 * 16th leaf also calls helper (id 1) which calls a builtin (id 2). */
static void fib(struct ulma_ring_writer *w, const uint32_t *ids, int n, uint64_t *left)
{
	uint32_t cpu = 0;
	if (*left < 4)
		return;
	ulma_ring_write(w, ulma_clock_rdtsc(), ids[0], cpu, ULMA_REC_ENTER);
	*left -= 2;
	if (n > 1) {
		fib(w, ids, n - 1, left);
		fib(w, ids, n - 2, left);
	} else if ((*left & 15) == 0 && *left >= 4) {
		ulma_ring_write(w, ulma_clock_rdtsc(), ids[1], cpu, ULMA_REC_ENTER);
		ulma_ring_write(w, ulma_clock_rdtsc(), ids[2], cpu, ULMA_REC_ENTER);
		ulma_ring_write(w, ulma_clock_rdtsc(), ids[2], cpu, ULMA_REC_EXIT);
		ulma_ring_write(w, ulma_clock_rdtsc(), ids[1], cpu, ULMA_REC_EXIT);
		*left -= 4;
	}
	ulma_ring_write(w, ulma_clock_rdtsc(), ids[0], cpu, ULMA_REC_EXIT);
}

static void *produce(void *arg)
{
	struct producer *p = arg;
	struct ulma_ring_writer w;
	if (ulma_session_claim_slot(p->session, (uint32_t)getpid(), (uint32_t)gettid(), &w) < 0)
		return NULL;
	while (!atomic_load(&go))
		;
	uint64_t left = p->events;
	while (left >= 4)
		fib(&w, p->ids, 20, &left);
	p->written = p->events - left;
	ulma_session_close_slot(&w);
	return NULL;
}

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int nprod = argc > 1 ? atoi(argv[1]) : 3;
	uint64_t per = argc > 2 ? strtoull(argv[2], NULL, 10) : 50000000u;
	const char *path = argc > 3 ? argv[3] : "/tmp/ulma-bench-drain.trace";
	if (nprod < 1 || nprod > 64 || per < 4) {
		fprintf(stderr, "usage: bench_drain [producers 1-64] [events per producer] [trace]\n");
		return 2;
	}
	if (!ulma_clock_tsc_usable()) {
		fprintf(stderr, "bench_drain: needs an invariant TSC\n");
		return 2;
	}
	struct ulma_session_config cfg;
	struct ulma_session s;
	ulma_session_config_default(&cfg);
	cfg.lossless = true;
	cfg.slot_count = 64;
	if (ulma_session_create(&cfg, &s)) {
		fprintf(stderr, "bench_drain: cannot create a session\n");
		return 1;
	}
	atomic_store(&s.hdr->heartbeat_ns, ulma_clock_monotonic_ns());
	struct ulma_clock_pair start, end;
	uint64_t hz = ulma_clock_measure_hz(true);
	ulma_clock_sample(true, &start);
	struct ulma_trace_meta meta = {.flags = 1, .start_ticks = start.ticks, .start_ns = start.ns, .tick_hz = hz};
	struct ulma_trace_writer *tw;
	int err = ulma_trace_writer_open(path, &meta, &tw);
	if (err) {
		fprintf(stderr, "bench_drain: %s: %s\n", path, strerror(-err));
		return 1;
	}
	struct ulma_collector col;
	ulma_collector_init(&col, &s, tw);
	ulma_collector_split(&col, ULMA_SPLIT_NONE, NULL, &start, hz);

	uint32_t ids[3] = {ulma_session_define(&s, ULMA_DEF_PY, "fib", 3, "bench/drain.c", 13, 40),
			   ulma_session_define(&s, ULMA_DEF_PY, "helper", 6, "bench/drain.c", 13, 41),
			   ulma_session_define(&s, ULMA_DEF_C, "builtins.len", 12, "~", 1, 0)};
	struct producer *pr = calloc((size_t)nprod, sizeof(*pr));
	for (int i = 0; i < nprod; i++) {
		pr[i] = (struct producer){.session = &s, .events = per};
		memcpy(pr[i].ids, ids, sizeof(ids));
		pthread_create(&pr[i].thread, NULL, produce, &pr[i]);
	}
	usleep(10000); /* every producer has its slot */
	double cpu0 = thread_cpu_s();
	uint64_t wall0 = ulma_clock_monotonic_ns();
	atomic_store(&go, 1);
	int closed = 0;
	struct ulma_pace pace = {0};
	while (closed < nprod) {
		uint64_t began = ulma_clock_monotonic_ns();
		long n = ulma_collector_poll(&col, false);
		uint64_t now = ulma_clock_monotonic_ns();
		atomic_store(&s.hdr->heartbeat_ns, now);
		if (n < 0) {
			fprintf(stderr, "bench_drain: collector error %ld\n", n);
			return 1;
		}
		closed = 0;
		for (uint32_t i = 0; i < s.hdr->slot_count; i++)
			closed += atomic_load(&s.slots[i].state) == ULMA_SLOT_FREE;
		closed -= (int)s.hdr->slot_count - nprod;
		/* the monitor's own pace, as `ulma run` naps (src/monitor/pace.h) */
		long ns = ulma_pace_nap_ns(&pace, n, col.peak, ulma_session_capacity(&s), began, now);
		struct timespec nap = {0, ns};
		nanosleep(&nap, NULL);
	}
	while (ulma_collector_poll(&col, true) > 0)
		;
	double cpu = thread_cpu_s() - cpu0;
	uint64_t wall = ulma_clock_monotonic_ns() - wall0;
	for (int i = 0; i < nprod; i++)
		pthread_join(pr[i].thread, NULL);
	ulma_clock_sample(true, &end);
	ulma_collector_close_all(&col, end.ticks);
	uint64_t events = ulma_profile_events(&col.profile), written = 0;
	for (int i = 0; i < nprod; i++)
		written += pr[i].written;
	struct ulma_trace_end te = {.end_ticks = end.ticks, .end_ns = end.ns, .events = events};
	err = ulma_trace_writer_close(tw, &te);
	printf("producers %d, events %llu, lost %llu, monitor cpu %.3f s, wall %.3f s\n", nprod,
	       (unsigned long long)events, (unsigned long long)col.profile.lost, cpu, (double)wall / 1e9);
	printf("drain rate: %.1f M events per second of monitor CPU (%.2f ns per event)\n", (double)events / cpu / 1e6,
	       cpu * 1e9 / (double)events);
	ulma_collector_free(&col);
	ulma_session_unmap(&s);
	unlink(path);
	free(pr);
	if (events != written)
		fprintf(stderr, "bench_drain: %llu events written, %llu drained\n", (unsigned long long)written,
			(unsigned long long)events);
	return err || events != written ? 1 : 0;
}
