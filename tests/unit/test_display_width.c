/* test_display_width.c - terminal columns of characters and of the
 * summary's name cells (src/analysis/display_width.h, summary_parts.h):
 * known widths at the edges of the wide ranges, combining marks, and names
 * of CJK characters and emoji padded and cut by columns, not bytes or
 * code points, in the summary and in the live view's cells. */
#include <stdlib.h>
#include <string.h>

#include "analysis/display_width.h"
#include "analysis/summary_parts.h"
#include "tap.h"

static void width(uint32_t cp, unsigned want, const char *what)
{
	CHECK(ulma_display_width(cp) == want, "%s (U+%04X): %u columns (got %u)", what, cp, want,
	      ulma_display_width(cp));
}

/* What ulma_summary_put_printable writes for s within max columns, and
 * the columns it says it wrote. */
static void printable(const char *s, size_t max, const char *want, size_t want_cols, const char *what)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	size_t cols = ulma_summary_put_printable(f, s, max);
	fclose(f);
	CHECK(strcmp(buf, want) == 0 && cols == want_cols, "%s: \"%s\" in %zu columns (got \"%s\", %zu)", what, want,
	      want_cols, buf, cols);
	free(buf);
}

int main(void)
{
	width('a', 1, "ASCII");
	width(0xE9, 1, "e acute");
	width(0x301, 0, "combining acute accent");
	width(0x200D, 0, "zero width joiner");
	width(0xFE0F, 0, "variation selector 16");
	width(0x10FF, 1, "just before Hangul jamo");
	width(0x1100, 2, "Hangul choseong kiyeok");
	width(0x1160, 0, "Hangul jungseong filler");
	width(0x3000, 2, "ideographic space");
	width(0x303F, 1, "ideographic half fill space");
	width(0x4E2D, 2, "CJK ideograph (zhong)");
	width(0x6570, 2, "CJK ideograph (shu)");
	width(0xAC00, 2, "Hangul syllable ga");
	width(0xD7A4, 1, "just after the Hangul syllables");
	width(0xFF21, 2, "fullwidth A");
	width(0xFF61, 1, "halfwidth ideographic full stop");
	width(0x1F600, 2, "grinning face");
	width(0x1F64F, 2, "folded hands, last of the block");
	width(0x1F650, 1, "ornamental dingbat after it");
	width(0x2615, 2, "hot beverage");
	width(0x2616, 1, "white shogi piece");
	width(0x20000, 2, "CJK extension B");
	width(0x3FFFD, 2, "last of plane 3");
	width(0x40000, 1, "plane 4");

	printable("abc", 10, "abc", 3, "ASCII fits");
	printable("\xe6\x95\xb0\xe6\x8d\xae", 10, "\xe6\x95\xb0\xe6\x8d\xae", 4, "two CJK characters take 4 columns");
	printable("\xf0\x9f\x98\x80x", 10, "\xf0\x9f\x98\x80x", 3, "an emoji and a letter take 3");
	printable("e\xcc\x81", 10, "e\xcc\x81", 1, "a letter and its combining accent take 1");
	printable("\xe6\x95\xb0\xe6\x8d\xae\xe5\xa4\x84\xe7\x90\x86", 7, "\xe6\x95\xb0\xe6\x8d\xae...", 7,
		  "four CJK characters cut to 7 columns: two of them and the mark");
	printable("\xe6\x95\xb0\xe6\x8d\xae\xe5\xa4\x84\xe7\x90\x86\xe5\x99\xa8", 8, "\xe6\x95\xb0\xe6\x8d\xae...", 7,
		  "five in 8 columns: the third would straddle the cut, 7 written");
	printable("\xe6\x95\xb0\xe6\x8d\xae\xe5\xa4\x84\xe7\x90\x86", 8, "\xe6\x95\xb0\xe6\x8d\xae\xe5\xa4\x84\xe7\x90\x86", 8,
		  "four in 8 columns fit");
	printable("a\nb", 10, "a?b", 3, "a control shows as one '?'");

	/* the live view's cells: "a", two CJK characters, "e" and a combining accent */
	const char *cells = "a\xe6\x95\xb0\xe6\x8d\xae" "e\xcc\x81";
	size_t n = strlen(cells);
	CHECK_EQ_U64(ulma_display_width_of(cells, n), 6, "a(1) + 2 CJK(4) + e(1) + accent(0) columns");
	CHECK_EQ_U64(ulma_display_head(cells, n, 3), 4, "3 columns: a and one CJK character, 4 bytes");
	CHECK_EQ_U64(ulma_display_head(cells, n, 2), 1, "2 columns: the CJK character would straddle, 'a' only");
	CHECK_EQ_U64(ulma_display_head(cells, n, 6), n, "6 columns: all, the accent with its letter");
	CHECK_EQ_U64(ulma_display_tail(cells, n, 1), 7, "the last column: e and its accent");
	CHECK_EQ_U64(ulma_display_tail(cells, n, 2), 7, "2 columns: not half a CJK character");
	CHECK_EQ_U64(ulma_display_tail(cells, n, 3), 4, "3: the second CJK character on");
	CHECK_EQ_U64(ulma_display_width_of("\x1b[\x80", 3), 2, "ESC and '[' one each, a stray continuation byte none");
	return tap_done();
}
