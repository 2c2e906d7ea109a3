/* test_varint.c - LEB128 varints (src/core/varint.h): round trips at the
 * length boundaries, exact encodings, and rejection of truncated, overlong
 * and overflowing input without moving the cursor. */
#include <stdint.h>
#include <string.h>

#include "core/varint.h"
#include "tap.h"

/* Encode v, check its length, decode it back from exactly those bytes. */
static void round_trip(uint64_t v, size_t want_len)
{
	uint8_t buf[ULMA_VARINT_MAX + 4];
	memset(buf, 0xAA, sizeof(buf));
	size_t n = ulma_varint_put(buf, v);
	CHECK_EQ_U64(n, want_len, "encoded length");
	CHECK(buf[n] == 0xAA, "put writes no byte past its length (value %llu)", (unsigned long long)v);
	CHECK((buf[n - 1] & 0x80) == 0, "last byte has no continuation bit (value %llu)",
	      (unsigned long long)v);
	for (size_t i = 0; i + 1 < n; i++)
		if (!(buf[i] & 0x80)) {
			CHECK(0, "byte %zu of %llu lacks the continuation bit", i, (unsigned long long)v);
			break;
		}

	const uint8_t *p = buf;
	uint64_t out = ~v;
	int r = ulma_varint_get(&p, buf + n, &out);
	CHECK_EQ_I64(r, 0, "decode succeeds");
	CHECK_EQ_U64(out, v, "decoded value equals encoded value");
	CHECK_EQ_U64(p - buf, n, "decode consumes exactly the encoding");

	/* every shorter prefix is rejected and leaves the cursor alone */
	int bad = 0;
	for (size_t cut = 0; cut < n; cut++) {
		p = buf;
		out = 12345;
		if (ulma_varint_get(&p, buf + cut, &out) != -1 || p != buf || out != 12345)
			bad++;
	}
	CHECK_EQ_U64(bad, 0, "every truncated prefix is rejected, cursor and output untouched");
}

static void exact_bytes(void)
{
	uint8_t buf[ULMA_VARINT_MAX];
	static const uint8_t e300[] = {0xAC, 0x02};
	CHECK(ulma_varint_put(buf, 300) == 2 && memcmp(buf, e300, 2) == 0, "300 encodes as AC 02");
	static const uint8_t emax[] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01};
	CHECK(ulma_varint_put(buf, UINT64_MAX) == 10 && memcmp(buf, emax, 10) == 0,
	      "UINT64_MAX encodes as 9 x FF then 01");
	static const uint8_t e63[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
	CHECK(ulma_varint_put(buf, UINT64_C(1) << 63) == 10 && memcmp(buf, e63, 10) == 0,
	      "2^63 encodes as 9 x 80 then 01");
}

/* Decoding `in` must fail with the cursor unmoved. */
static void rejected(const uint8_t *in, size_t len, const char *what)
{
	const uint8_t *p = in;
	uint64_t out = 777;
	int r = ulma_varint_get(&p, in + len, &out);
	CHECK(r == -1 && p == in && out == 777, "rejected: %s", what);
}

static void bad_inputs(void)
{
	/* 11 bytes: ten continuation bytes then a terminator */
	uint8_t eleven[11];
	memset(eleven, 0x80, 10);
	eleven[10] = 0x00;
	rejected(eleven, sizeof(eleven), "11-byte encoding");

	/* 10th byte 0x02: bit 64 set, does not fit */
	uint8_t ten2[10];
	memset(ten2, 0xFF, 9);
	ten2[9] = 0x02;
	rejected(ten2, sizeof(ten2), "10th byte 0x02 (overflow)");

	/* 10th byte 0x7F */
	uint8_t ten7f[10];
	memset(ten7f, 0xFF, 9);
	ten7f[9] = 0x7F;
	rejected(ten7f, sizeof(ten7f), "10th byte 0x7F (overflow)");

	/* 10th byte with a continuation bit, even if an 11th byte follows */
	uint8_t ten81[12];
	memset(ten81, 0xFF, 9);
	ten81[9] = 0x81;
	ten81[10] = 0x00;
	ten81[11] = 0x00;
	rejected(ten81, sizeof(ten81), "10th byte 0x81 (continues past 64 bits)");

	/* 0x80 with a trailing zero but the buffer ends at the 0x80 */
	uint8_t cont[2] = {0x80, 0x00};
	rejected(cont, 1, "continuation byte at end of input");

	/* empty input */
	rejected(cont, 0, "empty input");

	/* the largest legal 10-byte value still decodes with trailing bytes present */
	uint8_t okbuf[12];
	memset(okbuf, 0xFF, 9);
	okbuf[9] = 0x01;
	okbuf[10] = 0x55;
	okbuf[11] = 0x66;
	const uint8_t *p = okbuf;
	uint64_t out = 0;
	CHECK(ulma_varint_get(&p, okbuf + sizeof(okbuf), &out) == 0 && out == UINT64_MAX && p == okbuf + 10,
	      "UINT64_MAX decodes with trailing bytes, cursor after byte 10");
}

/* A stream of back-to-back varints decodes in order. */
static void sequence(void)
{
	static const uint64_t vals[] = {0, 1, 127, 128, 16383, 16384, UINT32_MAX, UINT64_C(1) << 63,
					UINT64_MAX, 42};
	uint8_t buf[sizeof(vals) / sizeof(vals[0]) * ULMA_VARINT_MAX];
	size_t n = 0;
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		n += ulma_varint_put(buf + n, vals[i]);
	const uint8_t *p = buf;
	size_t i = 0, bad = 0;
	uint64_t v;
	while (p < buf + n && ulma_varint_get(&p, buf + n, &v) == 0) {
		if (i >= sizeof(vals) / sizeof(vals[0]) || v != vals[i])
			bad++;
		i++;
	}
	CHECK(i == sizeof(vals) / sizeof(vals[0]) && bad == 0 && p == buf + n,
	      "a sequence of %zu varints decodes in order (%zu decoded, %zu wrong)", sizeof(vals) / sizeof(vals[0]),
	      i, bad);
}

int main(void)
{
	round_trip(0, 1);
	round_trip(1, 1);
	round_trip(127, 1);
	round_trip(128, 2);
	round_trip(16383, 2);
	round_trip(16384, 3);
	round_trip(UINT32_MAX, 5);
	round_trip((UINT64_C(1) << 63) - 1, 9);
	round_trip(UINT64_C(1) << 63, 10);
	round_trip(UINT64_MAX, 10);
	exact_bytes();
	bad_inputs();
	sequence();
	return tap_done();
}
