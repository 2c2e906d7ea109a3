/* collector_calls.h - the monitor's fast path for runs of plain calls
 * (collector_calls.c), taken by collector_apply.c's per-record loop.
 * Internal to the collector; single-threaded, as it is.  No errors: what
 * it cannot take it leaves to the caller's general steps.
 */
#ifndef ULMA_COLLECTOR_CALLS_H
#define ULMA_COLLECTOR_CALLS_H

#include <stdint.h>

#include "../analysis/profile.h"
#include "../core/trace_writer.h"
#include "ulma/shm.h"

struct native_seen;

/* Records read this far ahead (the run loop prefetches at every record,
 * the general loop once a cache line): the writer's core holds their
 * lines, and a fetch from it takes longer than 16 records' work (fib's
 * monitor 9% less CPU at 64 than at 16; 256 no better). */
#define ULMA_PREFETCH_RECORDS 64

/* Apply the run of plain calls that starts at r, up to end: entries and
 * exits of functions already mapped (by_id: a session id's dense index
 * plus one, 0 where unmapped; a native record's address through the
 * thread's cache `native`, NULL for a thread that has none yet), each exit
 * the frame on top's, all before `wake` (the switch records' next work;
 * UINT64_MAX for none), the thread's profile on its fast paths, appended
 * to stream st through its cursor *cur (st NULL: no trace).  *lastp is the
 * records' clock, which must agree with the profile's and the cursor's
 * for the run to start.  Returns the first record not applied, r itself
 * if none was. */
const struct ulma_record *ulma_collector_calls(struct ulma_profile *p, uint32_t thread, struct ulma_trace_stream *st,
					       struct ulma_trace_cursor *cur, const uint32_t *by_id, uint32_t nby_id,
					       const struct ulma_record *r, const struct ulma_record *end,
					       uint64_t *lastp, uint64_t wake, const struct native_seen *native);

#endif
