/* crc32c.h - CRC-32C (Castagnoli) checksums for trace chunks. */
#ifndef ULMA_CRC32C_H
#define ULMA_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Checksum of len bytes, continuing from crc (start with 0).  Thread-safe. */
uint32_t ulma_crc32c(uint32_t crc, const void *data, size_t len);

/* The same in software only (for checking the fast path against). */
uint32_t ulma_crc32c_table(uint32_t crc, const void *data, size_t len);

#endif
