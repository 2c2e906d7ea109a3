/* varint.h - LEB128 unsigned varints, the unit of the trace encoding.
 * Encoding never fails given 10 bytes of room; decoding is bounds-checked
 * and rejects overlong or overflowing input. */
#ifndef ULMA_VARINT_H
#define ULMA_VARINT_H

#include <stddef.h>
#include <stdint.h>

#define ULMA_VARINT_MAX 10

/* Write v at p (which has at least ULMA_VARINT_MAX bytes); return bytes written. */
static inline size_t ulma_varint_put(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Read a varint from [*p, end).  Returns 0 and advances *p, or -1 if the
 * input ends early or the value does not fit in 64 bits. */
static inline int ulma_varint_get(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	const uint8_t *q = *p;
	if (q < end && *q < 0x80) { /* one byte: the common case */
		*out = *q;
		*p = q + 1;
		return 0;
	}
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (q >= end)
			return -1;
		uint8_t b = *q++;
		if (shift == 63 && b > 1)
			return -1;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			*p = q;
			return 0;
		}
	}
	return -1;
}

#endif
