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

/* v in decimal at p, which has room for 20 bytes; returns the end.  For
 * exporters that write an event straight into ulma_sbuf_room's space. */
static inline char *ulma_put_decimal(char *p, uint64_t v)
{
	unsigned n = 1;
	for (uint64_t x = v; x >= 10; x /= 10)
		n++;
	char *e = p + n;
	do {
		*--e = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return p + n;
}

/* v in decimal, without printf (the exporters' hot path). */
void ulma_sbuf_u64(struct ulma_sbuf *b, uint64_t v);

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
