/* alloc.c - `--memory`'s native half: every malloc, calloc, realloc,
 * reallocarray, free, posix_memalign, aligned_alloc, memalign, valloc,
 * mmap and munmap that the interpreter and every extension make, into the
 * calling thread's ring with its call events (docs/memory.md, "Native
 * allocations").
 *
 * How they are seen: got.c rebinds each loaded object's PLT and GOT slots
 * of these functions to the wrappers below, when tracing starts and after
 * each extension module is loaded, the way it rebinds the
 * -finstrument-functions hooks (and the way memray hooks malloc).  Not
 * rebound: libc and the dynamic loader (whose own calls are internal),
 * this library, and the object that started recording (the extension,
 * whose allocations are ulma's).  Why not LD_PRELOAD: a Python process
 * keeps the program's environment (ulma.profile() and `ulma top` attach
 * to a process that was not started with it), and the wrappers cost the
 * same either way (docs/memory.md measures both).
 *
 * Each wrapper calls the real function, found with dlsym(RTLD_DEFAULT):
 * the definition every object's slot would have bound to (libc's, or an
 * allocator the program preloads or defines itself).  It records nothing
 * when recording is off (after stop the slots stay rebound and pass
 * every call through: one load and a branch), nor inside another
 * recorded allocation: ulma_memory_depth, shared with the Python
 * allocator hooks of the extension, makes only a thread's outermost
 * allocation count, so a PyMem_RawMalloc that calls malloc, or pymalloc
 * mapping an arena, is one block in Python's domain, not two.  Records
 * are MEM_SIZE (size << 2 | ULMA_MEM_NATIVE) and ALLOC, or FREE, as the
 * Python hooks write them; no lock, no allocation on ulma's side (a thread
 * with no writer yet attaches one with libc's malloc, which this library
 * calls directly).  munmap of part of a mapping frees the block at its
 * start address, whatever its length; mremap is not followed.  With
 * --memory=sample:BYTES only sampled blocks are recorded (sample.c).
 */
#include "rt.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <sys/mman.h>

ULMA_RT_API __thread uint8_t ulma_memory_depth __attribute__((tls_model("initial-exec")));

static volatile bool recording;

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void *(*real_reallocarray)(void *, size_t, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);

#define now ulma_rt_mem_now

/* What one call did (rt.h): native code's blocks are domain 3. */
static inline void record(void *old, uint64_t t_free, void *p, uint64_t size, uint64_t t_alloc)
{
	ulma_rt_mem_record(ULMA_MEM_NATIVE, old, t_free, p, size, t_alloc);
}

static inline bool outermost(void)
{
	return ULMA_UNLIKELY(recording) && ulma_memory_depth == 0;
}

/* The end of an outermost allocation: block p (if any) of `size` bytes. */
static inline void *allocated(void *p, size_t size)
{
	uint64_t weight;
	if (p && ulma_rt_sample_alloc(p, size, &weight))
		record(NULL, 0, p, weight, now()); /* read after the block was got */
	ulma_memory_depth--;
	return p;
}

static void *ulma_malloc(size_t size)
{
	if (!outermost())
		return real_malloc(size);
	ulma_memory_depth++;
	return allocated(real_malloc(size), size);
}

static void *ulma_calloc(size_t n, size_t size)
{
	if (!outermost())
		return real_calloc(n, size);
	ulma_memory_depth++;
	return allocated(real_calloc(n, size), n * size); /* the allocator checked n * size for overflow */
}

static void *ulma_aligned_alloc(size_t align, size_t size)
{
	if (!outermost())
		return real_aligned_alloc(align, size);
	ulma_memory_depth++;
	return allocated(real_aligned_alloc(align, size), size);
}

static void *ulma_memalign(size_t align, size_t size)
{
	if (!outermost())
		return real_memalign(align, size);
	ulma_memory_depth++;
	return allocated(real_memalign(align, size), size);
}

static void *ulma_valloc(size_t size)
{
	if (!outermost())
		return real_valloc(size);
	ulma_memory_depth++;
	return allocated(real_valloc(size), size);
}

/* A free and an allocation (the old block's time before the call, the
 * new one's after); realloc(p, 0) frees p, and a failed call changes
 * nothing. */
