/* summary_memory.c - the summary's memory part (`--memory`,
 * docs/memory.md): per function its allocations, frees, net and total
 * bytes; the peak, when it came and who held it; the leaks by stack;
 * objects created and destroyed per type (3.13+).
 * Text after the function table, and the JSON's keys (docs/json.md).
 * Writes only to the stream it is given.
 */
#include <stdlib.h>
#include <string.h>

#include "profile_memory.h"
#include "summary_parts.h"

#define LEAKS_JSON 200 /* leak groups in the JSON, the largest */
#define LEAKS_TEXT 10
#define OBJECTS_JSON 200 /* types in the JSON's objects, the largest net first */
#define OBJECTS_TEXT 10
#define STACK_MAX 32   /* frames of a leak's stack shown: the innermost */

static double mib(uint64_t bytes)
{
	return (double)bytes / (1024.0 * 1024.0);
}

static const char *name_of(const struct ulma_profile *p, uint32_t f)
{
	return f < p->nfuncs && p->funcs[f].name ? p->funcs[f].name : "?";
}

/* ns from the session's start to ticks. */
static uint64_t since_start(const struct ulma_summary *s, uint64_t ticks)
{
	return ticks > s->cal.ticks0 ? ulma_summary_ns(s, ticks - s->cal.ticks0) : 0;
}

/* A JSON list of {type, created, destroyed}. */
static void objects_json(FILE *out, const struct ulma_profile *p, const struct ulma_obj_count *rows, uint32_t n)
{
	fputc('[', out);
	for (uint32_t i = 0; i < n; i++) {
		fputs(i ? ", {\"type\": " : "{\"type\": ", out);
		ulma_summary_json_string(out, name_of(p, rows[i].type));
		fprintf(out, ", \"created\": %llu, \"destroyed\": %llu}", (unsigned long long)rows[i].created,
			(unsigned long long)rows[i].destroyed);
	}
	fputc(']', out);
}

void ulma_summary_memory_func_json(FILE *out, const struct ulma_summary *s, uint32_t func,
				   const struct ulma_obj_count *objects, uint32_t nobjects)
{
	if (!s->profile->memory)
		return;
	uint32_t count, first = ulma_obj_rows_of(objects, nobjects, func, &count);
	fputs(", \"objects\": ", out);
	objects_json(out, s->profile, count ? objects + first : NULL, count); /* objects is NULL without rows */
	struct ulma_mem_func m = ulma_profile_memory_func(s->profile, func);
	fprintf(out,
		", \"alloc_count\": %llu, \"alloc_bytes\": %llu, \"free_count\": %llu, \"net_bytes\": %llu, "
		"\"total_alloc_count\": %llu, \"total_alloc_bytes\": %llu, \"peak_held_bytes\": %llu, "
		"\"native_alloc_count\": %llu, \"native_alloc_bytes\": %llu, \"native_net_bytes\": %llu",
		(unsigned long long)m.alloc_count, (unsigned long long)m.alloc_bytes, (unsigned long long)m.free_count,
		(unsigned long long)(m.alloc_bytes - m.free_bytes), (unsigned long long)m.total_alloc_count,
		(unsigned long long)m.total_alloc_bytes, (unsigned long long)m.peak_bytes,
		(unsigned long long)m.native_alloc_count, (unsigned long long)m.native_alloc_bytes,
		(unsigned long long)(m.native_alloc_bytes - m.native_free_bytes));
}

static void stack_json(FILE *out, const struct ulma_profile *p, uint32_t node)
{
	uint32_t funcs[STACK_MAX];
	uint32_t n = ulma_profile_memory_stack(p, node, funcs, STACK_MAX);
	fputc('[', out);
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			fputs(", ", out);
		ulma_summary_json_string(out, name_of(p, funcs[i]));
	}
	fputc(']', out);
}

