/* test_ring.c - the shared-memory session and its SPSC record rings, single
 * threaded (src/core/session.h, src/core/ring.h): session geometry,
 * batched publication, wrap-around, drop-mode overflow and the LOST marker,
 * the lossless fallback when the monitor is gone, slot claim / close /
 * recycle and -ENOSPC, the definition area, and mapping a session by fd. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/session.h"
#include "tap.h"

static int make_session(struct ulma_session *s, uint32_t slots, uint32_t records, uint64_t defs,
			bool lossless)
{
	struct ulma_session_config cfg;
	ulma_session_config_default(&cfg);
	cfg.slot_count = slots;
	cfg.ring_records = records;
	cfg.defs_size = defs;
	cfg.lossless = lossless;
	cfg.use_tsc = false;
	return ulma_session_create(&cfg, s);
}

static uint32_t slot_state(const struct ulma_session *s, uint32_t i)
{
	return atomic_load(&s->slots[i].state);
}

static uint32_t failures(const struct ulma_session *s)
{
	return atomic_load(&s->hdr->failures);
}

/* Read everything readable from slot i into out (up to max), consume it,
 * and return the count. */
static size_t drain(struct ulma_session *s, uint32_t i, struct ulma_record *out, size_t max)
{
	uint64_t tail, head, skipped;
	uint64_t cap = ulma_session_capacity(s);
	const struct ulma_record *ring = ulma_session_ring(s, i);
	ulma_ring_readable(&s->slots[i], cap, &tail, &head, &skipped);
	size_t n = 0;
	for (uint64_t pos = tail; pos < head && n < max; pos++)
		out[n++] = ring[pos & (cap - 1)];
	ulma_ring_consume(&s->slots[i], tail + n);
	return n;
}

static void test_config_and_geometry(void)
{
	struct ulma_session_config cfg;
	ulma_session_config_default(&cfg);
	CHECK(cfg.slot_count == 1024 && cfg.defs_size == (16u << 20) && !cfg.lossless && cfg.use_tsc,
	      "default config: 1024 slots, 16 MiB defs, drop mode, TSC");
	CHECK(cfg.ring_records >= 64 && (cfg.ring_records & (cfg.ring_records - 1)) == 0,
	      "default ring size is a power of two (%u)", cfg.ring_records);

	struct ulma_session s;
	CHECK_EQ_I64(make_session(&s, 0, 64, 4096, false), -EINVAL, "zero slots rejected");
	CHECK(s.fd == -1 && s.hdr == NULL, "failed create leaves no fd or mapping");
	CHECK_EQ_I64(make_session(&s, 65537, 64, 4096, false), -EINVAL, "65537 slots rejected");
	CHECK_EQ_I64(make_session(&s, 1, 64, 4095, false), -EINVAL, "defs under 4096 bytes rejected");

	CHECK_EQ_I64(make_session(&s, 3, 100, 5000, true), 0, "create 3 slots x 100 records, lossless");
	struct ulma_shm_header *h = s.hdr;
	CHECK(h->magic == ULMA_SHM_MAGIC && h->version == ULMA_SHM_VERSION &&
		      h->header_size == sizeof(*h) && h->record_size == sizeof(struct ulma_record),
	      "header identity fields");
	CHECK_EQ_U64(h->ring_records, 128, "ring size rounded up to a power of two");
	CHECK_EQ_U64(h->slot_count, 3, "slot count");
	CHECK_EQ_U64(h->defs_size, 5000, "defs size (a multiple of 8 stays)");
	CHECK_EQ_U64(h->flags, ULMA_SHM_LOSSLESS, "flags: lossless, no TSC");
	CHECK_EQ_U64(h->total_size, s.size, "total_size is the mapping size");
	CHECK_EQ_U64(lseek(s.fd, 0, SEEK_END), s.size, "memfd size is the mapping size");
	CHECK_EQ_U64(atomic_load(&h->next_id), 1, "function ids start at 1");
	CHECK_EQ_U64(h->monitor_pid, (uint32_t)getpid(), "monitor pid");
	CHECK(h->slots_offset % 4096 == 0 && h->rings_offset % 4096 == 0 && h->defs_offset % 4096 == 0 &&
		      h->slots_offset >= sizeof(*h) &&
		      h->rings_offset >= h->slots_offset + 3 * sizeof(struct ulma_shm_slot) &&
		      h->defs_offset >= h->rings_offset + 3 * 128 * sizeof(struct ulma_record) &&
		      h->total_size >= h->defs_offset + h->defs_size,
	      "areas are page aligned, in order and do not overlap");
	CHECK((uint8_t *)s.slots == (uint8_t *)h + h->slots_offset &&
		      (uint8_t *)s.rings == (uint8_t *)h + h->rings_offset && s.defs == (uint8_t *)h + h->defs_offset,
	      "session pointers bound to the header offsets");
	int fdflags = fcntl(s.fd, F_GETFD);
	CHECK(fdflags >= 0 && (fdflags & FD_CLOEXEC), "session fd is close-on-exec");
	ulma_session_unmap(&s);
	CHECK(s.fd == -1 && s.hdr == NULL, "unmap resets the session");

	CHECK_EQ_I64(make_session(&s, 1, 1, 4097, false), 0, "create with 1 record, odd defs size");
	CHECK_EQ_U64(s.hdr->ring_records, 64, "rings have at least 64 records");
	CHECK_EQ_U64(s.hdr->defs_size, 4104, "defs size rounded up to 8");
	ulma_session_unmap(&s);
}

