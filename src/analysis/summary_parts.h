/* summary_parts.h - what the summary's files share (summary.c defines
 * them; summary_lines.c renders the line tables with them).  Internal to
 * the summary. */
#ifndef ULMA_SUMMARY_PARTS_H
#define ULMA_SUMMARY_PARTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "summary.h"

/* Session ticks in ns. */
uint64_t ulma_summary_ns(const struct ulma_summary *s, uint64_t ticks);

/* The hook's cost per event to subtract, in ns (0: no correction). */
double ulma_summary_cost_per_event(const struct ulma_summary *s);

/* path for a table cell: relative to the cwd when inside it, else its
 * tail in buf (of cap bytes) with "..." before it. */
const char *ulma_summary_short_path(const char *path, char *buf, size_t cap);

/* s with what a terminal would act on replaced, at most max (> 3)
 * characters, a longer one cut and ending in "...".  Returns the
 * characters written. */
size_t ulma_summary_put_printable(FILE *out, const char *s, size_t max);

/* s as a JSON string; invalid UTF-8 bytes become U+FFFD. */
void ulma_summary_json_string(FILE *out, const char *s);

/* summary_lines.c: `, "lines": [...]` for function func if it has lines
 * (and `, "source_changed": true` if its file changed during the run). */
void ulma_summary_lines_json(FILE *out, const struct ulma_summary *s, uint32_t func);

/* summary_memory.c (--memory, docs/memory.md): a function's memory keys;
 * the top-level keys (`"memory": false, ` without memory), each followed
 * by ", " (0 or -ENOMEM); the text section after the function table. */
void ulma_summary_memory_func_json(FILE *out, const struct ulma_summary *s, uint32_t func);
int ulma_summary_memory_json(FILE *out, const struct ulma_summary *s);
void ulma_summary_memory_text(FILE *out, const struct ulma_summary *s, uint32_t limit);

#endif
