/* collector_native.h - native functions in the collector's function table
 * (collector_native.c).  Internal to the collector.  Errors: -ENOMEM, also
 * kept in c->error.
 */
#ifndef ULMA_COLLECTOR_NATIVE_H
#define ULMA_COLLECTOR_NATIVE_H

#include <stdint.h>

#include "../core/session.h"
#include "collector.h"

int ulma_collector_native_init(struct ulma_collector *c);
void ulma_collector_native_free(struct ulma_collector *c);

/* A ULMA_DEF_MODULE definition read from the session: tell the resolver.
 * Returns 0 (a malformed one is ignored) or -ENOMEM. */
int ulma_collector_take_module(struct ulma_collector *c, const struct ulma_def_view *d);

/* The dense index of the native function at addr in process pid, named
 * and defined at its first sight.  UINT32_MAX when out of memory. */
uint32_t ulma_collector_native(struct ulma_collector *c, uint32_t pid, uint64_t addr);

#endif