static void test_write_read(void)
{
	struct ulma_session s;
	struct ulma_ring_writer w;
	struct ulma_record got[256];
	if (!CHECK_EQ_I64(make_session(&s, 4, 64, 4096, false), 0, "create 4 slots x 64 records"))
		return;
	int slot = ulma_session_claim_slot(&s, 100, 101, &w);
	CHECK_EQ_I64(slot, 0, "first claim gets slot 0");
	CHECK_EQ_U64(slot_state(&s, 0), ULMA_SLOT_ACTIVE, "claimed slot is ACTIVE");
	CHECK(s.slots[0].pid == 100 && s.slots[0].tid == 101 && s.slots[0].serial == 0,
	      "slot identity: pid 100, tid 101, serial 0");
	CHECK(!w.lossless && !w.use_tsc && w.mask == 63, "writer: drop mode, monotonic clock, mask 63");

	for (uint32_t i = 0; i < 5; i++)
		ulma_ring_write(&w, 1000 + i, 10 + i, i, (i & 1) ? ULMA_REC_EXIT : ULMA_REC_ENTER);
	uint64_t tail, head, skipped;
	ulma_ring_readable(&s.slots[0], 64, &tail, &head, &skipped);
	CHECK(tail == 0 && head == 0 && skipped == 0, "a partial batch is not visible before publish");
	ulma_ring_publish(&w);
	ulma_ring_readable(&s.slots[0], 64, &tail, &head, &skipped);
	CHECK(tail == 0 && head == 5 && skipped == 0, "publish makes 5 records readable");
	size_t n = drain(&s, 0, got, 256);
	CHECK_EQ_U64(n, 5, "5 records read");
	int bad = 0;
	for (uint32_t i = 0; i < n; i++)
		if (got[i].time != 1000 + i || got[i].id != 10 + i || got[i].cpu != i ||
		    got[i].kind != ((i & 1) ? ULMA_REC_EXIT : ULMA_REC_ENTER) || got[i].flags != 0)
			bad++;
	CHECK_EQ_U64(bad, 0, "records read back with their time, id, cpu and kind, in order");
	CHECK_EQ_U64(atomic_load(&s.slots[0].tail), 5, "consume stores the new tail");

	/* a full batch publishes itself at the 32-record boundary */
	for (uint32_t i = 5; i < 45; i++)
		ulma_ring_write(&w, 1000 + i, 10 + i, 0, ULMA_REC_ENTER);
	ulma_ring_readable(&s.slots[0], 64, &tail, &head, &skipped);
	CHECK(tail == 5 && head == 32, "batch boundary publishes head 32 without a flush (head %llu)",
	      (unsigned long long)head);
	ulma_ring_publish(&w);
	n = drain(&s, 0, got, 256);
	CHECK_EQ_U64(n, 40, "40 more records after publish");
	bad = 0;
	for (uint32_t i = 0; i < n; i++)
		if (got[i].time != 1005 + i || got[i].id != 15 + i)
			bad++;
	CHECK_EQ_U64(bad, 0, "second batch in order");

	/* many laps around the 64-record ring, read in varying amounts */
	uint32_t next_w = 0, next_r = 0;
	bad = 0;
	for (int round = 0; round < 50; round++) {
		uint32_t k = 1 + (uint32_t)(round * 7) % 60;
		for (uint32_t i = 0; i < k; i++, next_w++)
			ulma_ring_write(&w, 5000 + next_w, next_w, 0, ULMA_REC_ENTER);
		ulma_ring_publish(&w);
		n = drain(&s, 0, got, 256);
		if (n != k)
			bad++;
		for (size_t i = 0; i < n; i++, next_r++)
			if (got[i].id != next_r || got[i].time != 5000 + next_r || got[i].kind != ULMA_REC_ENTER)
				bad++;
	}
	CHECK(bad == 0 && next_r == next_w && w.lost == 0,
	      "%u records over %u ring laps arrive in order, none lost", next_w, next_w / 64);

	/* a hostile head more than a ring ahead of tail is clamped */
	uint64_t t0 = atomic_load(&s.slots[0].tail);
	atomic_store(&s.slots[0].head, t0 + 64 + 36);
	ulma_ring_readable(&s.slots[0], 64, &tail, &head, &skipped);
	CHECK(skipped == 36 && tail == t0 + 36 && head == t0 + 100,
	      "head 100 ahead of tail: 36 skipped, 64 readable");
	atomic_store(&s.slots[0].head, t0 - 3);
	ulma_ring_readable(&s.slots[0], 64, &tail, &head, &skipped);
	CHECK(skipped == 0 && tail == t0 && head == t0, "head behind tail reads as empty");
	ulma_session_unmap(&s);
}

