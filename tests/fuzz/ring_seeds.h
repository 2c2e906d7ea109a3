/* ring_seeds.h - the input of fuzz_rings: a session's contents as traced
 * programs leave them, in a few bytes, and how they are written into a
 * real session (src/core/session.h).  Shared by the fuzz target, the
 * seeds' writer (capture_rings.py writes the same layout) and the unit
 * tests that replay what the fuzzer found (tests/unit/test_collector_hostile.c).
 * Header-only.
 *
 *   byte 0     options: ULMA_RING_SEED_MEMORY (the session records memory),
 *              _TRACE (the monitor writes a trace, else the profile alone),
 *              _GONE (the slots' process is gone: the reap takes its rings,
 *              unpublished records too), _DEFS_PAST (the definition area's
 *              use counter runs past its end)
 *   byte 1     where a writer is still completing a definition when the
 *              first poll looks, in 64-byte units (255: none is): the entry
 *              there (the first at or after it) has no size yet, so that
 *              entry and those after it wait; it completes before the
 *              second poll
 *   bytes 2-3  L, little-endian: the definition area's bytes that follow
 *   L bytes    the definition area, entries as ulma_session_define stores
 *              them (struct ulma_shm_def, include/ulma/shm.h)
 *   then up to ULMA_RING_SEED_SLOTS slots, each a 6-byte header and its
 *   records:
 *     byte 0   the slot's state (enum ulma_slot_state, low 2 bits)
 *     byte 1   its serial (0xf0 to 0xff: 2^64 - 16 to 2^64 - 1)
 *     byte 2   the ring position the monitor starts at (its tail)
 *     byte 3   the published head's distance from tail + count, signed
 *              (writers publish by batches; a hostile one anything)
 *     bytes 4-5  count, little-endian: the records that follow (struct
 *              ulma_record, 16 bytes each; a ring of
 *              ULMA_RING_SEED_RECORDS, so more than that laps it)
 * An input cut short ends where it is cut.
 */
#ifndef ULMA_FUZZ_RING_SEEDS_H
#define ULMA_FUZZ_RING_SEEDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/session.h"
#include "ulma/shm.h"

#define ULMA_RING_SEED_SLOTS 4u
#define ULMA_RING_SEED_RECORDS 256u
#define ULMA_RING_SEED_DEFS 65536u
#define ULMA_RING_SEED_GONE_PID 0x7ffffff0u /* above any pid_max: kill() says ESRCH */

enum ulma_ring_seed_option {
	ULMA_RING_SEED_MEMORY = 1u << 0,
	ULMA_RING_SEED_TRACE = 1u << 1,
	ULMA_RING_SEED_GONE = 1u << 2,
	ULMA_RING_SEED_DEFS_PAST = 1u << 3,
};

struct ulma_ring_seed_slot {
	uint8_t state, tail;
	int8_t skew;
	uint64_t serial;
	uint32_t count;
	const uint8_t *records; /* count * 16 bytes */
};

struct ulma_ring_seed {
	uint8_t options;
	uint32_t defs_first; /* the entry at or after this offset is incomplete at first */
	const uint8_t *defs;
	uint32_t defs_len;
	struct ulma_ring_seed_slot slots[ULMA_RING_SEED_SLOTS];
	uint32_t nslots;
};

/* Split an input into its parts (pointing into data).  False if it is
 * too short to hold the header. */