int ulma_summary_memory_json(FILE *out, const struct ulma_summary *s)
{
	const struct ulma_profile *p = s->profile;
	const struct ulma_profile_memory *m = p->memory;
	if (!m) {
		fputs("\"memory\": false, ", out);
		return 0;
	}
	struct ulma_mem_leak *leaks;
	uint32_t nleaks;
	if (ulma_profile_memory_leaks(p, &leaks, &nleaks) < 0)
		return -ENOMEM;
	struct ulma_obj_count *types;
	uint32_t ntypes;
	if (ulma_profile_objects_by_type(p, &types, &ntypes) < 0) {
		free(leaks);
		return -ENOMEM;
	}
	fprintf(out, "\"objects_counted\": %s, \"objects_created\": %llu, \"objects_destroyed\": %llu, \"objects\": ",
		m->objects_recorded ? "true" : "false", (unsigned long long)m->objects.created,
		(unsigned long long)m->objects.destroyed);
	objects_json(out, p, types, ntypes < OBJECTS_JSON ? ntypes : OBJECTS_JSON);
	fputs(", ", out);
	free(types);
	const struct ulma_mem_proc *peak = ulma_profile_memory_peak(p);
	uint64_t live = 0;
	for (uint32_t i = 0; i < m->nprocs; i++)
		live += m->procs[i].live_bytes;
	fprintf(out, "\"memory_sample_bytes\": %llu, ", (unsigned long long)m->sample_bytes);
	fprintf(out,
		"\"memory\": true, \"peak_bytes\": %llu, \"peak_time_ns\": %llu, \"peak_pid\": %u, "
		"\"alloc_count\": %llu, \"alloc_bytes\": %llu, \"free_count\": %llu, \"free_bytes\": %llu, "
		"\"native_alloc_count\": %llu, \"native_alloc_bytes\": %llu, \"live_bytes\": %llu, \"outside_alloc_count\": %llu, \"unknown_frees\": %llu, "
		"\"unattributed\": %llu, \"untracked\": %llu, \"leak_groups\": %u, \"leaks\": [",
		(unsigned long long)(peak ? peak->peak_bytes : 0),
		(unsigned long long)(peak ? since_start(s, peak->peak_ticks) : 0), peak ? peak->pid : 0,
		(unsigned long long)m->alloc_count, (unsigned long long)m->alloc_bytes, (unsigned long long)m->free_count,
		(unsigned long long)m->free_bytes, (unsigned long long)m->native_alloc_count,
		(unsigned long long)m->native_alloc_bytes, (unsigned long long)live, (unsigned long long)m->outside_count,
		(unsigned long long)(m->unknown_frees + m->unmatched), (unsigned long long)(m->unattributed + m->unmatched_allocs),
		(unsigned long long)m->untracked, nleaks);
	for (uint32_t i = 0; i < nleaks && i < LEAKS_JSON; i++) {
		fputs(i ? ",\n  {\"stack\": " : "\n  {\"stack\": ", out);
		stack_json(out, p, leaks[i].node);
		fprintf(out, ", \"bytes\": %llu, \"count\": %llu, \"native_bytes\": %llu, \"native_count\": %llu}",
			(unsigned long long)leaks[i].bytes, (unsigned long long)leaks[i].count,
			(unsigned long long)leaks[i].native_bytes, (unsigned long long)leaks[i].native_count);
	}
	fputs("\n], ", out);
	free(leaks);
	return 0;
}

/* Function indices that allocated, by self bytes descending; *n of them. */
static uint32_t *by_alloc_bytes(const struct ulma_profile *p, uint32_t *n)
{
	uint64_t *key = calloc(p->nfuncs ? p->nfuncs : 1, sizeof(*key));
	if (!key)
		return NULL;
	*n = 0;
	for (uint32_t i = 0; i < p->nfuncs; i++) {
		key[i] = ulma_profile_memory_func(p, i).alloc_bytes;
		*n += key[i] != 0;
	}
	uint32_t *order = ulma_profile_sorted_by_key(p, key);
	free(key);
	return order;
}

static void stack_text(FILE *out, const struct ulma_profile *p, uint32_t node)
{
	uint32_t funcs[STACK_MAX];
	uint32_t n = ulma_profile_memory_stack(p, node, funcs, 6); /* the innermost few */
	if (n == 0)
		fputs("(no frame)", out);
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			fputs(" > ", out);
		ulma_summary_put_printable(out, name_of(p, funcs[i]), 40);
	}
	fputc('\n', out);
}

