/* fix_checksums.h - make every complete chunk's CRC right, in place, so a
 * fuzz target's mutations reach the parsers behind the checksum check.
 * Shared by the fuzz targets; header-only, as each target is one file. */
#ifndef ULMA_FUZZ_FIX_CHECKSUMS_H
#define ULMA_FUZZ_FIX_CHECKSUMS_H

#include <stddef.h>
#include <stdint.h>

#include "core/crc32c.h"
#include "ulma/trace_format.h"

static inline void ulma_fuzz_fix_checksums(uint8_t *d, size_t size)
{
	size_t off = ULMA_TRACE_FILE_HEADER;
	while (off + ULMA_TRACE_CHUNK_HEADER <= size) {
		uint32_t len = (uint32_t)d[off + 4] | (uint32_t)d[off + 5] << 8 | (uint32_t)d[off + 6] << 16 |
			       (uint32_t)d[off + 7] << 24;
		if (len > size - off - ULMA_TRACE_CHUNK_HEADER)
			break;
		uint32_t crc = ulma_crc32c(0, d + off + ULMA_TRACE_CHUNK_HEADER, len);
		d[off + 8] = (uint8_t)crc;
		d[off + 9] = (uint8_t)(crc >> 8);
		d[off + 10] = (uint8_t)(crc >> 16);
		d[off + 11] = (uint8_t)(crc >> 24);
		off += ULMA_TRACE_CHUNK_HEADER + len;
	}
}

#endif
