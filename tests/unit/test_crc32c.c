/* test_crc32c.c - CRC-32C (src/core/crc32c.h): the standard check value,
 * the hardware path against the table on every length and alignment up to
 * 300 bytes, and continuing a checksum over pieces. */
#include <stdint.h>
#include <string.h>

#include "core/crc32c.h"
#include "tap.h"

int main(void)
{
	CHECK_EQ_U64(ulma_crc32c(0, "123456789", 9), 0xE3069283u, "the check value of \"123456789\"");
	CHECK_EQ_U64(ulma_crc32c_table(0, "123456789", 9), 0xE3069283u, "the same in software");
	CHECK_EQ_U64(ulma_crc32c(0, "", 0), 0, "nothing checksums to 0");
	uint8_t buf[320];
	uint64_t x = 0x9E3779B97F4A7C15u;
	for (size_t i = 0; i < sizeof(buf); i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
	int bad = 0;
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len + off <= 300; len++)
			bad += ulma_crc32c(7, buf + off, len) != ulma_crc32c_table(7, buf + off, len);
	CHECK_EQ_U64(bad, 0, "fast path equals the table at every length and alignment");
	uint32_t whole = ulma_crc32c(0, buf, 300);
	uint32_t pieces = ulma_crc32c(ulma_crc32c(ulma_crc32c(0, buf, 13), buf + 13, 200), buf + 213, 87);
	CHECK_EQ_U64(pieces, whole, "a checksum continued over pieces equals the whole one");
	return tap_done();
}