/* A record written over an older one (a ring's earlier lap, a PROXY
 * record's flags) is all its own: the id/cpu word clears the kind and
 * flags, and the kind's byte goes in after it.  A CPU wider than 16 bits
 * (the field's width) does not spill into the kind. */
static void test_write_over_old_records(void)
{
	struct ulma_session s;
	struct ulma_ring_writer w;
	struct ulma_record got[8];
	if (!CHECK_EQ_I64(make_session(&s, 1, 64, 4096, false), 0, "create 1 slot x 64 records"))
		return;
	if (!CHECK_EQ_I64(ulma_session_claim_slot(&s, 100, 101, &w), 0, "claim"))
		return;
	memset(ulma_session_ring(&s, 0), 0xff, 64 * sizeof(struct ulma_record)); /* every byte of a lap ago set */
	ulma_ring_write(&w, 7, 0xffffffffu, 0xffff, ULMA_REC_NATIVE_ENTER);
	ulma_ring_write(&w, 8, 0, 0x12345, ULMA_REC_EXIT);
	ulma_ring_write(&w, 9, 42, 0, ULMA_REC_ENTER);
	ulma_ring_publish(&w);
	size_t n = drain(&s, 0, got, 8);
	CHECK(n == 3 && got[0].time == 7 && got[0].id == 0xffffffffu && got[0].cpu == 0xffff &&
		      got[0].kind == ULMA_REC_NATIVE_ENTER && got[0].flags == 0,
	      "all-ones id and cpu over all-ones bytes: kind and flags its own");
	CHECK(n == 3 && got[1].cpu == 0x2345 && got[1].kind == ULMA_REC_EXIT && got[1].flags == 0,
	      "a CPU of 17 bits keeps its low 16, and the kind is intact");
	CHECK(n == 3 && got[2].id == 42 && got[2].cpu == 0 && got[2].kind == ULMA_REC_ENTER && got[2].flags == 0,
	      "zero fields over all-ones bytes read zero");
	ulma_session_unmap(&s);
}

