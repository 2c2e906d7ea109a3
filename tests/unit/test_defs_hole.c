/* test_defs_hole.c - a definition whose writer died between reserving and
 * completing it must not hide the definitions after it
 * (ulma_session_next_def_after_hole), and a late completion stays readable. */
#include <string.h>

#include "core/session.h"
#include "tap.h"

int main(void)
{
	struct ulma_session_config cfg;
	struct ulma_session s;
	struct ulma_def_view v;
	uint64_t cursor = 0, next = 0;

	ulma_session_config_default(&cfg);
	cfg.slot_count = 2;
	cfg.ring_records = 64;
	cfg.defs_size = 4096;
	CHECK(ulma_session_create(&cfg, &s) == 0, "session created");

	uint32_t a = ulma_session_define(&s, ULMA_DEF_PY, "a", 1, "f.py", 4, 1);
	/* a writer reserves 40 bytes and dies before completing them */
	uint64_t hole = atomic_fetch_add(&s.hdr->defs_used, 40);
	uint32_t b = ulma_session_define(&s, ULMA_DEF_PY, "b", 1, "f.py", 4, 2);
	CHECK(a != 0 && b != 0, "two definitions around the hole");

	CHECK(ulma_session_next_def(&s, &cursor, &v) == 1 && v.id == a, "the first reads");
	CHECK_EQ_U64(cursor, hole, "reading stops at the hole");
	CHECK(ulma_session_next_def(&s, &cursor, &v) == 0, "the hole is not complete");
	CHECK(ulma_session_next_def_after_hole(&s, hole, &next) == 1, "the entry after the hole is found");
	CHECK_EQ_U64(next, hole + 40, "right after the reserved bytes");
	CHECK(ulma_session_next_def(&s, &next, &v) == 1 && v.id == b && memcmp(v.name, "b", 1) == 0,
	      "and it reads as b");
	CHECK(ulma_session_next_def_after_hole(&s, next, &next) == 0, "nothing after the last entry");

	/* the slow writer completes after all: the hole reads then */
	struct ulma_shm_def *d = (struct ulma_shm_def *)(s.defs + hole);
	d->magic = ULMA_DEF_MAGIC;
	d->id = 99;
	d->kind = ULMA_DEF_PY;
	d->name_len = 1;
	d->file_len = 1;
	memcpy(d + 1, "cg", 2);
	atomic_store(&d->size, 40);
	cursor = hole;
	CHECK(ulma_session_next_def(&s, &cursor, &v) == 1 && v.id == 99, "a late completion reads at the hole");
	ulma_session_unmap(&s);
	return tap_done();
}
