/* collector_memory.c - memory and object records in the collector (see
 * collector_memory.h). */
#include "collector_memory.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../analysis/profile_memory.h"
#include "../core/clock.h"
#include "../core/trace_writer.h"
#include "collector.h"
#include "collector_defs.h"
#include "ulma/shm.h"

#define COUNTER_STEP_MIN (64u << 10) /* write the counters when the live bytes moved this much, */
#define COUNTER_STEP_SHARE 64        /* or by 1/64 of them if that is more */

static const char *const counter_names[2] = {"memory: Python heap (bytes)", "memory: native (bytes)"};

/* Memory over time: the process's live bytes as two counter marks in the
 * thread's stream, Python's allocators' and native code's, whenever they
 * have moved enough since they were last written (a few hundred times from
 * 0 to 1 GiB, and once per 64 KiB of a working set that swings).  The
 * timeline exports draw them as counter tracks.  The band of live bytes
 * that needs no write is kept as two bounds, so that an event inside it
 * (nearly all) costs two compares (ulma_collector_memory) and leaves the
 * stream alone. */
static int memory_counters_slow(struct ulma_collector *c, struct ulma_mem_proc *pr, struct ulma_trace_stream *stream,
				uint64_t ticks)
{
	uint64_t live = pr->live_bytes, last = pr->counted_bytes;
	uint64_t step = last / COUNTER_STEP_SHARE > COUNTER_STEP_MIN ? last / COUNTER_STEP_SHARE : COUNTER_STEP_MIN;
	bool within = live < last + step && live + step > last;
	if (!within) {
		pr->counted_bytes = last = live;
		step = last / COUNTER_STEP_SHARE > COUNTER_STEP_MIN ? last / COUNTER_STEP_SHARE : COUNTER_STEP_MIN;
	}
	pr->uncounted_lo = last >= step ? last - step + 1 : 0;
	pr->uncounted_hi = last + step;
	if (within)
		return 0;
	for (int i = 0; i < 2; i++) {
		if (!c->mem_counters[i]) {
			uint32_t idx = ulma_collector_define(c, ULMA_DEF_MARK, counter_names[i], strlen(counter_names[i]),
							     "~", 1, 0);
			if (idx == UINT32_MAX)
				return -ENOMEM;
			c->mem_counters[i] = idx + 1;
		}
	}
	ulma_trace_mark(stream, ticks, ULMA_EXT_COUNTER, c->mem_counters[0], (double)(live - pr->native_live_bytes));
	ulma_trace_mark(stream, ticks, ULMA_EXT_COUNTER, c->mem_counters[1], (double)pr->native_live_bytes);
	return 0;
}

int ulma_collector_memory_counters(struct ulma_collector *c, uint32_t thread, struct ulma_trace_stream *stream,
				   uint64_t ticks)
{
	const struct ulma_mem_thread *mt = c->profile.threads[thread].mem;
	if (!stream || !mt)
		return 0;
	return memory_counters_slow(c, &c->profile.memory->procs[mt->proc], stream, ticks);
}

int ulma_collector_object(struct ulma_collector *c, uint32_t thread, struct ulma_trace_stream *stream, bool created,
			  uint32_t type, uint64_t ticks)
{
	if (stream)
		ulma_trace_object(stream, ticks, created ? ULMA_EXT_OBJ_NEW : ULMA_EXT_OBJ_FREE, type + 1);
	return ulma_profile_object(&c->profile, thread, type, created);
}

/* RSS over time: every RSS_PERIOD_NS, one pread of each traced process's
 * /proc/PID/statm (its second field: resident pages), stamped with the
 * session clock's time of the read.  Never per event: a few hundred reads
 * a second at most, whatever the program does.  Records reach the monitor
 * late and a stream's times only grow, so a sample is held until one of
 * the process's threads has drained a record later than it, and written
 * just before that record (ulma_collector_rss_passed/_write): no event's
 * time moves and every sample sits at its own time.  At most RSS_HELD
 * wait per process (about 3.8 s of samples); when they are full the oldest
 * is written at once, at its thread's latest drained time (as all were
 * before), so none is lost. */
#define RSS_PERIOD_NS 15000000u
#define RSS_HELD 256
static const char rss_counter_name[] = ULMA_MEM_RSS_COUNTER;

struct rss_sample {
	uint64_t ticks; /* when it was read, session clock */
	uint64_t bytes;
};

struct ulma_collector_rss {
	uint32_t pid;
	int fd;          /* /proc/PID/statm + 1; 0: not opened yet */
	bool gone;       /* could not be opened or read: not tried again */
	uint64_t round;  /* the round it was last sampled in */
	struct ulma_trace_stream *stream; /* a thread's of the process, for what is held at the end */
	struct rss_sample held[RSS_HELD]; /* a ring, oldest at first */
	uint32_t first, nheld;
};

uint64_t ulma_collector_rss_due(struct ulma_collector *c)
{
	if (!c->profile.memory)
		return 0;
	uint64_t now = ulma_clock_monotonic_ns();
	if (now - c->rss_at_ns < RSS_PERIOD_NS)
		return 0;
	c->rss_at_ns = now;
	return ++c->rss_round;
}