static void test_overflow_drop(void)
{
	struct ulma_session s;
	struct ulma_ring_writer w;
	struct ulma_record got[256];
	if (!CHECK_EQ_I64(make_session(&s, 2, 64, 4096, false), 0, "create drop-mode session"))
		return;
	CHECK_EQ_I64(ulma_session_claim_slot(&s, 1, 1, &w), 0, "claim slot 0");

	uint32_t id = 1;
	for (; id <= 64; id++)
		ulma_ring_write(&w, id, id, 0, ULMA_REC_ENTER);
	for (; id <= 74; id++) /* ring full: these 10 are dropped */
		ulma_ring_write(&w, id, id, 0, ULMA_REC_ENTER);
	CHECK_EQ_U64(w.lost, 10, "writer counts 10 dropped records");
	uint64_t tail, head, skipped;
	ulma_ring_readable(&s.slots[0], 64, &tail, &head, &skipped);
	CHECK(tail == 0 && head == 64, "full ring: 64 published (head %llu)", (unsigned long long)head);
	size_t n = drain(&s, 0, got, 256);
	int bad = 0;
	for (uint32_t i = 0; i < n; i++)
		if (got[i].id != i + 1 || got[i].kind != ULMA_REC_ENTER)
			bad++;
	CHECK(n == 64 && bad == 0, "the first 64 records are intact, no marker among them");

	ulma_ring_write(&w, 75, 75, 0, ULMA_REC_EXIT);
	ulma_ring_publish(&w);
	n = drain(&s, 0, got, 256);
	CHECK_EQ_U64(n, 2, "after room is made: one marker and the record");
	CHECK(n >= 1 && got[0].kind == ULMA_REC_LOST && got[0].id == 10,
	      "LOST marker with id == 10 comes first (kind %u id %u)", got[0].kind, got[0].id);
	CHECK(n >= 2 && got[1].kind == ULMA_REC_EXIT && got[1].id == 75 && got[1].time == 75,
	      "then the next record (id 75)");
	CHECK_EQ_U64(w.lost, 0, "lost count reset after the marker");

	/* the marker needs room for two: consuming one record is not enough */
	for (id = 100; id < 164; id++)
		ulma_ring_write(&w, id, id, 0, ULMA_REC_ENTER);
	for (int i = 0; i < 3; i++)
		ulma_ring_write(&w, 999, 999, 0, ULMA_REC_ENTER);
	ulma_ring_readable(&s.slots[0], 64, &tail, &head, &skipped);
	ulma_ring_consume(&s.slots[0], tail + 1);
	ulma_ring_write(&w, 999, 999, 0, ULMA_REC_ENTER); /* one slot free, marker + record need two */
	CHECK_EQ_U64(w.lost, 4, "with one free slot the record is dropped too (lost 4)");
	n = drain(&s, 0, got, 256);
	CHECK_EQ_U64(n, 63, "63 records left to read");
	ulma_ring_write(&w, 200, 200, 0, ULMA_REC_ENTER);
	ulma_ring_publish(&w);
	n = drain(&s, 0, got, 256);
	CHECK(n == 2 && got[0].kind == ULMA_REC_LOST && got[0].id == 4 && got[1].id == 200,
	      "LOST(4) then record 200");

	/* a pending loss is reported by close when it fits */
	for (id = 300; id < 364; id++)
		ulma_ring_write(&w, id, id, 0, ULMA_REC_ENTER);
	for (int i = 0; i < 5; i++)
		ulma_ring_write(&w, 999, 999, 0, ULMA_REC_ENTER);
	n = drain(&s, 0, got, 256);
	CHECK_EQ_U64(n, 64, "64 read before close");
	ulma_session_close_slot(&w);
	CHECK_EQ_U64(slot_state(&s, 0), ULMA_SLOT_CLOSED, "closed slot is CLOSED");
	n = drain(&s, 0, got, 256);
	CHECK(n == 1 && got[0].kind == ULMA_REC_LOST && got[0].id == 5, "close flushes a LOST(5) marker");
	CHECK_EQ_U64(w.lost, 0, "nothing left pending after close");

	/* a loss too large for one marker is split, and the total is exact */
	CHECK_EQ_I64(ulma_session_claim_slot(&s, 1, 2, &w), 1, "claim slot 1");
	w.lost = (uint64_t)UINT32_MAX + 5;
	ulma_ring_write(&w, 1, 1, 0, ULMA_REC_ENTER);
	ulma_ring_write(&w, 2, 2, 0, ULMA_REC_ENTER);
	ulma_ring_publish(&w);
	n = drain(&s, 1, got, 256);
	uint64_t lost_sum = 0, data = 0;
	for (size_t i = 0; i < n; i++) {
		if (got[i].kind == ULMA_REC_LOST)
			lost_sum += got[i].id;
		else
			data++;
	}
	CHECK(lost_sum == (uint64_t)UINT32_MAX + 5 && data == 2 && got[0].kind == ULMA_REC_LOST &&
		      got[0].id == UINT32_MAX,
	      "a 2^32+4 loss is reported in saturated markers summing to it (sum %llu, %llu records)",
	      (unsigned long long)lost_sum, (unsigned long long)data);
	CHECK_EQ_U64(failures(&s), 0, "drop mode sets no failure bits");
	ulma_session_unmap(&s);
}

