/* export_text.c - growable buffer and escaping (see export_text.h). */
#include "export_text.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void ulma_sbuf_free(struct ulma_sbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static bool reserve(struct ulma_sbuf *b, size_t extra)
{
	if (b->nomem)
		return false;
	if (b->len + extra + 1 <= b->cap)
		return true;
	size_t ncap = b->cap ? b->cap : 256;
	while (ncap < b->len + extra + 1) {
		if (ncap > SIZE_MAX / 2) {
			b->nomem = true;
			return false;
		}
		ncap *= 2;
	}
	char *p = realloc(b->p, ncap);
	if (!p) {
		b->nomem = true;
		return false;
	}
	b->p = p;
	b->cap = ncap;
	return true;
}

char *ulma_sbuf_room(struct ulma_sbuf *b, size_t n)
{
	return reserve(b, n) ? b->p + b->len : NULL;
}

void ulma_sbuf_put(struct ulma_sbuf *b, const char *s, size_t n)
{
	if (!reserve(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

void ulma_sbuf_puts(struct ulma_sbuf *b, const char *s)
{
	ulma_sbuf_put(b, s, strlen(s));
}

void ulma_sbuf_printf(struct ulma_sbuf *b, const char *fmt, ...)
{
	char small[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->nomem = true;
		return;
	}
	if ((size_t)n < sizeof(small)) {
		ulma_sbuf_put(b, small, (size_t)n);
		return;
	}
	if (!reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void ulma_sbuf_u64(struct ulma_sbuf *b, uint64_t v)
{
	char tmp[20];
	size_t n = 0;
	do {
		tmp[sizeof(tmp) - 1 - n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	ulma_sbuf_put(b, tmp + sizeof(tmp) - n, n);
}

void ulma_sbuf_double(struct ulma_sbuf *b, double v)
{
	char tmp[32];
	if (!isfinite(v)) {
		ulma_sbuf_puts(b, "null");
		return;
	}
	/* the fewest digits that read back as v: 15 mostly suffice, 17 always do */
	for (int digits = 15; digits <= 17; digits++) {
		snprintf(tmp, sizeof(tmp), "%.*g", digits, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	ulma_sbuf_puts(b, tmp);
}

size_t ulma_utf8_seq(const unsigned char *s, size_t n)
{
	if (n == 0)
		return 0;
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	size_t len;
	uint32_t cp, min;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2, cp = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3, cp = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4, cp = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

uint32_t ulma_utf8_code_point(const unsigned char *s, size_t k)
{
	static const unsigned char lead_bits[5] = {0, 0x7f, 0x1f, 0x0f, 0x07};
	uint32_t cp = s[0] & lead_bits[k < 5 ? k : 0];
	for (size_t i = 1; i < k; i++)
		cp = cp << 6 | (s[i] & 0x3f);
	return cp;
}

bool ulma_is_terminal_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

size_t ulma_terminal_char(const unsigned char *s, size_t n, bool *printable)
{
	size_t k = ulma_utf8_seq(s, n);
	*printable = k && !ulma_is_terminal_control(ulma_utf8_code_point(s, k));
	return k ? k : 1;
}

static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

void ulma_sbuf_utf8(struct ulma_sbuf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	while (n) {
		size_t k = ulma_utf8_seq(p, n);
		if (k)
			ulma_sbuf_put(b, (const char *)p, k);
		else
			ulma_sbuf_put(b, replacement, 3);
		k = k ? k : 1;
		p += k;
		n -= k;
	}
}

/* s as a JSON string; html_safe also escapes <, > and &. */
static void json_string(struct ulma_sbuf *b, const char *s, bool html_safe)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	ulma_sbuf_put(b, "\"", 1);
	while (n) {
		unsigned char c = *p;
		size_t k = 1;
		switch (c) {
		case '"':
			ulma_sbuf_put(b, "\\\"", 2);
			break;
		case '\\':
			ulma_sbuf_put(b, "\\\\", 2);
			break;
		case '\n':
			ulma_sbuf_put(b, "\\n", 2);
			break;
		case '\t':
			ulma_sbuf_put(b, "\\t", 2);
			break;
		case '<':
		case '>':
		case '&':
			if (html_safe)
				ulma_sbuf_printf(b, "\\u%04x", c);
			else
				ulma_sbuf_put(b, (const char *)p, 1);
			break;
		default:
			if (c < 0x20 || c == 0x7f) {
				ulma_sbuf_printf(b, "\\u%04x", c);
			} else if (c < 0x80) {
				ulma_sbuf_put(b, (const char *)p, 1);
			} else {
				k = ulma_utf8_seq(p, n);
				if (k == 3 && p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9))
					ulma_sbuf_printf(b, "\\u%04x", 0x2028 + (p[2] - 0xa8));
				else if (k)
					ulma_sbuf_put(b, (const char *)p, k);
				else
					ulma_sbuf_put(b, "\\ufffd", 6);
				k = k ? k : 1;
			}
		}
		p += k;
		n -= k;
	}
	ulma_sbuf_put(b, "\"", 1);
}

void ulma_sbuf_json(struct ulma_sbuf *b, const char *s)
{
	json_string(b, s, true);
}

void ulma_sbuf_json_text(struct ulma_sbuf *b, const char *s)
{
	json_string(b, s, false);
}

void ulma_sbuf_html(struct ulma_sbuf *b, const char *s)
{
	struct ulma_sbuf clean = {0};
	ulma_sbuf_utf8(&clean, s);
	if (clean.nomem) {
		b->nomem = true;
		ulma_sbuf_free(&clean);
		return;
	}
	for (size_t i = 0; i < clean.len; i++) {
		char c = clean.p[i];
		switch (c) {
		case '&':
			ulma_sbuf_puts(b, "&amp;");
			break;
		case '<':
			ulma_sbuf_puts(b, "&lt;");
			break;
		case '>':
			ulma_sbuf_puts(b, "&gt;");
			break;
		case '"':
			ulma_sbuf_puts(b, "&quot;");
			break;
		case '\'':
			ulma_sbuf_puts(b, "&#39;");
			break;
		default:
			ulma_sbuf_put(b, &c, 1);
		}
	}
	ulma_sbuf_free(&clean);
}

int ulma_sbuf_flush(struct ulma_sbuf *b, FILE *f)
{
	if (b->nomem)
		return -ENOMEM;
	if (b->len && fwrite(b->p, 1, b->len, f) != b->len)
		return -EIO;
	b->len = 0;
	if (b->p)
		b->p[0] = 0;
	return 0;
}
