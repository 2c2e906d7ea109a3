/* diff_html_page.h - the static halves of the differential flame graph's
 * page; the data (a JSON object) goes between them (diff_html.c). */
#ifndef ULMA_DIFF_HTML_PAGE_H
#define ULMA_DIFF_HTML_PAGE_H

extern const char ulma_diff_html_head[]; /* ends inside <script type="application/json"> */
extern const char ulma_diff_html_tail[]; /* closes it, then the page's script */

#endif
