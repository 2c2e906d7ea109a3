/* array.h - the two small allocation helpers every table in ulma uses:
 * growing a zero-filled array so an index fits, and copying a counted
 * string.  Both return an error instead of aborting; single-threaded. */
#ifndef ULMA_ARRAY_H
#define ULMA_ARRAY_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Grow *arr (of *cap elements of elem bytes) so index fits; new elements
 * are zeroed.  Returns 0 or -ENOMEM (the array is then unchanged). */
static inline int ulma_array_grow(void **arr, uint32_t *cap, uint32_t index, size_t elem)
{
	if (index < *cap)
		return 0;
	if (index == UINT32_MAX)
		return -ENOMEM;
	uint32_t ncap = *cap ? *cap : 16;
	while (ncap <= index)
		ncap = ncap > UINT32_MAX / 2 ? UINT32_MAX : ncap * 2;
	void *n = realloc(*arr, (size_t)ncap * elem);
	if (!n)
		return -ENOMEM;
	memset((char *)n + (size_t)*cap * elem, 0, (size_t)(ncap - *cap) * elem);
	*arr = n;
	*cap = ncap;
	return 0;
}

/* A NUL-terminated copy of n bytes, or NULL. The caller frees it. */
static inline char *ulma_strndup(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

#endif
