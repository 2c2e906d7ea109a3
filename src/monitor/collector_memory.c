/* collector_memory.c - memory and object records in the collector (see
 * collector_memory.h). */
#include "collector_memory.h"

#include "../analysis/profile_memory.h"
#include "../core/trace_writer.h"
#include "collector.h"
#include "collector_defs.h"
#include "ulma/shm.h"

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
		return ulma_profile_mem_free(p, thread, value, ticks);
	}
	if (!mem->sized) {
		p->memory->unmatched_allocs++;
		return 0;
	}
	mem->sized = false;
	if (stream)
		ulma_trace_alloc(stream, ticks, value, mem->size >> 2, (unsigned)(mem->size & 3));
	return ulma_profile_mem_alloc(p, thread, value, mem->size >> 2, (unsigned)(mem->size & 3), ticks);
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