static uint64_t read_rss(struct ulma_collector_rss *r, uint32_t pid)
{
	if (!r->fd) {
		char path[40];
		snprintf(path, sizeof(path), "/proc/%u/statm", pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			r->gone = true;
			return 0;
		}
		r->fd = fd + 1;
	}
	char buf[128];
	ssize_t n = pread(r->fd - 1, buf, sizeof(buf) - 1, 0);
	if (n <= 0) {
		r->gone = true; /* reaped: ESRCH */
		return 0;
	}
	buf[n] = 0;
	unsigned long long size, resident;
	if (sscanf(buf, "%llu %llu", &size, &resident) != 2)
		return 0;
	static long page;
	if (!page)
		page = sysconf(_SC_PAGESIZE);
	return (uint64_t)resident * (uint64_t)page;
}

static struct ulma_collector_rss *find_rss(struct ulma_collector *c, uint32_t pid)
{
	for (uint32_t i = 0; i < c->nrss; i++)
		if (c->rss[i]->pid == pid)
			return c->rss[i];
	return NULL;
}

/* The oldest held sample as a counter mark on stream at ticks. */
static int write_oldest(struct ulma_collector *c, struct ulma_collector_rss *r, struct ulma_trace_stream *stream,
			uint64_t ticks)
{
	const struct rss_sample *smp = &r->held[r->first];
	r->first = (r->first + 1) % RSS_HELD;
	r->nheld--;
	if (!c->rss_counter) {
		uint32_t idx = ulma_collector_define(c, ULMA_DEF_MARK, rss_counter_name, strlen(rss_counter_name), "~", 1, 0);
		if (idx == UINT32_MAX)
			return -ENOMEM;
		c->rss_counter = idx + 1;
	}
	ulma_trace_mark(stream, ticks, ULMA_EXT_COUNTER, c->rss_counter, (double)smp->bytes);
	return ulma_profile_mem_rss(&c->profile, r->pid, smp->bytes);
}

int ulma_collector_rss(struct ulma_collector *c, uint32_t pid, struct ulma_trace_stream *stream, uint64_t drained,
		       uint64_t round)
{
	if (!stream || !pid)
		return 0;
	struct ulma_collector_rss *r = find_rss(c, pid);
	if (!r) {
		struct ulma_collector_rss **grown = realloc(c->rss, (c->nrss + 1) * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		c->rss = grown;
		r = calloc(1, sizeof(*r));
		if (!r)
			return -ENOMEM;
		r->pid = pid;
		c->rss[c->nrss++] = r;
	}
	r->stream = stream;
	if (r->gone || r->round == round)
		return 0;
	r->round = round;
	uint64_t bytes = read_rss(r, pid);
	uint32_t cpu;
	uint64_t now = ulma_clock_now(c->use_tsc, &cpu);
	if (!bytes)
		return 0; /* a zombie's statm reads 0: its memory went before it became one */
	if (r->nheld == RSS_HELD) {
		int err = write_oldest(c, r, stream, r->held[r->first].ticks < drained ? r->held[r->first].ticks : drained);
		if (err)
			return err;
	}
	r->held[(r->first + r->nheld++) % RSS_HELD] = (struct rss_sample){.ticks = now ? now : 1, .bytes = bytes};
	return 0;
}

uint64_t ulma_collector_rss_passed(struct ulma_collector *c, uint32_t pid, const struct ulma_record *ring,
				   uint64_t mask, uint64_t tail, uint64_t head)
{
	const struct ulma_collector_rss *r = find_rss(c, pid);
	if (!r || !r->nheld)
		return head;
	uint64_t at = r->held[r->first].ticks, lo = tail, hi = head; /* the first record after `at` is in [lo, hi] */
	while (lo < hi) { /* a thread's records are in time order */
		uint64_t mid = lo + (hi - lo) / 2;
		if (ring[mid & mask].time > at)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int ulma_collector_rss_write(struct ulma_collector *c, uint32_t pid, struct ulma_trace_stream *stream, uint64_t upto)
{
	struct ulma_collector_rss *r = find_rss(c, pid);
	if (!r || !stream)
		return 0;
	while (r->nheld && r->held[r->first].ticks <= upto) {
		int err = write_oldest(c, r, stream, r->held[r->first].ticks);
		if (err)
			return err;
	}
	return 0;
}

int ulma_collector_rss_write_all(struct ulma_collector *c)
{
	for (uint32_t i = 0; i < c->nrss; i++) {
		int err = ulma_collector_rss_write(c, c->rss[i]->pid, c->rss[i]->stream, UINT64_MAX);
		if (err)
			return err;
	}
	return 0;
}

void ulma_collector_rss_free(struct ulma_collector *c)
{
	for (uint32_t i = 0; i < c->nrss; i++) {
		if (c->rss[i]->fd)
			close(c->rss[i]->fd - 1);
		free(c->rss[i]);
	}
	free(c->rss);
	c->rss = NULL;
	c->nrss = 0;
}
