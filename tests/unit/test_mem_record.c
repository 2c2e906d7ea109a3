/* test_mem_record.c - the memory records a hook writes (shm.h, version
 * 7): through libulma_rt's ulma_rt_mem_record into a real session's ring,
 * read back and decoded as the collector decodes them.  A block of fewer
 * than 1024 bytes at a 16-byte aligned address below 2^48 is one
 * ALLOC_SMALL whose address, size and domain come back exactly, for each
 * domain and for sizes at the edges of the size's two fields; every other
 * block falls back to MEM_SIZE then ALLOC: 1024 bytes or more, an address
 * aligned to 8 only, an address at 2^48 or above (kept to its low 48 bits
 * as before), a size past ULMA_MEM_SIZE_MAX (written as the maximum).  A
 * free is one FREE; a realloc is FREE then the allocation's record(s), in
 * that order, with their own times. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/session.h"
#include "runtime/rt.h"
#include "tap.h"
#include "ulma/shm.h"

#define RING_RECORDS 4096u
#define MAX_SEEN 64

/* One allocation or free as the monitor sees it. */
struct seen {
	bool alloc;
	uint64_t addr, size, time;
	unsigned domain;
	unsigned records; /* ring records it took */
};

struct readback {
	struct seen ev[MAX_SEEN];
	unsigned n;
	unsigned bad; /* records the decoder could not place */
};

static void start(struct ulma_session *s)
{
	struct ulma_session_config cfg;
	ulma_session_config_default(&cfg);
	cfg.slot_count = 4;
	cfg.ring_records = RING_RECORDS;
	cfg.defs_size = 1u << 16;
	cfg.use_tsc = false;
	cfg.memory = true;
	if (!CHECK(ulma_session_create(&cfg, s) == 0, "session"))
		exit(1);
	CHECK(ulma_rt_threads_init() == 0, "thread handlers");
	CHECK(ulma_rt_map(s->fd) == 0, "map");
	ulma_rt_set_active(true);
}

/* Stop (which publishes the ring) and decode this thread's records. */
static void stop_and_read(struct ulma_session *s, struct readback *rb)
{
	uint32_t cpu;
	uint64_t now = ulma_clock_now(false, &cpu);
	ulma_rt_stop(now, cpu);
	memset(rb, 0, sizeof(*rb));
	uint64_t cap = ulma_session_capacity(s);
	uint64_t size_word = 0;
	bool sized = false;
	for (uint32_t i = 0; i < s->hdr->slot_count; i++) {
		uint64_t head = atomic_load(&s->slots[i].head), tail = atomic_load(&s->slots[i].tail);
		const struct ulma_record *ring = ulma_session_ring(s, i);
		for (uint64_t pos = tail; pos < head; pos++) {
			const struct ulma_record *r = &ring[pos & (cap - 1)];
			uint64_t value = (uint64_t)r->id | (uint64_t)r->cpu << 32;
			struct seen *e = rb->n < MAX_SEEN ? &rb->ev[rb->n] : NULL;
			if (r->kind == ULMA_REC_STOP)
				continue;
			if (!e) {
				rb->bad++;
				continue;
			}
			if (r->kind == ULMA_REC_ALLOC_SMALL) {
				*e = (struct seen){.alloc = true, .time = r->time, .records = 1};
				ulma_mem_small_decode(value, r->flags, &e->addr, &e->size, &e->domain);
				rb->n++;
			} else if (r->kind == ULMA_REC_MEM_SIZE) {
				size_word = value;
				sized = true;
			} else if (r->kind == ULMA_REC_ALLOC && sized) {
				*e = (struct seen){.alloc = true, .addr = value, .size = size_word >> 2,
						   .domain = (unsigned)(size_word & 3), .time = r->time, .records = 2};
				sized = false;
				rb->n++;
			} else if (r->kind == ULMA_REC_FREE) {
				*e = (struct seen){.alloc = false, .addr = value, .time = r->time, .records = 1};
				rb->n++;
			} else {
				rb->bad++;
			}
		}
		ulma_ring_consume(&s->slots[i], head);
	}
}

static bool same(const struct seen *e, bool alloc, uint64_t addr, uint64_t size, unsigned domain, uint64_t time,
		 unsigned records)
{
	return e->alloc == alloc && e->addr == addr && (!alloc || (e->size == size && e->domain == domain)) &&
	       e->time == time && e->records == records;
}

