/* collector_memory.c - memory and object records in the collector (see
 * collector_memory.h). */
#include "collector_memory.h"

#include <errno.h>
#include <string.h>

#include "../analysis/profile_memory.h"
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
 * timeline exports draw them as counter tracks. */
static int memory_counters(struct ulma_collector *c, uint32_t thread, struct ulma_trace_stream *stream,
			   uint64_t ticks)
{
	const struct ulma_mem_thread *mt = c->profile.threads[thread].mem;
	if (!stream || !mt)
		return 0;
	struct ulma_mem_proc *pr = &c->profile.memory->procs[mt->proc];
	uint64_t live = pr->live_bytes, last = pr->counted_bytes;
	uint64_t step = last / COUNTER_STEP_SHARE > COUNTER_STEP_MIN ? last / COUNTER_STEP_SHARE : COUNTER_STEP_MIN;
	if (live < last + step && live + step > last)
		return 0;
	pr->counted_bytes = live;
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

int ulma_collector_memory(struct ulma_collector *c, uint32_t thread, struct ulma_trace_stream *stream,
			  struct ulma_collector_mem *mem, uint8_t kind, uint64_t value, uint64_t ticks)
{
	struct ulma_profile *p = &c->profile;
	if (!p->memory)
		return 0; /* not asked for: a foreign writer's */
	if (kind == ULMA_REC_MEM_SIZE) {
		mem->size = value;
		mem->sized = true;
		return 0;
	}
	if (kind == ULMA_REC_FREE) {
		if (stream)
			ulma_trace_free(stream, ticks, value);
		int err = ulma_profile_mem_free(p, thread, value, ticks);
		return err ? err : memory_counters(c, thread, stream, ticks);
	}
	if (!mem->sized) {
		p->memory->unmatched_allocs++;
		return 0;
	}
	mem->sized = false;
	if (stream)
		ulma_trace_alloc(stream, ticks, value, mem->size >> 2, (unsigned)(mem->size & 3));
	int err = ulma_profile_mem_alloc(p, thread, value, mem->size >> 2, (unsigned)(mem->size & 3), ticks);
	return err ? err : memory_counters(c, thread, stream, ticks);
}

int ulma_collector_object(struct ulma_collector *c, uint32_t thread, struct ulma_trace_stream *stream, bool created,
			  uint32_t type_id, uint64_t ticks)
{
	struct ulma_profile *p = &c->profile;
	if (!p->memory)
		return 0;
	uint32_t idx = ulma_collector_resolve(c, type_id, true);
	if (idx == UINT32_MAX || p->funcs[idx].kind != ULMA_DEF_TYPE)
		return 0; /* not a type's definition: a foreign or corrupt writer's */
	if (stream)
		ulma_trace_object(stream, ticks, created ? ULMA_EXT_OBJ_NEW : ULMA_EXT_OBJ_FREE, idx + 1);
	return ulma_profile_object(p, thread, idx, created);
}
