/* preload_shim.c - bench/native_alloc.py's LD_PRELOAD alternative: malloc
 * and free exported by a preloaded library, forwarding to the next
 * definition (libc's) through a pointer found once, as an LD_PRELOAD
 * interposer does before it records anything.  What it costs against
 * GOT rebinding, which reaches ulma's wrapper through the same PLT slot. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

static void *(*next_malloc)(size_t);
static void (*next_free)(void *);

void *malloc(size_t size)
{
	if (!next_malloc)
		next_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	return next_malloc(size);
}

void free(void *p)
{
	if (!next_free)
		next_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	next_free(p);
}
