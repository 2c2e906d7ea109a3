/* memory.c - `--memory`: every allocation and free of Python's three
 * allocator domains (RAW, MEM, OBJ) into the thread's own ring
 * (docs/memory.md).
 *
 * start() wraps each domain's allocator (PyMem_GetAllocator) with one of
 * ours (PyMem_SetAllocator) that calls the allocator that was there and
 * then writes two records for an allocation (MEM_SIZE, ALLOC) or one for a
 * free (FREE), with one clock read each (with --memory=sample:BYTES, of
 * the sampled blocks only: libulma_rt's sample.c), through the same per-thread
 * writer as the call events: no lock, no allocation on our side (a thread
 * that has no writer yet attaches one with libc's malloc, which no Python
 * allocator hook sees).  stop() puts the previous allocators back if ours
 * are still the ones installed; if something wrapped ours meanwhile (a
 * tracemalloc.start() in the program), ours stay in its chain and pass
 * every call through untouched from then on.
 *
 * Nesting: pymalloc hands large blocks to PyMem_RawMalloc, and another
 * tool's hook may sit between domains; a per-thread depth byte
 * (ulma_memory_depth, which libulma_rt's malloc wrappers read too: a
 * PyMem_RawMalloc is not also a native malloc) makes only the outermost
 * call of a thread count, as tracemalloc does, so a block is recorded
 * once, in the domain the program asked.  Native code's own malloc, mmap
 * and the rest are libulma_rt's (src/runtime/alloc.c), started here.  The same byte keeps
 * out what ulma's own slow paths allocate (interning a function's name,
 * its co_extra slot: intern.c).  Our wrappers read their
 * original allocator from static memory, never from ctx: a RAW call of
 * another thread racing PyMem_SetAllocator may pair our function with the
 * previous ctx.  The RAW domain is called without the GIL; nothing here
 * needs it.
 */
#include "tracer.h"

#include <stdatomic.h>

#include "ulma/shm.h"

#define DOMAINS 3

static PyMemAllocatorEx original[DOMAINS]; /* what was installed before ours */
static PyMemAllocatorEx wrapper[DOMAINS];  /* ours, as installed */
static bool installed;                      /* ours are in the interpreter's chain */
static volatile bool recording;             /* they record (else they pass calls through) */

static const PyMemAllocatorDomain py_domain[DOMAINS] = {PYMEM_DOMAIN_RAW, PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ};

#define now ulma_rt_mem_now

/* What one call did (rt.h): in domain dom. */
static inline void record(int dom, void *old, uint64_t t_free, void *p, uint64_t size, uint64_t t_alloc)
{
	ulma_rt_mem_record((unsigned)dom, old, t_free, p, size, t_alloc);
}

static inline bool outermost(void)
{
	return recording && ulma_memory_depth == 0;
}

static void *hook_malloc(int dom, size_t size)
{
	const PyMemAllocatorEx *o = &original[dom];
	if (!outermost())
		return o->malloc(o->ctx, size);
	ulma_memory_depth++;
	void *p = o->malloc(o->ctx, size);
	uint64_t weight;
	if (p && ulma_rt_sample_alloc(p, size, &weight))
		record(dom, NULL, 0, p, weight, now()); /* read after the block was got */
	ulma_memory_depth--;
	return p;
}

static void *hook_calloc(int dom, size_t n, size_t size)
{
	const PyMemAllocatorEx *o = &original[dom];
	if (!outermost())
		return o->calloc(o->ctx, n, size);
	ulma_memory_depth++;
	void *p = o->calloc(o->ctx, n, size);
	uint64_t weight; /* the allocator checked n * size for overflow */
	if (p && ulma_rt_sample_alloc(p, n * size, &weight))
		record(dom, NULL, 0, p, weight, now());
	ulma_memory_depth--;
	return p;
}

/* A free and an allocation: the old block is gone (its time before the
 * call), the new one is there (its time after).  A failed realloc changes
 * nothing.  (Under the GIL one read would order MEM and OBJ blocks, but
 * pymalloc hands large ones to the RAW domain, which other threads call
 * without it.) */
