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

/* The dense index of session id sid, scanning for new definitions if it
 * is not known yet.  Ids never defined (and id 0, written when the area was
 * full) name "?" when `final`; before that UINT32_MAX means "wait".  Also
 * UINT32_MAX when out of memory (c->error says). */
uint32_t ulma_collector_resolve(struct ulma_collector *c, uint32_t sid, bool final);

/* The dense index of the function with this content, defined now if new
 * (the monitor's own definitions: native functions).  UINT32_MAX when out
 * of memory (c->error says). */
uint32_t ulma_collector_define(struct ulma_collector *c, uint8_t kind, const char *name, size_t name_len,
			       const char *file, size_t file_len, uint32_t line);

/* The trace's file id of path, defined now if new.  0 or -ENOMEM. */
int ulma_collector_file_id(struct ulma_collector *c, const char *path, size_t len, uint32_t *out);

/* Free the table (part of ulma_collector_free). */
void ulma_collector_defs_free(struct ulma_collector *c);

#endif