static void test_lossless_monitor_gone(void)
{
	struct ulma_session s;
	struct ulma_ring_writer w;
	struct ulma_record got[128];
	if (!CHECK_EQ_I64(make_session(&s, 1, 64, 4096, true), 0, "create lossless session"))
		return;
	CHECK_EQ_I64(ulma_session_claim_slot(&s, 1, 1, &w), 0, "claim");
	CHECK(w.lossless, "writer is lossless");
	for (uint32_t i = 0; i < 64; i++)
		ulma_ring_write(&w, i, i, 0, ULMA_REC_ENTER);
	CHECK_EQ_U64(failures(&s), 0, "no failure while there is room");
	/* heartbeat_ns is 0: no monitor ever beat, so the writer must not wait forever */
	ulma_ring_write(&w, 64, 64, 0, ULMA_REC_ENTER);
	CHECK(failures(&s) & ULMA_FAIL_MONITOR_GONE, "full ring with a dead monitor sets MONITOR_GONE");
	CHECK(!w.lossless && w.lost == 1, "writer falls back to dropping (lost %llu)", (unsigned long long)w.lost);
	CHECK_EQ_U64(drain(&s, 0, got, 128), 64, "the 64 records before the drop are readable");
	ulma_ring_write(&w, 65, 65, 0, ULMA_REC_ENTER);
	ulma_ring_publish(&w);
	size_t n = drain(&s, 0, got, 128);
	CHECK(n == 2 && got[0].kind == ULMA_REC_LOST && got[0].id == 1 && got[1].id == 65,
	      "then LOST(1) and the next record");
	ulma_session_unmap(&s);
}

static void test_slots(void)
{
	struct ulma_session s;
	struct ulma_ring_writer w0, w1, w2;
	if (!CHECK_EQ_I64(make_session(&s, 2, 64, 4096, false), 0, "create 2-slot session"))
		return;
	CHECK_EQ_U64(slot_state(&s, 0), ULMA_SLOT_FREE, "slot 0 starts FREE");
	CHECK_EQ_U64(slot_state(&s, 1), ULMA_SLOT_FREE, "slot 1 starts FREE");
	CHECK_EQ_I64(ulma_session_claim_slot(&s, 7, 70, &w0), 0, "claim -> slot 0");
	CHECK_EQ_I64(ulma_session_claim_slot(&s, 7, 71, &w1), 1, "claim -> slot 1");
	CHECK(s.slots[1].tid == 71 && s.slots[1].serial == 1, "slot 1: tid 71, serial 1");
	CHECK_EQ_U64(failures(&s), 0, "no failure bits yet");
	memset(&w2, 0, sizeof(w2));
	CHECK_EQ_I64(ulma_session_claim_slot(&s, 7, 72, &w2), -ENOSPC, "third claim: -ENOSPC");
	CHECK(failures(&s) & ULMA_FAIL_NO_SLOT, "NO_SLOT failure bit set");
	CHECK_EQ_U64(atomic_load(&s.hdr->next_serial), 2, "a failed claim takes no serial");

	for (uint32_t i = 0; i < 3; i++)
		ulma_ring_write(&w0, i, i + 1, 0, ULMA_REC_ENTER);
	ulma_session_close_slot(&w0);
	CHECK_EQ_U64(slot_state(&s, 0), ULMA_SLOT_CLOSED, "close -> CLOSED");
	CHECK_EQ_U64(atomic_load(&s.slots[0].head), 3, "close publishes the partial batch");
	CHECK_EQ_I64(ulma_session_claim_slot(&s, 7, 72, &w2), -ENOSPC, "a CLOSED slot is not claimable");

	struct ulma_record got[8];
	CHECK_EQ_U64(drain(&s, 0, got, 8), 3, "drain the closed slot");
	ulma_session_recycle_slot(&s, 0);
	CHECK_EQ_U64(slot_state(&s, 0), ULMA_SLOT_FREE, "recycle -> FREE");
	CHECK(atomic_load(&s.slots[0].head) == 0 && atomic_load(&s.slots[0].tail) == 0 &&
		      s.slots[0].pid == 0 && s.slots[0].tid == 0,
	      "recycle resets positions and identity");
	const struct ulma_record *ring = ulma_session_ring(&s, 0);
	int nonzero = 0;
	for (uint32_t i = 0; i < 64; i++)
		if (ring[i].time || ring[i].id || ring[i].kind)
			nonzero++;
	CHECK_EQ_U64(nonzero, 0, "recycle zeroes the ring");
	CHECK_EQ_U64(slot_state(&s, 1), ULMA_SLOT_ACTIVE, "slot 1 untouched by recycling slot 0");

	CHECK_EQ_I64(ulma_session_claim_slot(&s, 8, 80, &w2), 0, "recycled slot is claimed again");
	CHECK(s.slots[0].pid == 8 && s.slots[0].tid == 80 && s.slots[0].serial == 2,
	      "new owner: pid 8, tid 80, serial 2 (serial %llu)", (unsigned long long)s.slots[0].serial);
	ulma_ring_write(&w2, 1, 42, 0, ULMA_REC_ENTER);
	ulma_ring_publish(&w2);
	CHECK(drain(&s, 0, got, 8) == 1 && got[0].id == 42, "new owner's first record at position 0");
	ulma_session_unmap(&s);
}