static void *resize(void *old, size_t size, void *(*call)(void *, size_t, size_t), size_t n)
{
	ulma_memory_depth++;
	bool freeing = old && ulma_rt_sample_free(old);
	uint64_t t0 = freeing ? now() : 0, weight = 0;
	void *p = call(old, n, size);
	if (!p && n * size != 0) { /* failed: old is still there, and still sampled */
		if (freeing && ulma_rt_sample_bytes)
			ulma_rt_sampled_keep((uintptr_t)old);
		freeing = false;
	}
	bool allocating = p && ulma_rt_sample_alloc(p, n * size, &weight);
	if (freeing || allocating)
		record(freeing ? old : NULL, t0, allocating ? p : NULL, weight, now());
	ulma_memory_depth--;
	return p;
}

static void *call_realloc(void *old, size_t n, size_t size)
{
	(void)n;
	return real_realloc(old, size);
}

static void *ulma_realloc(void *old, size_t size)
{
	if (!outermost())
		return real_realloc(old, size);
	return resize(old, size, call_realloc, 1);
}

static void *ulma_reallocarray(void *old, size_t n, size_t size)
{
	if (!outermost())
		return real_reallocarray(old, n, size);
	return resize(old, size, real_reallocarray, n);
}

static void ulma_free(void *p)
{
	if (!p || !outermost() || !ulma_rt_sample_free(p)) {
		real_free(p);
		return;
	}
	ulma_memory_depth++;
	uint64_t t = now(); /* before the block is given back (rt.h's memory records) */
	real_free(p);
	record(p, t, NULL, 0, 0);
	ulma_memory_depth--;
}

static int ulma_posix_memalign(void **out, size_t align, size_t size)
{
	if (!outermost())
		return real_posix_memalign(out, align, size);
	ulma_memory_depth++;
	int rc = real_posix_memalign(out, align, size);
	allocated(rc == 0 ? *out : NULL, size);
	return rc;
}

static void *ulma_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (!outermost())
		return real_mmap(addr, len, prot, flags, fd, off);
	ulma_memory_depth++;
	void *p = real_mmap(addr, len, prot, flags, fd, off);
	allocated(p != MAP_FAILED ? p : NULL, len);
	return p;
}

static int ulma_munmap(void *addr, size_t len)
{
	if (!outermost())
		return real_munmap(addr, len);
	ulma_memory_depth++;
	bool freeing = addr && ulma_rt_sample_free(addr);
	uint64_t t = now();
	int rc = real_munmap(addr, len);
	if (rc == 0 && freeing)
		record(addr, t, NULL, 0, 0);
	ulma_memory_depth--;
	return rc;
}

/* The functions rebound, with the real one's slot: mmap64 is mmap on
 * 64-bit Linux. */
const struct ulma_rt_alloc_fn ulma_rt_alloc_fns[] = {
	{"malloc", (void *)ulma_malloc, (void **)&real_malloc},
	{"calloc", (void *)ulma_calloc, (void **)&real_calloc},
	{"realloc", (void *)ulma_realloc, (void **)&real_realloc},
	{"reallocarray", (void *)ulma_reallocarray, (void **)&real_reallocarray},
	{"free", (void *)ulma_free, (void **)&real_free},
	{"posix_memalign", (void *)ulma_posix_memalign, (void **)&real_posix_memalign},
	{"aligned_alloc", (void *)ulma_aligned_alloc, (void **)&real_aligned_alloc},
	{"memalign", (void *)ulma_memalign, (void **)&real_memalign},
	{"valloc", (void *)ulma_valloc, (void **)&real_valloc},
	{"mmap", (void *)ulma_mmap, (void **)&real_mmap},
	{"mmap64", (void *)ulma_mmap, (void **)&real_mmap},
	{"munmap", (void *)ulma_munmap, (void **)&real_munmap},
	{NULL, NULL, NULL},
};

/* The real functions, once: a name this libc lacks is not rebound (got.c). */
static void resolve(void)
{
	for (const struct ulma_rt_alloc_fn *f = ulma_rt_alloc_fns; f->name; f++)
		if (!*f->real)
			*f->real = dlsym(RTLD_DEFAULT, f->name);
}

void ulma_rt_alloc_start(const void *exclude)
{
	resolve();
	ulma_rt_sample_reset(ULMA_RT.session.hdr ? ULMA_RT.session.hdr->mem_sample_bytes : 0);
	recording = true; /* before the slots point here: a wrapper reached records */
	ulma_rt_bind_allocators(exclude);
}

void ulma_rt_alloc_stop(void)
{
	recording = false;
}
