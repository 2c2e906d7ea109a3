/* live_text.c - the live view's lines as they are built (see live_text.h). */
#include "live_text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/display_width.h"
#include "../analysis/export_text.h"

void ulma_live_text_put(struct ulma_live_text *t, const char *s, size_t n)
{
	if (t->failed || n == 0)
		return;
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 16384;
		while (cap < t->len + n + 1)
			cap *= 2;
		char *b = realloc(t->buf, cap);
		if (!b) {
			t->failed = true;
			return;
		}
		t->buf = b;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, s, n);
	t->len += n;
}

void ulma_live_text_puts(struct ulma_live_text *t, const char *s)
{
	ulma_live_text_put(t, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) void ulma_live_text_putf(struct ulma_live_text *t, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		ulma_live_text_put(t, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

void ulma_live_text_spaces(struct ulma_live_text *t, unsigned n)
{
	static const char sp[] = "                                ";
	while (n > 0) {
		unsigned k = n < sizeof(sp) - 1 ? n : (unsigned)sizeof(sp) - 1;
		ulma_live_text_put(t, sp, k);
		n -= k;
	}
}

/* Names and paths come from the program: no control character (U+2028
 * and C1 included) nor invalid UTF-8 reaches the terminal
 * (ulma_terminal_char); each shows as '?', in the one column
 * ulma_display_width_of counted for it (a stray continuation byte,
 * counted none, shows nothing). */
void ulma_live_text_clean(struct ulma_live_text *t, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t run = 0, i = 0;
	while (i < n) {
		bool printable;
		size_t k = ulma_terminal_char(p + i, n - i, &printable);
		if (!printable) {
			ulma_live_text_put(t, s + run, i - run);
			if ((p[i] & 0xc0) != 0x80)
				ulma_live_text_put(t, "?", 1);
			run = i + k;
		}
		i += k;
	}
	ulma_live_text_put(t, s + run, n - run);
}

/* A left-aligned cell of exactly `width` columns.  Too long, it loses
 * its end (names) or its start (paths), marked with "..", and a space
 * where a wide character did not fit. */
void ulma_live_text_cell(struct ulma_live_text *t, const char *s, unsigned width, bool keep_tail)
{
	size_t n = strlen(s);
	unsigned w = ulma_display_width_of(s, n);
	if (w <= width) {
		ulma_live_text_clean(t, s, n);
		ulma_live_text_spaces(t, width - w);
		return;
	}
	if (width < 3) {
		size_t len = ulma_display_head(s, n, width);
		ulma_live_text_clean(t, s, len);
		ulma_live_text_spaces(t, width - ulma_display_width_of(s, len));
		return;
	}
	if (keep_tail) {
		ulma_live_text_put(t, "..", 2);
		size_t from = ulma_display_tail(s, n, width - 2);
		ulma_live_text_spaces(t, width - 2 - ulma_display_width_of(s + from, n - from));
		ulma_live_text_clean(t, s + from, n - from);
	} else {
		size_t len = ulma_display_head(s, n, width - 2);
		ulma_live_text_clean(t, s, len);
		ulma_live_text_put(t, "..", 2);
		ulma_live_text_spaces(t, width - 2 - ulma_display_width_of(s, len));
	}
}

void ulma_live_human_count(double v, char *buf, size_t cap)
{
	if (v < 10000)
		snprintf(buf, cap, "%.0f", v);
	else if (v < 1e6)
		snprintf(buf, cap, "%.1fk", v / 1e3);
	else if (v < 1e9)
		snprintf(buf, cap, "%.2fM", v / 1e6);
	else
		snprintf(buf, cap, "%.2fG", v / 1e9);
}

void ulma_live_human_bytes(uint64_t b, char *buf, size_t cap)
{
	if (b >= (UINT64_C(1) << 30))
		snprintf(buf, cap, "%.2f GiB", (double)b / (double)(UINT64_C(1) << 30));
	else if (b >= (1u << 20))
		snprintf(buf, cap, "%.1f MiB", (double)b / (double)(1u << 20));
	else
		snprintf(buf, cap, "%.1f KiB", (double)b / 1024.0);
}

/* Seconds with three significant-ish digits, like top's TIME column; at
 * most 6 characters (hours from 100000 s on, for an attach of days).  The
 * bounds are where rounding would add a digit. */
void ulma_live_seconds(double s, char *buf, size_t cap)
{
	if (s < 9.9995)
		snprintf(buf, cap, "%.3fs", s);
	else if (s < 99.995)
		snprintf(buf, cap, "%.2fs", s);
	else if (s < 999.95)
		snprintf(buf, cap, "%.1fs", s);
	else if (s < 99999.5)
		snprintf(buf, cap, "%.0fs", s);
	else
		snprintf(buf, cap, "%.0fh", s / 3600);
}