static void test_defs(void)
{
	struct ulma_session s;
	struct ulma_def_view d;
	uint64_t cursor = 0;
	if (!CHECK_EQ_I64(make_session(&s, 1, 64, 1u << 20, false), 0, "create session with 1 MiB defs"))
		return;
	CHECK_EQ_I64(ulma_session_next_def(&s, &cursor, &d), 0, "empty area: no definition");
	uint32_t a = ulma_session_define(&s, ULMA_DEF_PY, "main", 4, "app.py", 6, 12);
	uint32_t b = ulma_session_define(&s, ULMA_DEF_C, "len", 3, "", 0, 0);
	CHECK(a == 1 && b == 2, "ids 1 and 2 (got %u, %u)", a, b);

	CHECK_EQ_I64(ulma_session_next_def(&s, &cursor, &d), 1, "read first definition");
	CHECK(d.id == 1 && d.kind == ULMA_DEF_PY && d.line == 12 && d.name_len == 4 &&
		      memcmp(d.name, "main", 4) == 0 && d.file_len == 6 && memcmp(d.file, "app.py", 6) == 0,
	      "first: id 1, PY, main, app.py:12");
	CHECK_EQ_U64(cursor, 40, "cursor advanced by the 8-aligned entry size (24+4+6 -> 40)");
	CHECK_EQ_I64(ulma_session_next_def(&s, &cursor, &d), 1, "read second definition");
	CHECK(d.id == 2 && d.kind == ULMA_DEF_C && d.line == 0 && d.name_len == 3 &&
		      memcmp(d.name, "len", 3) == 0 && d.file_len == 0,
	      "second: id 2, C, len, no file");
	uint64_t before = cursor;
	CHECK_EQ_I64(ulma_session_next_def(&s, &cursor, &d), 0, "no third definition yet");
	CHECK_EQ_U64(cursor, before, "cursor unchanged when nothing is there");

	/* names and files longer than 65535 bytes are cut */
	size_t big = 70000;
	char *name = malloc(big), *file = malloc(big);
	if (!CHECK(name && file, "alloc"))
		return;
	memset(name, 'n', big);
	memset(file, 'f', big);
	name[65531] = 'N'; /* last byte kept: then the 3-byte cut mark */
	name[65532] = 'X'; /* first byte cut */
	uint32_t c = ulma_session_define(&s, ULMA_DEF_PY, name, big, file, big, 7);
	CHECK_EQ_U64(c, 3, "long definition gets id 3");
	CHECK_EQ_I64(ulma_session_next_def(&s, &cursor, &d), 1, "read long definition");
	int name_ok = d.name_len == 65535 && d.name[65531] == 'N' && d.name[0] == 'n' &&
		      memcmp(d.name + 65532, "...", 3) == 0;
	int file_ok = d.file_len == 65535 && d.file == d.name + 65535 && memcmp(d.file + 65532, "...", 3) == 0;
	for (size_t i = 0; file_ok && i < 65532; i++)
		if (d.file[i] != 'f')
			file_ok = 0;
	CHECK(name_ok, "name cut to 65535 bytes, the last 3 the cut mark (len %u)", d.name_len);
	CHECK(file_ok, "file cut the same way and stored after the name (len %u)", d.file_len);
	CHECK_EQ_U64(cursor - before, (20 + 65535 + 65535 + 7) & ~7u, "long entry size");
	free(name);
	free(file);

	/* a corrupt entry is -EPROTO, cursor unchanged */
	struct ulma_shm_def *raw = (struct ulma_shm_def *)(s.defs + cursor);
	raw->id = 9;
	atomic_store(&raw->size, 13);
	before = cursor;
	CHECK_EQ_I64(ulma_session_next_def(&s, &cursor, &d), -EPROTO, "size not a multiple of 8: -EPROTO");
	atomic_store(&raw->size, 8);
	CHECK_EQ_I64(ulma_session_next_def(&s, &cursor, &d), -EPROTO, "size below the header: -EPROTO");
	atomic_store(&raw->size, 24);
	raw->name_len = 100;
	CHECK_EQ_I64(ulma_session_next_def(&s, &cursor, &d), -EPROTO, "strings past the entry: -EPROTO");
	raw->name_len = 0;
	raw->id = 0;
	CHECK_EQ_I64(ulma_session_next_def(&s, &cursor, &d), -EPROTO, "id 0: -EPROTO");
	atomic_store(&raw->size, (uint32_t)((1u << 20) - cursor + 8));
	raw->id = 9;
	CHECK_EQ_I64(ulma_session_next_def(&s, &cursor, &d), -EPROTO, "entry past the area: -EPROTO");
	CHECK_EQ_U64(cursor, before, "cursor unchanged on -EPROTO");
	ulma_session_unmap(&s);

	/* fill a 4096-byte area with 48-byte entries: 85 fit */
	if (!CHECK_EQ_I64(make_session(&s, 1, 64, 4096, false), 0, "create session with 4 KiB defs"))
		return;
	uint32_t ok = 0, first_fail = 0, bad_ids = 0, full_before = 0, full_at_fail = 0;
	for (uint32_t i = 0; i < 200; i++) {
		char nm[21];
		snprintf(nm, sizeof(nm), "function_%011u", i);
		bool was_full = (failures(&s) & ULMA_FAIL_DEFS_FULL) != 0;
		uint32_t id = ulma_session_define(&s, ULMA_DEF_PY, nm, 20, "x.py", 4, i);
		if (id == 0) {
			if (!first_fail) {
				first_fail = i + 1;
				full_at_fail = (failures(&s) & ULMA_FAIL_DEFS_FULL) != 0;
			}
		} else {
			ok++;
			if (id != i + 1 || first_fail)
				bad_ids++;
			if (was_full)
				full_before++;
		}
	}
	CHECK(ok == 85 && first_fail == 86, "85 definitions of 48 bytes fit in 4096 (%u ok, first failure #%u)",
	      ok, first_fail);
	CHECK(bad_ids == 0, "successful definitions got ids 1..85, none after the first failure");
	CHECK(full_before == 0 && full_at_fail, "DEFS_FULL is set by the first failure, not before");
	CHECK_EQ_U64(failures(&s), ULMA_FAIL_DEFS_FULL, "only DEFS_FULL set");
	cursor = 0;
	uint32_t seen = 0, wrong = 0;
	int r;
	while ((r = ulma_session_next_def(&s, &cursor, &d)) == 1) {
		char nm[21];
		snprintf(nm, sizeof(nm), "function_%011u", seen);
		if (d.id != seen + 1 || d.line != seen || d.name_len != 20 || memcmp(d.name, nm, 20) != 0)
			wrong++;
		seen++;
	}
	CHECK(r == 0 && seen == 85 && wrong == 0, "walk reads back the 85 definitions (%u, %u wrong, r %d)",
	      seen, wrong, r);
	ulma_session_unmap(&s);
}

