/* collector_defs.h - the collector's function table (collector_defs.c):
 * session ids to dense function indices, and their definitions in the
 * profile and the trace.  Internal to the collector.
 */
#ifndef ULMA_COLLECTOR_DEFS_H
#define ULMA_COLLECTOR_DEFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector.h"

/* Read the definitions written since the last scan.  Returns 0 or -errno
 * (also kept in c->error). */
int ulma_collector_scan_defs(struct ulma_collector *c, bool final);

/* What ulma_collector_resolve gives besides a dense index. */
#define ULMA_COLLECTOR_WAIT UINT32_MAX /* the definition is on its way (or out of memory: c->error says) */
#define ULMA_COLLECTOR_UNDEFINED (UINT32_MAX - 1) /* never defined: a writer broke the format */

/* The dense index of session id sid, scanning for new definitions if it
 * is not known yet.  Id 0 (written when the area was full) names "?".  An
 * id not defined is on its way (ULMA_COLLECTOR_WAIT) while an entry before
 * the end of the area is still incomplete, unless `final`: a writer
 * defines an id before any record uses it, so once every entry up to the
 * area's end has been read it never will be (ULMA_COLLECTOR_UNDEFINED). */
uint32_t ulma_collector_resolve(struct ulma_collector *c, uint32_t sid, bool final);

/* The dense index of the function with this content, defined now if new
 * (the monitor's own definitions: native functions).  UINT32_MAX when out
 * of memory (c->error says). */
uint32_t ulma_collector_define(struct ulma_collector *c, uint8_t kind, const char *name, size_t name_len,
			       const char *file, size_t file_len, uint32_t line);

/* The trace's file id of path, defined now if new.  0 or -ENOMEM. */
int ulma_collector_file_id(struct ulma_collector *c, const char *path, size_t len, uint32_t *out);

/* A ULMA_DEF_PROCESS definition: what a process calls itself, kept in
 * the profile and the trace (collector.c).  A malformed one is refused. */
int ulma_collector_take_process(struct ulma_collector *c, const struct ulma_def_view *d);

/* Free the table (part of ulma_collector_free). */
void ulma_collector_defs_free(struct ulma_collector *c);

#endif
