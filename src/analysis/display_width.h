/* display_width.h - how many terminal columns a character takes, as
 * wcwidth(3) says but without the C library's locale: 2 for East Asian
 * wide and fullwidth characters and emoji shown as pictures (Unicode 15's
 * EastAsianWidth W and F), 0 for combining marks, variation selectors and
 * zero-width format characters, 1 for the rest.  The terminal summary
 * aligns its columns with it.  Pure functions, any thread.
 */
#ifndef ULMA_DISPLAY_WIDTH_H
#define ULMA_DISPLAY_WIDTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Columns of code point cp (a printable one: controls are the caller's). */
unsigned ulma_display_width(uint32_t cp);

/* For UTF-8 text s[0..n) shown with every character a terminal must not
 * get (ulma_terminal_char) as one '?', and a stray continuation byte as
 * nothing (the live view's cells): its columns; the byte length of its
 * first `cols` columns, the marks combining with the last one included;
 * the byte offset where its last `cols` columns begin.  Neither of the
 * last two splits a wide character: they may give one column less. */
unsigned ulma_display_width_of(const char *s, size_t n);
size_t ulma_display_head(const char *s, size_t n, unsigned cols);
size_t ulma_display_tail(const char *s, size_t n, unsigned cols);

#endif
