/* display_width.h - how many terminal columns a character takes, as
 * wcwidth(3) says but without the C library's locale: 2 for East Asian
 * wide and fullwidth characters and emoji shown as pictures (Unicode 15's
 * EastAsianWidth W and F), 0 for combining marks, variation selectors and
 * zero-width format characters, 1 for the rest.  The terminal summary
 * aligns its columns with it.  Pure functions, any thread.
 */
#ifndef ULMA_DISPLAY_WIDTH_H
#define ULMA_DISPLAY_WIDTH_H

#include <stddef.h>
#include <stdint.h>

/* Columns of code point cp (a printable one: controls are the caller's). */
unsigned ulma_display_width(uint32_t cp);

#endif
