/* test_session_names.c - how the definition area stores a name or file
 * (ulma_session_define): a NUL byte is kept as U+FFFD with the rest of the
 * name after it, a string of up to 65535 bytes is stored whole, and a
 * longer one is cut before a whole character and ends in the cut mark. */
#include <stdlib.h>
#include <string.h>

#include "core/session.h"
#include "tap.h"

static struct ulma_session s;

/* Define (name, file) and read it back: the stored name and file. */
static int define_and_read(const char *name, size_t name_len, const char *file, size_t file_len,
			   struct ulma_def_view *v)
{
	uint64_t used = atomic_load(&s.hdr->defs_used);
	uint32_t id = ulma_session_define(&s, ULMA_DEF_PY, name, name_len, file, file_len, 7);
	uint64_t cursor = used;
	return id != 0 && ulma_session_next_def(&s, &cursor, v) == 1 && v->id == id;
}

static int valid_utf8(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = p[i] < 0x80 ? 1 : (p[i] & 0xe0) == 0xc0 ? 2 : (p[i] & 0xf0) == 0xe0 ? 3 : 4;
		if (i + k > n)
			return 0;
		for (size_t j = 1; j < k; j++)
			if ((p[i + j] & 0xc0) != 0x80)
				return 0;
		i += k;
	}
	return 1;
}

static void test_nul_bytes(void)
{
	struct ulma_def_view v;
	static const char name[] = "nul\0after", file[] = "odd\0file.py";
	if (!CHECK(define_and_read(name, sizeof(name) - 1, file, sizeof(file) - 1, &v), "a name with a NUL"))
		return;
	CHECK(v.name_len == 11 && memcmp(v.name, "nul\xef\xbf\xbd" "after", 11) == 0,
	      "the NUL is U+FFFD and the rest of the name follows (%.*s)", (int)v.name_len, v.name);
	CHECK(v.file_len == 13 && memcmp(v.file, "odd\xef\xbf\xbd" "file.py", 13) == 0,
	      "the same in the file (%.*s)", (int)v.file_len, v.file);
}

static void test_lengths(void)
{
	size_t big = 80000;
	char *x = malloc(big);
	if (!CHECK(x != NULL, "memory"))
		return;
	memset(x, 'x', big);
	struct ulma_def_view v;

	CHECK(define_and_read(x, UINT16_MAX, "f.py", 4, &v) && v.name_len == UINT16_MAX &&
		      memcmp(v.name, x, UINT16_MAX) == 0,
	      "65535 bytes: stored whole, no mark");
	CHECK(define_and_read(x, UINT16_MAX + 1, "f.py", 4, &v) && v.name_len == UINT16_MAX &&
		      memcmp(v.name, x, UINT16_MAX - 3) == 0 && memcmp(v.name + UINT16_MAX - 3, "...", 3) == 0,
	      "65536 bytes: cut to 65532 and marked '...'");
	CHECK(define_and_read("f", 1, x, big, &v) && v.file_len == UINT16_MAX &&
		      memcmp(v.file + UINT16_MAX - 3, ULMA_DEF_CUT_MARK, 3) == 0 && v.name_len == 1,
	      "a long file is cut and marked the same way");

	/* 'a' then three-byte characters: the last whole one that fits ends at
	 * byte 65530, the next would straddle the limit */
	x[0] = 'a';
	for (size_t i = 1; i + 3 <= big; i += 3)
		memcpy(x + i, "\xe2\x82\xac", 3); /* U+20AC */
	if (CHECK(define_and_read(x, big - (big - 1) % 3, "f.py", 4, &v), "a long name of 3-byte characters")) {
		CHECK_EQ_U64(v.name_len, 65530 + 3, "cut before the character that would straddle the limit");
		CHECK(valid_utf8((const unsigned char *)v.name, v.name_len), "the cut name is valid UTF-8");
		CHECK(memcmp(v.name + v.name_len - 6, "\xe2\x82\xac...", 6) == 0, "a whole character, then '...'");
	}

	/* NUL bytes count as the three bytes they are stored as */
	memset(x, 0, big);
	if (CHECK(define_and_read(x, 30000, "f.py", 4, &v), "30000 NUL bytes")) {
		CHECK_EQ_U64(v.name_len, 21844 * 3 + 3, "as many U+FFFD as fit, then '...'");
		CHECK(memcmp(v.name + v.name_len - 3, "...", 3) == 0, "marked");
	}
	free(x);
}

int main(void)
{
	struct ulma_session_config cfg;
	ulma_session_config_default(&cfg);
	cfg.slot_count = 2;
	cfg.ring_records = 64;
	cfg.defs_size = 1 << 20;
	if (!CHECK(ulma_session_create(&cfg, &s) == 0, "session created"))
		return tap_done();
	test_nul_bytes();
	test_lengths();
	ulma_session_unmap(&s);
	return tap_done();
}
