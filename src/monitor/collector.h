/* collector.h - drain a session's rings into a profile and a trace file.
 *
 * The collector is the monitor's core.  Each poll reads new definitions,
 * notices new and finished threads, and consumes every ring.  It turns the
 * raw records into a well-nested stream per thread: exits that match no
 * open frame (frames entered before tracing began) are dropped, an exit
 * that matches a deeper frame closes the frames above it (resynchronising
 * after a loss), and times never run backwards within a thread.  Processes
 * forked from the program intern the same function under ids of their
 * own; definitions with equal content map to one dense index, so a
 * function is one row whichever process ran it, and the trace names it by
 * that index plus one.  That stream goes to the profile and, if there is
 * one, to the trace writer, so a report of the file equals the live
 * summary.
 *
 * Per record the work is a few loads and stores and one varint: the
 * profile's inline enter and exit and the writer's inline appends
 * (docs/design.md, "The monitor's per-event work").
 *
 * Time off the CPU comes one of two ways (ulma_collector_split):
 * - switches: the scheduler's context-switch records (offcpu.h) are merged
 *   into each thread's stream as OFF intervals, exactly where they fall
 *   between its events;
 * - schedstat: every live thread's schedstat is sampled (1 ms while it
 *   runs, 10 ms while idle) and its events are drained only up to the
 *   latest sample, so each event's CPU and run-queue time come from the
 *   same two samples live and in a report.
 * collector.c holds the slots' lifecycle and collector_apply.c the
 * per-record work, over the thread state of collector_slot.h.
 * Single-threaded.
 */
#ifndef ULMA_COLLECTOR_H
#define ULMA_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "../analysis/profile.h"
#include "../core/idmap.h"
#include "../core/session.h"
#include "../core/trace_writer.h"
#include "offcpu.h"
#include "switches.h"

struct ulma_collector_slot;
struct ulma_collector_lines;
struct ulma_symbols;
struct ulma_collector_rss;

struct ulma_collector {
	struct ulma_session *session;
	struct ulma_trace_writer *writer; /* may be NULL */
	struct ulma_profile profile;
	struct ulma_idmap func_index; /* session id -> dense function index */
	uint32_t *by_id;              /* the same for small ids: index + 1, 0 = unknown */
	uint32_t nby_id;
	struct ulma_idmap by_content; /* hash of (kind, name, file, line) -> dense index */
	struct ulma_idmap file_index; /* hash of path -> trace file id */
	char **files;
	uint32_t nfiles;
	uint64_t def_cursor;
	uint64_t stuck_at;        /* def_cursor where an incomplete entry blocks reading */
	uint64_t stuck_since_ns;
	uint64_t refused_def;     /* def_cursor + 1 where a malformed entry was counted refused */
	uint64_t *holes;          /* entries skipped while incomplete, re-read on every scan */
	uint32_t nholes;
	struct ulma_collector_slot *slots; /* one per session slot */
	struct ulma_idmap serials; /* the threads' serials in the profile and the trace, + 1 */
	uint32_t unknown;      /* dense index of the "?" function, UINT32_MAX until needed */
	struct ulma_symbols *symbols;   /* names native addresses (collector_native.c) */
	struct ulma_idmap native_index; /* process number << 48 | address -> dense index */
	struct ulma_idmap proc_number;  /* pid -> process number */
	uint32_t nprocs;
	bool use_tsc;          /* session clock: TSC ticks, else ns */
	int split;             /* enum ulma_split_method */
	struct ulma_switches *switches; /* with ULMA_SPLIT_SWITCHES; owned by the caller */
	struct ulma_offcpu off;
	double ns_per_tick;    /* for schedstat's increments */
	uint64_t records;      /* ring records consumed */
	uint64_t peak;         /* the most records one ring held as the last poll began */
	uint64_t resynced;     /* frames an exit of a deeper frame closed, and unmatched exits */
	uint64_t refused;      /* records and definitions refused as malformed: a writer that broke the
				* format (docs/design.md, "Hostile writers") */
	uint64_t overhead_ps;  /* the hook's cost per event, once the program has measured it */
	struct ulma_collector_lines *lines; /* source copies and --lines patterns (collector_lines.c), or NULL */
	uint32_t mem_counters[2]; /* the memory counters' mark definitions + 1 (collector_memory.c), 0: not yet */
	struct ulma_collector_rss **rss; /* per traced process (collector_memory.c) */
	uint32_t nrss;
	uint32_t rss_counter;  /* the RSS counter's mark definition + 1, 0: not yet */
	uint64_t rss_at_ns;    /* monotonic time of the last RSS round */
	uint64_t rss_round;    /* the last RSS round's number */
	int error;             /* first -errno from the writer or allocation */
};

/* Set up over a mapped session; writer may be NULL.  Splits time by
 * sampling schedstat until told otherwise.  Returns 0 or -ENOMEM. */
int ulma_collector_init(struct ulma_collector *c, struct ulma_session *s, struct ulma_trace_writer *w);

/* How to split time, before the first poll: ULMA_SPLIT_SWITCHES with the
 * records of `sw` (which the caller opened on the program and closes after
 * ulma_collector_free), ULMA_SPLIT_SCHEDSTAT, or ULMA_SPLIT_NONE.  start
 * and hz: the session's clock, for converting the records' times. */
void ulma_collector_split(struct ulma_collector *c, int method, struct ulma_switches *sw,
			  const struct ulma_clock_pair *start, uint64_t hz);

/* Drain what is there now.  With `final`, an event whose definition never
 * arrived is named "?" instead of waiting for it.  Returns the number of
 * records consumed, or a negative error. */
long ulma_collector_poll(struct ulma_collector *c, bool final);

/* Finish the threads of processes that died without stopping (a forked
 * child leaving by os._exit, a crash): take their last records, close their
 * frames when each thread exited (its switch records' EXIT), else at
 * now_ticks (when the death was noticed), and free their slots.
 * Returns the number of slots freed. */
int ulma_collector_reap(struct ulma_collector *c, uint64_t now_ticks);

/* Close every open frame at `end_ticks` (they end with the session). */
void ulma_collector_close_all(struct ulma_collector *c, uint64_t end_ticks);

/* Free everything but the session, the writer and the switch records. */
void ulma_collector_free(struct ulma_collector *c);

#endif
