/* summary_parts.h - what the summary's files share (summary.c defines
 * them; summary_lines.c renders the line tables with them), and the parts
 * of the line tables the HTML report's line view reuses
 * (export_html_lines.c), so both show the same lines and times.
 * Internal to the analysis. */
#ifndef ULMA_SUMMARY_PARTS_H
#define ULMA_SUMMARY_PARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile_lines.h"
#include "overhead.h"
#include "summary.h"

/* Session ticks in ns. */
uint64_t ulma_summary_ns(const struct ulma_summary *s, uint64_t ticks);

/* The hook's cost per event to subtract, in ns (0: no correction). */
double ulma_summary_cost_per_event(const struct ulma_summary *s);

/* f's self and total time, corrected unless s says not to, and split. */
void ulma_summary_times(const struct ulma_summary *s, const struct ulma_func_row *f, struct ulma_time_split *self,
			struct ulma_time_split *total);

/* Of f's total as shown (total, from ulma_summary_times), the time in C
 * functions and native code below it. */
uint64_t ulma_summary_native_ns(const struct ulma_summary *s, const struct ulma_func_row *f,
				const struct ulma_time_split *total);

/* path for a table cell: relative to the cwd when inside it, else its
 * tail in buf (of cap bytes) with "..." before it. */
const char *ulma_summary_short_path(const char *path, char *buf, size_t cap);

/* s with what a terminal would act on replaced, at most max (> 3)
 * columns (display_width.h), a wider one cut and ending in "...".
 * Returns the columns written. */
size_t ulma_summary_put_printable(FILE *out, const char *s, size_t max);

/* s as a JSON string; invalid UTF-8 bytes become U+FFFD. */
void ulma_summary_json_string(FILE *out, const char *s);

/* summary_mpi.c: a merged MPI trace's "ranks", "messages", "unmatched",
 * "logical_corrections" ... keys, each followed by a comma and a newline
 * (nothing for other traces); and the text summary's MPI table. */
void ulma_summary_mpi_json(FILE *out, const struct ulma_summary *s);
void ulma_summary_mpi_text(FILE *out, const struct ulma_summary *s);

/* summary_lines.c: `, "lines": [...]` for function func if it has lines
 * (and `, "source_changed": true` if its file changed during the run). */
void ulma_summary_lines_json(FILE *out, const struct ulma_summary *s, uint32_t func);

/* summary_lines.c: line row r's time, corrected for the hook's cost as the
 * function table's, and split (without a split all of it is on the CPU). */
void ulma_summary_line_times(const struct ulma_summary *s, const struct ulma_line_row *r, struct ulma_time_split *out);

/* summary_lines.c: the wall time of the calls made on a line, corrected
 * for the hook's cost as the lines' are. */
uint64_t ulma_summary_call_ns(const struct ulma_summary *s, const struct ulma_line_call *c);

/* summary_lines.c: the sum of function func's line times, corrected: what
 * a line's share of the function ("%func") is of, as in line_profiler, so
 * the shares add up to 100 whether or not the function recurses. */
uint64_t ulma_summary_lines_ns(const struct ulma_summary *s, uint32_t func);

/* summary_lines.c: offsets of the starts of the text's lines: starts[i] is
 * line i + 1's; starts[*n] is the end.  Caller frees; NULL if out of memory. */
size_t *ulma_summary_split_lines(const char *text, size_t len, uint32_t *n);

/* summary_lines.c: which lines function f's line table shows, its rows
 * being lines first_row..last_row of the copy `text` (split by
 * ulma_summary_split_lines into nlines).  True: every line of
 * *first..*last, its block (its first line, a decorator's where it has
 * one, down to the last line indented deeper and on to its last row);
 * false: its rows' lines only (a module's body, a block too long, rows
 * outside it). */
bool ulma_summary_line_block(const struct ulma_func_row *f, const char *text, const size_t *starts, uint32_t nlines,
			     uint32_t first_row, uint32_t last_row, uint32_t *first, uint32_t *last);

/* summary_memory.c (--memory, docs/memory.md): a function's memory keys;
 * the top-level keys (`"memory": false, ` without memory), each followed
 * by ", " (0 or -ENOMEM); the text section after the function table. */
struct ulma_obj_count;
/* objects: every (function, type) row, sorted by ulma_profile_objects_by_func */
void ulma_summary_memory_func_json(FILE *out, const struct ulma_summary *s, uint32_t func,
				   const struct ulma_obj_count *objects, uint32_t nobjects);
int ulma_summary_memory_json(FILE *out, const struct ulma_summary *s);
void ulma_summary_memory_text(FILE *out, const struct ulma_summary *s, uint32_t limit);

#endif
