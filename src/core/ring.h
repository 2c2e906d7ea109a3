/* ring.h - the per-thread single-producer single-consumer record ring.
 *
 * Protocol (as libbpf's ringbuf.c): positions are u64 counts of records that
 * only grow; the slot index is position & mask.  The producer owns `head`,
 * the consumer owns `tail`.  The producer writes records and publishes the
 * new head with a release store once per batch of ULMA_RING_BATCH records
 * (a whole number of cache lines), so the consumer never reads a line the
 * producer is still filling; ulma_ring_publish flushes a partial batch at
 * thread exit and when tracing stops.  The consumer loads head with acquire,
 * reads the records, then publishes its new tail with a release store, which
 * the producer loads with acquire before reusing that space.
 *
 * The producer never waits in the default mode: when the ring is full it
 * counts the record as lost, and the next record that fits is preceded by a
 * ULMA_REC_LOST marker carrying that count.  In lossless mode it waits for
 * room, unless the monitor's heartbeat has stopped, in which case it falls
 * back to dropping (and says so in the header's failure bits).
 *
 * The fast path (ulma_ring_write) is inline and has one predictable branch;
 * everything rare lives in ring.c.
 */
#ifndef ULMA_RING_H
#define ULMA_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ulma/shm.h"

#define ULMA_RING_BATCH 32u /* records per publication: 512 bytes, 8 cache lines */

#define ULMA_LIKELY(x) __builtin_expect(!!(x), 1)
#define ULMA_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Producer-side state.  Lives in the producer's own memory; owned by one
 * thread, which is the only one that may call the writer functions. */
struct ulma_ring_writer {
	struct ulma_record *records;
	struct ulma_shm_slot *slot;
	struct ulma_shm_header *hdr; /* for the lossless heartbeat check */
	uint64_t mask;
	uint64_t head;  /* private copy of the next position to write */
	uint64_t limit; /* head may reach this without looking at tail; 0 forces the slow path */
	uint64_t lost;  /* records dropped since the last LOST marker */
	bool lossless;
	bool use_tsc;
};

/* Slow path: make room for one record (and a pending LOST marker).
 * Returns false if the record must be dropped. */
bool ulma_ring_make_room(struct ulma_ring_writer *w);

static_assert(offsetof(struct ulma_record, id) == 8 && offsetof(struct ulma_record, cpu) == 12 &&
		      offsetof(struct ulma_record, kind) == 14 && offsetof(struct ulma_record, flags) == 15,
	      "ulma_ring_write stores id, cpu, kind and flags as one little-endian word");

/* Append one record with flags (a memory record's data, shm.h).  Never
 * blocks in drop mode; never fails loudly. */
static inline void ulma_ring_write_flags(struct ulma_ring_writer *w, uint64_t time, uint32_t id,
					 uint32_t cpu, uint8_t kind, uint8_t flags)
{
	uint64_t head = w->head; /* a local copy: the record's stores cannot make it reload */
	if (ULMA_UNLIKELY(head >= w->limit)) {
		if (!ulma_ring_make_room(w)) {
			w->lost++;
			return;
		}
		head = w->head; /* a LOST marker may have gone first */
	}
	struct ulma_record *r = &w->records[head & w->mask];
	r->time = time;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* id, cpu, flags and a zero kind as one 8-byte store, then the kind's
	 * byte: two stores rather than four, and no 64-bit constant to build
	 * (a native record's id and cpu are its address, already in a register;
	 * flags are 0 but in memory records, shm.h) */
	uint64_t word = id | (uint64_t)(uint16_t)cpu << 32 | (uint64_t)flags << 56;
	memcpy((char *)r + offsetof(struct ulma_record, id), &word, sizeof word);
	r->kind = kind;
#else
	r->id = id;
	r->cpu = (uint16_t)cpu;
	r->kind = kind;
	r->flags = flags;
#endif
	w->head = ++head;
	if (ULMA_UNLIKELY((head & (ULMA_RING_BATCH - 1)) == 0))
		/* release: the batch's bytes are visible before the consumer sees head */
		atomic_store_explicit(&w->slot->head, head, memory_order_release);
}

/* Append one record (no flags). */
static inline void ulma_ring_write(struct ulma_ring_writer *w, uint64_t time, uint32_t id,
				   uint32_t cpu, uint8_t kind)
{
	ulma_ring_write_flags(w, time, id, cpu, kind, 0);
}

/* Append a record for another thread (ULMA_RECF_PROXY): its frames open
 * when tracing starts, its STOP.  Out of the hot path. */
void ulma_ring_write_proxy(struct ulma_ring_writer *w, uint64_t time, uint32_t id, uint32_t cpu, uint8_t kind);

/* Publish records written since the last batch boundary. */
static inline void ulma_ring_publish(struct ulma_ring_writer *w)
{
	atomic_store_explicit(&w->slot->head, w->head, memory_order_release);
}

/* Initialise a writer on a freshly claimed slot (head = tail = 0). */
void ulma_ring_writer_init(struct ulma_ring_writer *w, struct ulma_shm_header *hdr,
			   struct ulma_shm_slot *slot, struct ulma_record *records,
			   uint64_t capacity, bool use_tsc);

/* Emit a pending LOST marker if it fits, and publish everything written
 * (at thread exit and when tracing stops). */
void ulma_ring_writer_flush(struct ulma_ring_writer *w);

/* Consumer side: the records in [*tail, *head) are readable.  A head that
 * runs more than a ring ahead of tail (a corrupt or hostile writer) is
 * clamped; the skipped count is returned through *skipped. */
static inline void ulma_ring_readable(struct ulma_shm_slot *slot, uint64_t capacity,
				      uint64_t *tail, uint64_t *head, uint64_t *skipped)
{
	*tail = atomic_load_explicit(&slot->tail, memory_order_relaxed); /* we own tail */
	/* acquire: pairs with the producer's release; records up to head are complete */
	*head = atomic_load_explicit(&slot->head, memory_order_acquire);
	*skipped = 0;
	if (*head < *tail) {
		*head = *tail;
	} else if (*head - *tail > capacity) {
		*skipped = *head - *tail - capacity;
		*tail += *skipped;
	}
}

/* Consumer: hand records before new_tail back to the producer. */
static inline void ulma_ring_consume(struct ulma_shm_slot *slot, uint64_t new_tail)
{
	/* release: we are done reading those records before the producer reuses them */
	atomic_store_explicit(&slot->tail, new_tail, memory_order_release);
}

#endif
