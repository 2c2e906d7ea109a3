/* protobuf.h - the few pieces of the protocol buffers wire format the
 * Perfetto export writes (https://protobuf.dev/programming-guides/encoding/):
 * a field is a key (field number << 3 | wire type) and a value, a varint,
 * a little-endian 64-bit word, or a length and that many bytes.
 *
 * The fixed-size writers put bytes at p, which must have room (a key and a
 * varint take at most 15 bytes, a fixed64 field 13), and return the end.
 * The buffer writers append to a ulma_sbuf (errors sticky, as there).
 * Nested messages are built in a buffer of their own and appended as
 * bytes: they are small and rare next to the events.
 */
#ifndef ULMA_PROTOBUF_H
#define ULMA_PROTOBUF_H

#include <stdint.h>
#include <string.h>

#include "../core/varint.h"
#include "export_text.h"

enum ulma_pb_wire { ULMA_PB_VARINT = 0, ULMA_PB_FIXED64 = 1, ULMA_PB_BYTES = 2 };

#define ULMA_PB_FIELD_MAX 15 /* bytes a key and a varint take at most */

static inline uint8_t *ulma_pb_varint(uint8_t *p, uint64_t v)
{
	return p + ulma_varint_put(p, v);
}

static inline uint8_t *ulma_pb_key(uint8_t *p, uint32_t field, enum ulma_pb_wire wire)
{
	return ulma_pb_varint(p, (uint64_t)field << 3 | wire);
}

/* A varint field (uint32, uint64, bool, enum). */
static inline uint8_t *ulma_pb_uint(uint8_t *p, uint32_t field, uint64_t v)
{
	return ulma_pb_varint(ulma_pb_key(p, field, ULMA_PB_VARINT), v);
}

/* A fixed64 or double field: the 64 bits, little-endian. */
static inline uint8_t *ulma_pb_fixed64(uint8_t *p, uint32_t field, uint64_t bits)
{
	p = ulma_pb_key(p, field, ULMA_PB_FIXED64);
	for (int i = 0; i < 8; i++)
		*p++ = (uint8_t)(bits >> (8 * i));
	return p;
}

static inline void ulma_pb_put_uint(struct ulma_sbuf *b, uint32_t field, uint64_t v)
{
	uint8_t tmp[ULMA_PB_FIELD_MAX];
	ulma_sbuf_put(b, (const char *)tmp, (size_t)(ulma_pb_uint(tmp, field, v) - tmp));
}

/* A length-delimited field (string, bytes, nested message) of n bytes. */
static inline void ulma_pb_put_bytes(struct ulma_sbuf *b, uint32_t field, const void *s, size_t n)
{
	uint8_t tmp[ULMA_PB_FIELD_MAX];
	uint8_t *e = ulma_pb_varint(ulma_pb_key(tmp, field, ULMA_PB_BYTES), n);
	ulma_sbuf_put(b, (const char *)tmp, (size_t)(e - tmp));
	if (n)
		ulma_sbuf_put(b, s, n);
}

/* A nested message built in m (appended whole; m is left as it was). */
static inline void ulma_pb_put_message(struct ulma_sbuf *b, uint32_t field, const struct ulma_sbuf *m)
{
	if (m->nomem)
		b->nomem = true;
	ulma_pb_put_bytes(b, field, m->p, m->len);
}

/* A string field holding s as valid UTF-8 (protobuf strings must be). */
static inline void ulma_pb_put_string(struct ulma_sbuf *b, uint32_t field, const char *s)
{
	struct ulma_sbuf u = {0};
	ulma_sbuf_utf8(&u, s);
	if (u.nomem)
		b->nomem = true;
	ulma_pb_put_bytes(b, field, u.p ? u.p : "", u.len);
	ulma_sbuf_free(&u);
}

#endif
