/* live_text.h - the text of the live view's frame as it is built: a
 * growing buffer, cells of an exact display width that keep a name's head
 * or a path's tail, names and paths from the program made safe for the
 * terminal, and the short human forms of counts, bytes and seconds its
 * columns show.
 *
 * The buffer belongs to its caller (zero it to start, free buf to end).
 * An allocation failure is sticky: `failed` is set and later appends do
 * nothing, so a frame is drawn whole or not at all.  No function prints.
 */
#ifndef ULMA_LIVE_TEXT_H
#define ULMA_LIVE_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ulma_live_text {
	char *buf;
	size_t len, cap;
	bool failed; /* an append found no memory: the text is incomplete */
};

/* Append n bytes (as they are), a string, or a printf of at most 511 bytes. */
void ulma_live_text_put(struct ulma_live_text *t, const char *s, size_t n);
void ulma_live_text_puts(struct ulma_live_text *t, const char *s);
__attribute__((format(printf, 2, 3))) void ulma_live_text_putf(struct ulma_live_text *t, const char *fmt, ...);

/* Append n spaces. */
void ulma_live_text_spaces(struct ulma_live_text *t, unsigned n);

/* Append n bytes from the program (a name, a path) with each control
 * character and invalid UTF-8 sequence as '?'. */
void ulma_live_text_clean(struct ulma_live_text *t, const char *s, size_t n);

/* Append s as a left-aligned cell of exactly `width` display columns;
 * too long, it loses its end (keep_tail false: names) or its start
 * (paths), marked with "..". */
void ulma_live_text_cell(struct ulma_live_text *t, const char *s, unsigned width, bool keep_tail);

/* A count as 1234, 12.3k, 1.23M, 1.23G; bytes as KiB, MiB, GiB; seconds
 * in at most 6 characters (hours from 100000 s). */
void ulma_live_human_count(double v, char *buf, size_t cap);
void ulma_live_human_bytes(uint64_t b, char *buf, size_t cap);
void ulma_live_seconds(double s, char *buf, size_t cap);

#endif