/* The encoding alone: what fits and what does not. */
static void test_encode(void)
{
	uint64_t value = 0, addr, size;
	uint8_t flags = 0;
	unsigned domain;
	CHECK(ulma_mem_small_encode(0x7f0012345670, 1023, ULMA_MEM_OBJ, &value, &flags), "1023 bytes fit");
	ulma_mem_small_decode(value, flags, &addr, &size, &domain);
	CHECK(addr == 0x7f0012345670 && size == 1023 && domain == ULMA_MEM_OBJ, "and come back: %llx %llu %u",
	      (unsigned long long)addr, (unsigned long long)size, domain);
	CHECK(value < (UINT64_C(1) << 48), "the value fits the record's 48 bits");
	CHECK(!ulma_mem_small_encode(0x7f0012345670, 1024, ULMA_MEM_OBJ, &value, &flags), "1024 bytes do not");
	CHECK(!ulma_mem_small_encode(0x7f0012345678, 16, ULMA_MEM_MEM, &value, &flags), "8-aligned does not");
	CHECK(!ulma_mem_small_encode(0x7f0012345671, 16, ULMA_MEM_MEM, &value, &flags), "unaligned does not");
	CHECK(!ulma_mem_small_encode(UINT64_C(1) << 48, 16, ULMA_MEM_RAW, &value, &flags), "2^48 does not");
	CHECK(ulma_mem_small_encode(0, 0, ULMA_MEM_NATIVE, &value, &flags), "0 bytes at 0 fit");
}

/* Through the runtime: one record or two, each decoded exactly. */
static void test_written(void)
{
	struct ulma_session s;
	start(&s);
	static const uint64_t sizes[] = {0, 1, 15, 16, 17, 100, 512, 1023};
	const uint64_t base = 0x7f00aabbcc00;
	unsigned n = 0;
	for (unsigned d = 0; d < 4; d++)
		for (unsigned k = 0; k < sizeof(sizes) / sizeof(*sizes); k++, n++)
			ulma_rt_mem_record(d, NULL, 0, (void *)(uintptr_t)(base + 16 * n), sizes[k], 1000 + n);
	ulma_rt_mem_record(ULMA_MEM_OBJ, NULL, 0, (void *)(uintptr_t)0x7f0000001000, 1024, 2000);      /* large */
	ulma_rt_mem_record(ULMA_MEM_MEM, NULL, 0, (void *)(uintptr_t)0x7f0000002008, 24, 2001);        /* 8-aligned */
	ulma_rt_mem_record(ULMA_MEM_RAW, NULL, 0, (void *)(uintptr_t)0x7f0000003000, UINT64_MAX, 2002); /* huge */
	ulma_rt_mem_record(ULMA_MEM_NATIVE, NULL, 0, (void *)(uintptr_t)(UINT64_C(0x1234) << 48 | 0x5000), 32,
			   2003); /* past 2^48 */
	ulma_rt_mem_record(ULMA_MEM_OBJ, (void *)(uintptr_t)0x7f0000004000, 2004, NULL, 0, 0); /* free */
	ulma_rt_mem_record(ULMA_MEM_MEM, (void *)(uintptr_t)0x7f0000005000, 2005, (void *)(uintptr_t)0x7f0000006000, 40,
			   2006); /* realloc, small */
	ulma_rt_mem_record(ULMA_MEM_RAW, (void *)(uintptr_t)0x7f0000007000, 2007, (void *)(uintptr_t)0x7f0000008000,
			   5000, 2008); /* realloc, large */
	struct readback rb;
	stop_and_read(&s, &rb);
	CHECK(rb.bad == 0, "every record placed (%u not)", rb.bad);
	CHECK(rb.n == n + 9, "%u events read, %u written", rb.n, n + 9);
	unsigned ok = 0;
	n = 0;
	for (unsigned d = 0; d < 4; d++)
		for (unsigned k = 0; k < sizeof(sizes) / sizeof(*sizes); k++, n++)
			ok += same(&rb.ev[n], true, base + 16 * n, sizes[k], d, 1000 + n, 1);
	CHECK(ok == n, "%u of %u small blocks, each domain, in one record each", ok, n);
	const struct seen *e = &rb.ev[n];
	CHECK(same(&e[0], true, 0x7f0000001000, 1024, ULMA_MEM_OBJ, 2000, 2), "1024 bytes: MEM_SIZE and ALLOC");
	CHECK(same(&e[1], true, 0x7f0000002008, 24, ULMA_MEM_MEM, 2001, 2), "8-aligned: MEM_SIZE and ALLOC");
	CHECK(same(&e[2], true, 0x7f0000003000, ULMA_MEM_SIZE_MAX, ULMA_MEM_RAW, 2002, 2),
	      "a huge size: the maximum, in two records");
	CHECK(same(&e[3], true, 0x5000, 32, ULMA_MEM_NATIVE, 2003, 2), "past 2^48: two records, low 48 bits");
	CHECK(same(&e[4], false, 0x7f0000004000, 0, 0, 2004, 1), "a free: one FREE");
	CHECK(same(&e[5], false, 0x7f0000005000, 0, 0, 2005, 1) &&
		      same(&e[6], true, 0x7f0000006000, 40, ULMA_MEM_MEM, 2006, 1),
	      "a small realloc: FREE then ALLOC_SMALL");
	CHECK(same(&e[7], false, 0x7f0000007000, 0, 0, 2007, 1) &&
		      same(&e[8], true, 0x7f0000008000, 5000, ULMA_MEM_RAW, 2008, 2),
	      "a large realloc: FREE then MEM_SIZE and ALLOC");
	ulma_session_unmap(&s);
}

int main(void)
{
	test_encode();
	test_written();
	return tap_done();
}
