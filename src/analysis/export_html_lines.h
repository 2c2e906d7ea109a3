/* export_html_lines.h - the data of the HTML report's line view
 * (export_html_lines.c), from the profile the walk fed (export_walk.h). */
#ifndef ULMA_EXPORT_HTML_LINES_H
#define ULMA_EXPORT_HTML_LINES_H

#include <stdint.h>

#include "export_text.h"
#include "export_walk.h"
#include "profile.h"

/* Append `,"lines":{...}` to b for every function of p with line rows that
 * the walk's patterns let through (`,"lines":null` if none).  row_of[key]
 * is the function's row in the page's function table (UINT32_MAX: none)
 * for each merge key of w.  The walk has run to its end.  b's errors are
 * sticky (export_text.h); returns 0 or -ENOMEM for what it allocates. */
int ulma_html_lines(struct ulma_sbuf *b, const struct ulma_walk *w, const struct ulma_profile *p,
		    const uint32_t *row_of);

#endif
