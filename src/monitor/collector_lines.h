/* collector_lines.h - the lines of the code chosen with --lines, in the
 * collector (collector_lines.c): each line record goes to the profile and
 * the trace; the first line seen in a source file makes the monitor copy
 * that file, while the program runs, into the profile and the trace (so a
 * report shows what ran even if the file changes later, and says when it
 * changed during the run); and the patterns asked for and matched are
 * tallied, for the warning about a pattern that chose nothing.  Internal
 * to the collector.  Errors: -ENOMEM, also kept in c->error.
 */
#ifndef ULMA_COLLECTOR_LINES_H
#define ULMA_COLLECTOR_LINES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../core/session.h"
#include "collector.h"

/* A LINE (or, if resumed, LINE_RESUME) record of thread `thread`, of
 * process pid, at ticks: to the profile and to the thread's stream (may
 * be NULL).  With no frame open on the thread (its frame closed after a
 * loss) the line belongs to nothing and is dropped, as the trace cannot
 * hold it. */
int ulma_collector_line(struct ulma_collector *c, uint32_t thread, uint32_t pid, struct ulma_trace_stream *stream,
			uint64_t ticks, uint32_t line, bool resumed);

/* A ULMA_DEF_LINES_WANTED or ULMA_DEF_LINES_MATCHED definition. */
int ulma_collector_take_lines_def(struct ulma_collector *c, const struct ulma_def_view *d);

/* Warn on `err` about each pattern no process chose any code for.
 * Returns how many were warned about. */
int ulma_collector_lines_warn(const struct ulma_collector *c, FILE *err);

void ulma_collector_lines_free(struct ulma_collector *c);

#endif
