/* collector_memory.h - memory records (--memory, docs/memory.md) in the
 * collector: a MEM_SIZE record waits in its thread's state for the ALLOC
 * that follows it; an ALLOC and a FREE go to the profile's memory half
 * (profile_memory.h) and to the thread's trace stream; objects created
 * and destroyed (3.13+) likewise to its objects.  Internal to the
 * collector.  Errors: -ENOMEM.
 */
#ifndef ULMA_COLLECTOR_MEMORY_H
#define ULMA_COLLECTOR_MEMORY_H

#include <stdbool.h>
#include <stdint.h>

struct ulma_collector;
struct ulma_trace_stream;

/* A thread's MEM_SIZE waiting for its ALLOC. */
struct ulma_collector_mem {
	uint64_t size; /* size << 2 | domain */
	bool sized;    /* size is set */
};

/* Record `kind` (ULMA_REC_MEM_SIZE, _ALLOC or _FREE) of thread `thread`,
 * with its 48-bit value, at ticks; stream may be NULL.  An ALLOC whose
 * MEM_SIZE was lost is counted and dropped (the LOST marker before it says
 * why); without memory in the session the records are ignored. */
int ulma_collector_memory(struct ulma_collector *c, uint32_t thread, struct ulma_trace_stream *stream,
			  struct ulma_collector_mem *mem, uint8_t kind, uint64_t value, uint64_t ticks);

/* An object of the type the session defined as `type_id` created (or
 * destroyed) by thread `thread` at ticks: to the profile's objects
 * (profile_objects.h) and to the stream (may be NULL).  An undefined type
 * is dropped; without memory in the session the record is ignored. */
int ulma_collector_object(struct ulma_collector *c, uint32_t thread, struct ulma_trace_stream *stream, bool created,
			  uint32_t type_id, uint64_t ticks);

#endif
