/* collector_memory.h - memory records (--memory, docs/memory.md) in the
 * collector: a MEM_SIZE record waits in its thread's state for the ALLOC
 * that follows it; an ALLOC (or an ALLOC_SMALL, size and address in one)
 * and a FREE go to the profile's memory half
 * (profile_memory.h) and to the thread's trace stream; objects created
 * and destroyed (3.13+) likewise to its objects.  Internal to the
 * collector.  Errors: -ENOMEM.
 */
#ifndef ULMA_COLLECTOR_MEMORY_H
#define ULMA_COLLECTOR_MEMORY_H

#include <stdbool.h>
#include <stdint.h>

#include "../analysis/profile_memory.h"
#include "ulma/shm.h"

struct ulma_collector;
struct ulma_trace_stream;

/* A thread's MEM_SIZE waiting for its ALLOC. */
struct ulma_collector_mem {
	uint64_t size; /* size << 2 | domain */
	bool sized;    /* size is set */
};

/* One allocation or free, as memory records tell it. */
struct ulma_collector_block {
	bool alloc;
	uint64_t addr, size; /* size: of an allocation */
	unsigned domain;     /* enum ulma_mem_domain, of an allocation */
};

/* Memory record r (ULMA_REC_MEM_SIZE, _ALLOC, _FREE or _ALLOC_SMALL) of
 * a thread whose MEM_SIZE waits in mem: true with the allocation or free
 * it completes in *b; false for a MEM_SIZE (kept in mem) and for an ALLOC
 * whose MEM_SIZE was lost (counted in *unmatched and dropped: the LOST
 * marker before it says why). */
static inline bool ulma_collector_mem_decode(struct ulma_collector_mem *mem, const struct ulma_record *r,
					     struct ulma_collector_block *b, uint64_t *unmatched)
{
	uint64_t value = (uint64_t)r->id | (uint64_t)r->cpu << 32;
	if (r->kind == ULMA_REC_ALLOC_SMALL) {
		b->alloc = true;
		ulma_mem_small_decode(value, r->flags, &b->addr, &b->size, &b->domain);
		return true;
	}
	if (r->kind == ULMA_REC_MEM_SIZE) {
		mem->size = value;
		mem->sized = true;
		return false;
	}
	if (r->kind == ULMA_REC_FREE) {
		*b = (struct ulma_collector_block){.alloc = false, .addr = value};
		return true;
	}
	if (!mem->sized) {
		(*unmatched)++;
		return false;
	}
	mem->sized = false;
	*b = (struct ulma_collector_block){.alloc = true, .addr = value, .size = mem->size >> 2,
					   .domain = (unsigned)(mem->size & 3)};
	return true;
}

/* Allocation or free b of thread `thread` at ticks, already in its trace
 * stream (ulma_trace_cursor_memory), into the profile's memory half.  With
 * `streaming` (the thread has a stream), *counters_due is set when the
 * process's live bytes have moved enough that the memory counters must be
 * written (ulma_collector_memory_counters), else left alone.  The profile
 * must have memory on.  Inline: it is the drain loop's, once per memory
 * record.  Errors: -ENOMEM. */
static inline int ulma_collector_memory(struct ulma_profile *p, uint32_t thread, bool streaming,
					const struct ulma_collector_block *b, uint64_t ticks, bool *counters_due)
{
	int err = b->alloc ? ulma_profile_mem_alloc(p, thread, b->addr, b->size, b->domain, ticks)
			   : ulma_profile_mem_free(p, thread, b->addr, ticks);
	const struct ulma_mem_thread *mt = p->threads[thread].mem;
	if (!err && streaming && mt) {
		const struct ulma_mem_proc *pr = &p->memory->procs[mt->proc];
		*counters_due = pr->live_bytes < pr->uncounted_lo || pr->live_bytes >= pr->uncounted_hi;
	}
	return err;
}

/* Write the memory counters of thread's process into stream (may be NULL:
 * nothing) at ticks, if they moved enough.  Errors: -ENOMEM. */
int ulma_collector_memory_counters(struct ulma_collector *c, uint32_t thread, struct ulma_trace_stream *stream,
				   uint64_t ticks);

/* An object of type `type` (the dense index of a ULMA_DEF_TYPE
 * definition) created (or destroyed) by thread `thread` at ticks: to the
 * profile's objects (profile_objects.h; memory must be on) and to the
 * stream (may be NULL). */
int ulma_collector_object(struct ulma_collector *c, uint32_t thread, struct ulma_trace_stream *stream, bool created,
			  uint32_t type, uint64_t ticks);

/* RSS over time (docs/memory.md): when the last round of samples is
 * RSS_PERIOD old (and memory is recorded), a new round's nonzero id, else 0. */
uint64_t ulma_collector_rss_due(struct ulma_collector *c);

/* Read the resident bytes of process `pid` (/proc/PID/statm, through a
 * descriptor kept open) once per round, stamped with the time of the read,
 * and hold the sample until a thread of the process has drained a record
 * past it; `stream` is one of its threads', `drained` that thread's latest
 * drained time, where the oldest sample is written when too many are
 * held.  A process gone (or a zombie, RSS 0) is skipped; without a stream
 * nothing is sampled.  Errors: -ENOMEM. */
int ulma_collector_rss(struct ulma_collector *c, uint32_t pid, struct ulma_trace_stream *stream, uint64_t drained,
		       uint64_t round);

/* Of the records [tail, head) of a thread of process pid (a ring of mask
 * + 1), in time order, the index of the first one later than the
 * process's oldest held sample; head if none is, or nothing is held. */
uint64_t ulma_collector_rss_passed(struct ulma_collector *c, uint32_t pid, const struct ulma_record *ring,
				   uint64_t mask, uint64_t tail, uint64_t head);

/* Write process pid's held samples up to time `upto` on stream (one of
 * its threads', whose records after them are not written yet) as counter
 * marks "memory: RSS (bytes)", each at its own time, in order, and count
 * them in the profile's peak RSS.  Errors: -ENOMEM. */
int ulma_collector_rss_write(struct ulma_collector *c, uint32_t pid, struct ulma_trace_stream *stream, uint64_t upto);

/* At the end: every process's samples still held, on the stream of the
 * thread it was last sampled with.  Errors: -ENOMEM. */
int ulma_collector_rss_write_all(struct ulma_collector *c);

/* Close the descriptors and free the per-process state. */
void ulma_collector_rss_free(struct ulma_collector *c);

#endif
