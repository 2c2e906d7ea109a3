/* test_terminal_text.c - which characters of a name may reach a terminal
 * raw (ulma_terminal_char, src/analysis/export_text.h): printable text of
 * any script may; C0, DEL, C1, U+2028, U+2029, the bidirectional controls
 * and bytes that are not UTF-8 may not, each counted as one character. */
#include <string.h>

#include "analysis/export_text.h"
#include "tap.h"

static void expect(const char *s, size_t bytes, bool printable, const char *what)
{
	bool got;
	size_t k = ulma_terminal_char((const unsigned char *)s, strlen(s), &got);
	CHECK(k == bytes && got == printable, "%s: %zu byte(s), %s (got %zu, %s)", what, bytes,
	      printable ? "printable" : "replaced", k, got ? "printable" : "replaced");
}

int main(void)
{
	expect("a", 1, true, "ASCII letter");
	expect(" ", 1, true, "space");
	expect("~", 1, true, "tilde");
	expect("\xc3\xa9", 2, true, "U+00E9");
	expect("\xc2\xa0", 2, true, "U+00A0, the first after C1");
	expect("\xe2\x82\xac", 3, true, "U+20AC");
	expect("\xe2\x80\xa7", 3, true, "U+2027, just before the separators");
	expect("\xe2\x80\xaf", 3, true, "U+202F, just after the bidi overrides");
	expect("\xf0\x9f\x98\x80", 4, true, "U+1F600");

	expect("\n", 1, false, "newline");
	expect("\x1b[31m", 1, false, "ESC");
	expect("\x7f", 1, false, "DEL");
	expect("\xc2\x85", 2, false, "U+0085 (NEL)");
	expect("\xc2\x9b", 2, false, "U+009B (CSI)");
	expect("\xc2\x9f", 2, false, "U+009F");
	expect("\xe2\x80\xa8", 3, false, "U+2028 (line separator)");
	expect("\xe2\x80\xa9", 3, false, "U+2029 (paragraph separator)");
	expect("\xe2\x80\xae", 3, false, "U+202E (right-to-left override)");
	expect("\xe2\x81\xa6", 3, false, "U+2066 (left-to-right isolate)");
	expect("\xe2\x81\xa9", 3, false, "U+2069 (pop directional isolate)");

	expect("\x9b", 1, false, "a lone C1 byte (CSI in an 8-bit terminal)");
	expect("\xc3", 1, false, "a truncated sequence");
	expect("\xc0\xaf", 1, false, "an overlong sequence, one byte at a time");
	expect("\xed\xa0\x80", 1, false, "a surrogate");
	return tap_done();
}