static inline bool ulma_ring_seed_parse(const uint8_t *data, size_t size, struct ulma_ring_seed *out)
{
	memset(out, 0, sizeof(*out));
	if (size < 4)
		return false;
	out->options = data[0];
	size_t len = (size_t)data[2] | (size_t)data[3] << 8, at = 4;
	if (len > size - at)
		len = size - at;
	out->defs = data + at;
	out->defs_len = (uint32_t)(len & ~(size_t)7); /* the area holds 8-byte aligned entries */
	out->defs_first = data[1] == 255 ? out->defs_len : (uint32_t)data[1] * 64u;
	at += len;
	while (out->nslots < ULMA_RING_SEED_SLOTS && size - at >= 6) {
		struct ulma_ring_seed_slot *sl = &out->slots[out->nslots++];
		sl->state = data[at] & 3;
		sl->serial = data[at + 1] >= 0xf0 ? UINT64_MAX - (0xffu - data[at + 1]) : data[at + 1];
		sl->tail = data[at + 2];
		sl->skew = (int8_t)data[at + 3];
		uint32_t count = (uint32_t)data[at + 4] | (uint32_t)data[at + 5] << 8;
		at += 6;
		if (count > (size - at) / sizeof(struct ulma_record))
			count = (uint32_t)((size - at) / sizeof(struct ulma_record));
		sl->count = count;
		sl->records = data + at;
		at += (size_t)count * sizeof(struct ulma_record);
	}
	return true;
}

/* The offset of the entry the seed's writer has not completed yet (the
 * first at or after defs_first, walking the entries by their sizes), or
 * defs_len if none. */
static inline uint32_t ulma_ring_seed_pending(const struct ulma_ring_seed *seed)
{
	uint32_t at = 0, size;
	while (at < seed->defs_first && (uint64_t)at + 8 <= seed->defs_len) {
		memcpy(&size, seed->defs + at, sizeof(size));
		if (size == 0 || size % 8 || size > seed->defs_len - at)
			return seed->defs_len;
		at += size;
	}
	return at < seed->defs_len ? at : seed->defs_len;
}

/* Write the seed into session s (ULMA_RING_SEED_SLOTS slots of
 * ULMA_RING_SEED_RECORDS records, ULMA_RING_SEED_DEFS bytes of
 * definitions, freshly created): the definitions, the pending one
 * without its size, and every slot, of process pid. */
static inline void ulma_ring_seed_fill(const struct ulma_ring_seed *seed, struct ulma_session *s, uint32_t pid)
{
	memcpy(s->defs, seed->defs, seed->defs_len);
	uint32_t pending = ulma_ring_seed_pending(seed);
	if ((uint64_t)pending + 8 <= seed->defs_len)
		memset(s->defs + pending, 0, 4);
	atomic_store(&s->hdr->defs_used, seed->defs_len);
	uint32_t cap = s->hdr->ring_records;
	for (uint32_t i = 0; i < seed->nslots; i++) {
		const struct ulma_ring_seed_slot *sl = &seed->slots[i];
		struct ulma_shm_slot *slot = &s->slots[i];
		struct ulma_record *ring = ulma_session_ring(s, i);
		for (uint32_t k = 0; k < sl->count; k++)
			memcpy(&ring[(sl->tail + k) & (cap - 1)], sl->records + (size_t)k * sizeof(struct ulma_record),
			       sizeof(struct ulma_record));
		int64_t head = (int64_t)sl->tail + sl->count + sl->skew;
		slot->pid = pid;
		slot->tid = pid + i;
		slot->serial = sl->serial;
		slot->claimed_at = 0;
		atomic_store(&slot->tail, sl->tail);
		atomic_store(&slot->head, (uint64_t)(head > 0 ? head : 0));
		atomic_store(&slot->state, sl->state);
	}
	atomic_store(&s->hdr->slots_used, seed->nslots);
}

/* The pending definition completes (and, with ULMA_RING_SEED_DEFS_PAST,
 * the area's use counter runs past its end). */
static inline void ulma_ring_seed_publish_defs(const struct ulma_ring_seed *seed, struct ulma_session *s)
{
	uint32_t pending = ulma_ring_seed_pending(seed);
	if ((uint64_t)pending + 8 <= seed->defs_len)
		memcpy(s->defs + pending, seed->defs + pending, 4);
	if (seed->options & ULMA_RING_SEED_DEFS_PAST)
		atomic_store(&s->hdr->defs_used, UINT64_MAX - 7);
}

#endif