static int memfd_with(const void *data, size_t len, size_t size)
{
	int fd = memfd_create("ulma-test", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) != 0 || (len && pwrite(fd, data, len, 0) != (ssize_t)len)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void test_map_fd(void)
{
	struct ulma_session s, v;
	if (!CHECK_EQ_I64(make_session(&s, 2, 64, 8192, false), 0, "create session to map"))
		return;
	CHECK_EQ_I64(ulma_session_map_fd(s.fd, &v), 0, "map_fd on the created fd");
	CHECK(v.hdr && v.hdr != s.hdr && v.size == s.size && v.fd == -1, "a second view, same size, fd not owned");
	CHECK(v.hdr && v.hdr->slot_count == 2 && v.hdr->ring_records == 64 && v.hdr->defs_size == 8192,
	      "view sees the geometry");
	/* both views share memory: a program writes through v, the monitor reads s */
	struct ulma_ring_writer w;
	CHECK_EQ_I64(ulma_session_claim_slot(&v, 5, 6, &w), 0, "claim through the mapped view");
	ulma_ring_write(&w, 77, 88, 1, ULMA_REC_ENTER);
	ulma_ring_publish(&w);
	uint32_t id = ulma_session_define(&v, ULMA_DEF_PY, "f", 1, "g", 1, 3);
	struct ulma_record got[4];
	CHECK(drain(&s, 0, got, 4) == 1 && got[0].time == 77 && got[0].id == 88,
	      "record written through one view is read through the other");
	uint64_t cursor = 0;
	struct ulma_def_view d;
	CHECK(id == 1 && ulma_session_next_def(&s, &cursor, &d) == 1 && d.id == 1 && d.name[0] == 'f',
	      "definition written through one view is read through the other");
	ulma_session_unmap(&v);
	CHECK(fcntl(s.fd, F_GETFD) >= 0, "unmapping the view leaves the creator's fd open");

	/* garbage of a plausible size */
	size_t size = s.size;
	uint8_t *junk = malloc(size);
	if (!CHECK(junk != NULL, "alloc"))
		return;
	memset(junk, 0x5A, size);
	int fd = memfd_with(junk, size, size);
	CHECK_EQ_I64(ulma_session_map_fd(fd, &v), -EPROTO, "garbage memfd: -EPROTO");
	CHECK(v.hdr == NULL && v.fd == -1, "nothing mapped on failure");
	close(fd);
	fd = memfd_with(NULL, 0, 0);
	CHECK_EQ_I64(ulma_session_map_fd(fd, &v), -EPROTO, "empty memfd: -EPROTO");
	close(fd);
	fd = memfd_with(junk, 100, 100);
	CHECK_EQ_I64(ulma_session_map_fd(fd, &v), -EPROTO, "memfd smaller than a header: -EPROTO");
	close(fd);

	/* a faithful copy of the header maps; each broken field does not */
	struct ulma_shm_header good, bad;
	memcpy(&good, s.hdr, sizeof(good));
	fd = memfd_with(&good, sizeof(good), size);
	CHECK_EQ_I64(ulma_session_map_fd(fd, &v), 0, "copy of a valid header maps");
	ulma_session_unmap(&v);
	close(fd);
	static const char *const broken[] = {
		"wrong magic",
		"file size differs from total_size",
		"ring_records not a power of two",
		"slot_count changed (layout mismatch)",
		"defs_offset moved",
		"wrong version",
		"wrong record size",
		"ring_records below 64",
	};
	for (int i = 0; i < (int)(sizeof(broken) / sizeof(broken[0])); i++) {
		size_t fsize = size;
		memcpy(&bad, &good, sizeof(bad));
		switch (i) {
		case 0: bad.magic ^= 1; break;
		case 1: fsize = size + 4096; break;
		case 2: bad.ring_records = 96; break;
		case 3: bad.slot_count = 100; break;
		case 4: bad.defs_offset += 4096; break;
		case 5: bad.version = ULMA_SHM_VERSION + 1; break;
		case 6: bad.record_size = 32; break;
		case 7: bad.ring_records = 32; break;
		}
		fd = memfd_with(&bad, sizeof(bad), fsize);
		CHECK_EQ_I64(ulma_session_map_fd(fd, &v), -EPROTO, broken[i]);
		close(fd);
	}
	free(junk);

	int p[2];
	if (pipe(p) == 0) {
		int r = ulma_session_map_fd(p[0], &v);
		CHECK(r < 0 && r != -EPROTO, "a pipe gives an errno, not a mapping (%d)", r);
		close(p[0]);
		close(p[1]);
	}
	ulma_session_unmap(&s);
}

int main(void)
{
	test_config_and_geometry();
	test_write_read();
	test_write_over_old_records();
	test_overflow_drop();
	test_lossless_monitor_gone();
	test_slots();
	test_defs();
	test_map_fd();
	return tap_done();
}
