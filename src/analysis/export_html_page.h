/* export_html_page.h - the static halves of the HTML report page; the
 * data (a JSON object) goes between them (export_html.c). */
#ifndef ULMA_EXPORT_HTML_PAGE_H
#define ULMA_EXPORT_HTML_PAGE_H

extern const char ulma_html_head[]; /* ends inside <script type="application/json"> */
extern const char ulma_html_tail[]; /* closes it, then the page's script */

#endif