static void *hook_realloc(int dom, void *old, size_t size)
{
	const PyMemAllocatorEx *o = &original[dom];
	if (!outermost())
		return o->realloc(o->ctx, old, size);
	ulma_memory_depth++;
	bool freeing = old && ulma_rt_sample_free(old); /* sampled: before the block can be reused */
	uint64_t t0 = freeing ? now() : 0, weight = 0;
	void *p = o->realloc(o->ctx, old, size);
	if (!p) { /* failed: old is still there, and still sampled */
		if (freeing && ulma_rt_sample_bytes)
			ulma_rt_sampled_keep((uintptr_t)old);
		freeing = false;
	}
	bool allocating = p && ulma_rt_sample_alloc(p, size, &weight);
	if (freeing || allocating)
		record(dom, freeing ? old : NULL, t0, allocating ? p : NULL, weight, now());
	ulma_memory_depth--;
	return p;
}

static void hook_free(int dom, void *p)
{
	const PyMemAllocatorEx *o = &original[dom];
	if (!p || !outermost() || !ulma_rt_sample_free(p)) {
		o->free(o->ctx, p);
		return;
	}
	ulma_memory_depth++;
	uint64_t t = now();
	o->free(o->ctx, p);
	record(dom, p, t, NULL, 0, 0);
	ulma_memory_depth--;
}

/* One set of entry points per domain, so that none depends on ctx. */
#define DOMAIN_HOOKS(name, dom)                                                                         \
	static void *name##_malloc(void *ctx, size_t size)                                              \
	{                                                                                               \
		(void)ctx;                                                                              \
		return hook_malloc(dom, size);                                                          \
	}                                                                                               \
	static void *name##_calloc(void *ctx, size_t n, size_t size)                                    \
	{                                                                                               \
		(void)ctx;                                                                              \
		return hook_calloc(dom, n, size);                                                       \
	}                                                                                               \
	static void *name##_realloc(void *ctx, void *p, size_t size)                                    \
	{                                                                                               \
		(void)ctx;                                                                              \
		return hook_realloc(dom, p, size);                                                      \
	}                                                                                               \
	static void name##_free(void *ctx, void *p)                                                     \
	{                                                                                               \
		(void)ctx;                                                                              \
		hook_free(dom, p);                                                                      \
	}
DOMAIN_HOOKS(raw, ULMA_MEM_RAW)
DOMAIN_HOOKS(mem, ULMA_MEM_MEM)
DOMAIN_HOOKS(obj, ULMA_MEM_OBJ)
#undef DOMAIN_HOOKS

static bool is_ours(int dom)
{
	PyMemAllocatorEx now_installed;
	PyMem_GetAllocator(py_domain[dom], &now_installed);
	return now_installed.malloc == wrapper[dom].malloc && now_installed.free == wrapper[dom].free;
}

void ulma_memory_start(void)
{
	if (!(ulma_rt.session.hdr->flags & ULMA_SHM_MEMORY))
		return;
	/* first: the native hooks and the sampling rate both domains read */
	ulma_rt_alloc_start((const void *)ulma_memory_start); /* this module's own mallocs are ulma's */
	if (!installed) {
		wrapper[ULMA_MEM_RAW] = (PyMemAllocatorEx){NULL, raw_malloc, raw_calloc, raw_realloc, raw_free};
		wrapper[ULMA_MEM_MEM] = (PyMemAllocatorEx){NULL, mem_malloc, mem_calloc, mem_realloc, mem_free};
		wrapper[ULMA_MEM_OBJ] = (PyMemAllocatorEx){NULL, obj_malloc, obj_calloc, obj_realloc, obj_free};
		for (int d = 0; d < DOMAINS; d++)
			PyMem_GetAllocator(py_domain[d], &original[d]);
		for (int d = 0; d < DOMAINS; d++)
			PyMem_SetAllocator(py_domain[d], &wrapper[d]);
		installed = true;
	}
	recording = true;
	ulma_objects_start();
}

void ulma_memory_stop(void)
{
	ulma_rt_alloc_stop();
	ulma_objects_stop();
	if (!installed)
		return;
	recording = false;
	bool all_ours = true;
	for (int d = 0; d < DOMAINS; d++)
		all_ours = all_ours && is_ours(d);
	if (!all_ours)
		return; /* wrapped by another hook: ours stay in its chain, passing calls through */
	for (int d = 0; d < DOMAINS; d++)
		PyMem_SetAllocator(py_domain[d], &original[d]);
	installed = false;
}