/* The types with the most objects left (created less destroyed). */
static void objects_text(FILE *out, const struct ulma_profile *p)
{
	struct ulma_obj_count *types;
	uint32_t n;
	if (!p->memory->objects_recorded || ulma_profile_objects_by_type(p, &types, &n) < 0)
		return;
	fprintf(out, "objects by type, most left at the end first (%llu created, %llu destroyed):\n",
		(unsigned long long)p->memory->objects.created, (unsigned long long)p->memory->objects.destroyed);
	fprintf(out, "%12s %12s %12s  %s\n", "created", "destroyed", "net", "type");
	for (uint32_t i = 0; i < n && i < OBJECTS_TEXT; i++) {
		fprintf(out, "%12llu %12llu %12lld  ", (unsigned long long)types[i].created,
			(unsigned long long)types[i].destroyed, (long long)(types[i].created - types[i].destroyed));
		ulma_summary_put_printable(out, name_of(p, types[i].type), 60);
		fputc('\n', out);
	}
	free(types);
}

void ulma_summary_memory_text(FILE *out, const struct ulma_summary *s, uint32_t limit)
{
	const struct ulma_profile *p = s->profile;
	const struct ulma_profile_memory *m = p->memory;
	if (!m)
		return;
	uint32_t nalloc = 0;
	uint32_t *order = by_alloc_bytes(p, &nalloc);
	const struct ulma_mem_proc *peak = ulma_profile_memory_peak(p);
	fprintf(out, "\nmemory: %llu allocations (%.3f MiB, %.3f MiB of them native), %llu frees (%.3f MiB); "
		"peak %.3f MiB at %.3f s",
		(unsigned long long)m->alloc_count, mib(m->alloc_bytes), mib(m->native_alloc_bytes),
		(unsigned long long)m->free_count, mib(m->free_bytes), mib(peak ? peak->peak_bytes : 0),
		peak ? (double)since_start(s, peak->peak_ticks) / 1e9 : 0.0);
	if (m->nprocs > 1 && peak)
		fprintf(out, " (pid %u)", peak->pid);
	fputc('\n', out);
	if (m->sample_bytes)
		fprintf(out, "  sampled: one allocation every %llu bytes on average; bytes are estimates, counts are "
			     "of the sampled blocks\n",
			(unsigned long long)m->sample_bytes);
	uint64_t unknown = m->unknown_frees + m->unmatched, unattributed = m->unattributed + m->unmatched_allocs;
	if (unknown || unattributed || m->untracked)
		fprintf(out, "  %llu frees of blocks allocated before tracing; %llu records no thread could write; "
			     "%llu blocks not kept (table full)\n",
			(unsigned long long)unknown, (unsigned long long)unattributed, (unsigned long long)m->untracked);
	if (order && nalloc) {
		fprintf(out, "%12s %10s %10s %12s %10s %10s %10s  %s\n", "allocs", "MiB", "native MiB", "frees",
			"net MiB", "total MiB", "peak MiB", "function");
		for (uint32_t k = 0; k < nalloc && k < limit; k++) {
			struct ulma_mem_func f = ulma_profile_memory_func(p, order[k]);
			fprintf(out, "%12llu %10.3f %10.3f %12llu %10.3f %10.3f %10.3f  ", (unsigned long long)f.alloc_count,
				mib(f.alloc_bytes), mib(f.native_alloc_bytes), (unsigned long long)f.free_count,
				mib(f.alloc_bytes - f.free_bytes), mib(f.total_alloc_bytes), mib(f.peak_bytes));
			ulma_summary_put_printable(out, name_of(p, order[k]), 60);
			fputc('\n', out);
		}
	}
	free(order);
	struct ulma_mem_leak *leaks;
	uint32_t nleaks;
	if (ulma_profile_memory_leaks(p, &leaks, &nleaks) < 0)
		return;
	if (nleaks)
		fprintf(out, "still allocated at the end, by stack (%u stacks):\n", nleaks);
	for (uint32_t i = 0; i < nleaks && i < LEAKS_TEXT; i++) {
		fprintf(out, "%12.3f MiB %10llu blocks  ", mib(leaks[i].bytes), (unsigned long long)leaks[i].count);
		stack_text(out, p, leaks[i].node);
	}
	free(leaks);
	objects_text(out, p);
}
