/* collector_slot.h - a traced thread as the collector holds it, between
 * the two halves of the collector: collector.c, which takes slots from
 * the session, drains them, salvages a dead process's records and gives
 * the slots back, and collector_apply.c, which applies a thread's records
 * (stack normalisation, off-CPU intervals, marks, memory, the per-record
 * loop).  Internal to the collector; single-threaded, as it is.
 */
#ifndef ULMA_COLLECTOR_SLOT_H
#define ULMA_COLLECTOR_SLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../analysis/schedline.h"
#include "../core/mpi_event.h"
#include "collector.h"
#include "collector_memory.h"
#include "gilwait.h"
#include "offcpu.h"
#include "ulma/shm.h"

struct native_seen;

struct ulma_collector_slot {
	bool live;
	uint32_t state;  /* the slot's state when the current poll began */
	uint64_t head;   /* and its head then */
	uint64_t serial;
	uint32_t thread; /* dense thread index */
	struct ulma_trace_stream *stream;
	uint64_t last_ticks;
	uint64_t claimed_at;
	uint32_t pid;
	uint32_t cpu;
	uint64_t value_bits;  /* the counter value the VALUE records so far gave */
	unsigned value_parts; /* which halves of it: bit 0 high, bit 1 low */
	uint32_t twins_open;  /* Cython's reports of native frames, dropped (cython_twin) */
	struct ulma_collector_mem mem; /* a MEM_SIZE waiting for its ALLOC (collector_memory.h) */
	uint64_t mpi_args[ULMA_MPI_ARGS_MAX]; /* the MPI_ARG records of the MPI event to come */
	unsigned mpi_nargs;
	struct native_seen *native_cache; /* NATIVE_CACHE recent addresses, NULL until the first */
	struct ulma_offcpu_thread *off; /* switch records of the thread, or NULL */
	/* schedstat sampling */
	int sched_fd;            /* schedstat of the thread, -1 if none */
	struct ulma_gilwait gil; /* its GIL waits, where they can be told apart */
	struct ulma_schedline line;
	uint64_t sampled_ns;     /* CLOCK_MONOTONIC of the last sample */
	uint64_t head_at_sample; /* ring head at the last sample */
};

/* A thread's recent native functions: address -> dense index, direct
 * mapped, so a native record costs what a Python one does (the table of
 * every process's addresses, collector_native.c, is a hash lookup away). */
#define NATIVE_CACHE 512 /* a power of two */
struct native_seen {
	uint64_t addr; /* NATIVE_EMPTY: empty (no address is: they are below 2^48) */
	uint32_t index;
};
#define NATIVE_EMPTY UINT64_MAX

/* The place of native address addr in a thread's cache (its hit or its
 * miss): the one rule the cache's filling and its lookups share. */
static inline size_t ulma_collector_native_slot(uint64_t addr)
{
	return (size_t)(addr >> 4) & (NATIVE_CACHE - 1);
}

/* Empty the cache (all NATIVE_EMPTY). */
static inline void ulma_collector_native_forget(struct native_seen *cache)
{
	memset(cache, 0xff, NATIVE_CACHE * sizeof(*cache));
}


/* Keep the collector's first error (a negative errno); returns err. */
static inline int ulma_collector_set_error(struct ulma_collector *c, int err)
{
	if (err && !c->error)
		c->error = err;
	return err;
}

/* Apply the records [*tailp, head) of a thread's ring (of mask + 1
 * records; a single record with mask 0) to the profile and its stream, up
 * to `horizon` ticks; stop early at an entry whose definition has not
 * arrived, unless final.  Advances *tailp past what was applied and
 * returns how many.  Errors go to c->error. */
long ulma_collector_apply(struct ulma_collector *c, struct ulma_collector_slot *cs, const struct ulma_record *ring,
			  uint64_t mask, uint64_t *tailp, uint64_t head, uint64_t horizon, bool final);

/* End the thread's open frames at t (at: what t says of the thread: with
 * ULMA_OFFCPU_ENDS, an interval off its CPU in progress ends there too). */
void ulma_collector_close_frames(struct ulma_collector *c, struct ulma_collector_slot *cs, uint64_t t,
				 enum ulma_offcpu_at at);

/* `count` records of the thread lost at t: to the profile and the stream. */
void ulma_collector_record_lost(struct ulma_collector *c, struct ulma_collector_slot *cs, uint64_t t, uint64_t count);

#endif
