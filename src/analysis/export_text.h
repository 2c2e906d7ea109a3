/* export_text.h - string escaping for the export formats.
 *
 * Function names and paths come from the traced program and may hold any
 * character, or (in a damaged trace that still passes its checksums) bytes
 * that are not UTF-8.  Every exporter passes them through here: invalid
 * UTF-8 becomes U+FFFD, and each format's special characters are escaped.
 * A growable buffer collects the result; its allocation errors are sticky
 * and reported once by the caller.
 */
#ifndef ULMA_EXPORT_TEXT_H
#define ULMA_EXPORT_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct ulma_sbuf {
	char *p;     /* NUL-terminated when not NULL */
	size_t len;
	size_t cap;
	bool nomem;  /* an append failed */
};

void ulma_sbuf_free(struct ulma_sbuf *b);
void ulma_sbuf_put(struct ulma_sbuf *b, const char *s, size_t n);

/* Room for n more bytes (and the NUL), for a writer that fills it itself
 * and then sets len and the NUL: where the next byte goes, or NULL (and
 * nomem set) if it cannot be had. */
char *ulma_sbuf_room(struct ulma_sbuf *b, size_t n);
void ulma_sbuf_puts(struct ulma_sbuf *b, const char *s);
void ulma_sbuf_printf(struct ulma_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "00" to "99": two digits a division. */
static const char ulma_decimal_pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
					    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
					    "8081828384858687888990919293949596979899";

/* Decimal digits of v: its bit length times log10 2 (~ 1233 / 4096) is
 * the count or one more, which a power of ten tells apart. */
static inline unsigned ulma_decimal_digits(uint64_t v)
{
	static const uint64_t pow10[20] = {1,
					   10,
					   100,
					   1000,
					   10000,
					   100000,
					   1000000,
					   10000000,
					   100000000,
					   1000000000,
					   10000000000ULL,
					   100000000000ULL,
					   1000000000000ULL,
					   10000000000000ULL,
					   100000000000000ULL,
					   1000000000000000ULL,
					   10000000000000000ULL,
					   100000000000000000ULL,
					   1000000000000000000ULL,
					   10000000000000000000ULL};
	uint64_t x = v | 1; /* 0 has one digit, as 1 */
	unsigned t = (64 - (unsigned)__builtin_clzll(x)) * 1233 >> 12; /* at most 19 */
	return t + 1 - (x < pow10[t]);
}

/* v in decimal at p, which has room for 20 bytes; returns the end.  For
 * exporters that write an event straight into ulma_sbuf_room's space. */
static inline char *ulma_put_decimal(char *p, uint64_t v)
{
	char *end = p + ulma_decimal_digits(v), *e = end;
	while (v >= 100) {
		unsigned r = (unsigned)(v % 100);
		v /= 100;
		e -= 2;
		memcpy(e, ulma_decimal_pairs + 2 * r, 2);
	}
	if (v >= 10)
		memcpy(e - 2, ulma_decimal_pairs + 2 * v, 2);
	else
		e[-1] = (char)('0' + v);
	return end;
}

/* A value that never decreases (a thread's clock), kept in decimal: a
 * step adds the difference into the digits from the right, a digit or
 * three of work for the small steps between a thread's events, where
 * ulma_put_decimal does every digit.  Zero-initialised: no value yet. */
struct ulma_running_decimal {
	uint64_t value;
	unsigned len;     /* digits; 0 before the first value */
	char digits[24];  /* at most 20 used */
};

/* v's digits at p, which has 24 bytes of room (copied whole); v may be
 * below the previous value (then written from scratch).  Returns the end. */
static inline char *ulma_put_running_decimal(struct ulma_running_decimal *r, char *p, uint64_t v)
{
	unsigned carry = 1; /* not 0: written from scratch */
	if (__builtin_expect(r->len != 0 && v >= r->value && v - r->value < 1000000, 1)) {
		carry = (unsigned)(v - r->value);
		for (char *d = r->digits + r->len; carry && d > r->digits;) {
			unsigned x = (unsigned)(*--d - '0') + carry;
			*d = (char)('0' + x % 10);
			carry = x / 10;
		}
	}
	if (__builtin_expect(carry != 0, 0)) /* the first value, a step back or a long one, or one more digit */
		r->len = (unsigned)(ulma_put_decimal(r->digits, v) - r->digits);
	r->value = v;
	memcpy(p, r->digits, sizeof(r->digits));
	return p + r->len;
}

/* v in decimal, without printf (the exporters' hot path). */
void ulma_sbuf_u64(struct ulma_sbuf *b, uint64_t v);

/* `n` numbers separated by commas: expr of i_ for i_ in 0 .. n-1. */
#define ULMA_SBUF_U64_LIST(b, n, expr)                      \
	do {                                                \
		for (uint32_t i_ = 0; i_ < (n); i_++) {     \
			if (i_)                             \
				ulma_sbuf_put((b), ",", 1); \
			ulma_sbuf_u64((b), (expr));         \
		}                                           \
	} while (0)

/* v as a JSON number that reads back exactly (printf's %g, so "1.5",
 * "1e+300"), or null when it is not finite (JSON has no NaN nor
 * infinity).  The C locale's decimal point: ulma never sets a locale. */
void ulma_sbuf_double(struct ulma_sbuf *b, double v);

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if it is invalid. */
size_t ulma_utf8_seq(const unsigned char *s, size_t n);

/* For text bound for a terminal (the summary, the live view): the bytes
 * the character at s[0..n) takes (n > 0; 1 for a byte that starts no
 * valid UTF-8 character), and whether it may be printed as it is.  It may
 * not if it is invalid or a control: C0 and DEL, C1 (U+0080-U+009F: some
 * terminals take U+009B for CSI), the line and paragraph separators U+2028
 * and U+2029, and the bidirectional embeddings, overrides and isolates
 * (U+202A-U+202E, U+2066-U+2069), which reorder the text after them.
 * Names and paths are the traced program's to choose. */
size_t ulma_terminal_char(const unsigned char *s, size_t n, bool *printable);

/* Whether code point cp is one of those controls (JSON escapes them). */
bool ulma_is_terminal_control(uint32_t cp);

/* The code point of the valid UTF-8 sequence s[0..k) (k from ulma_utf8_seq). */
uint32_t ulma_utf8_code_point(const unsigned char *s, size_t k);

/* s as valid UTF-8 (invalid bytes become U+FFFD). */
void ulma_sbuf_utf8(struct ulma_sbuf *b, const char *s);

/* s as a JSON string with its quotes.  Besides what JSON requires, <, >, &
 * and U+2028/9 are escaped, so the result is also safe inside an HTML
 * <script> element. */
void ulma_sbuf_json(struct ulma_sbuf *b, const char *s);

/* The same with <, > and & as they are, for a file no HTML embeds:
 * Perfetto's JSON importer shows escapes such as \u003c literally. */
void ulma_sbuf_json_text(struct ulma_sbuf *b, const char *s);

/* s as HTML text or attribute value (&, <, >, ", ' escaped). */
void ulma_sbuf_html(struct ulma_sbuf *b, const char *s);

/* Write the buffer to f and empty it.  Returns 0, -ENOMEM if an append
 * failed, or -EIO. */
int ulma_sbuf_flush(struct ulma_sbuf *b, FILE *f);

#endif
