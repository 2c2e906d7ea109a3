/* summary.h - the end-of-run summary, as text for people and JSON for tools.
 *
 * Both render a profile (see profile.h) plus the session facts that frame
 * it.  The JSON object is a contract (docs/json.md): the keys listed there
 * are stable.  Writes only to the stream it is given.
 */
#ifndef ULMA_SUMMARY_H
#define ULMA_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../core/clock.h"
#include "profile.h"

struct ulma_mpi_view;

struct ulma_summary {
	const struct ulma_profile *profile;
	struct ulma_clock_calibration cal;
	uint64_t duration_ns;  /* session wall time */
	uint64_t trace_bytes;  /* size of the trace file, 0 if none */
	const char *trace_path; /* may be NULL */
	uint32_t failures;     /* enum ulma_shm_failure */
	bool complete;         /* the trace has its END record */
	int exit_status;       /* wait status of the program, -1 if unknown */
	const char *const *lanes; /* per thread: its CPU lane (lane.h), or NULL */
	uint64_t overhead_ps;  /* the hook's measured cost per event (ps), 0 if unknown */
	bool no_correction;    /* show raw times: do not subtract that cost (overhead.h) */
	uint64_t monitor_cpu_ns; /* the monitor's own CPU time, 0 if unknown */
	uint64_t switches_lost;  /* context-switch records the kernel dropped */
	uint64_t resynced;       /* frames closed without their exit, exits without an entry */
	uint64_t refused;        /* records and definitions the monitor refused as malformed */
	const struct ulma_mpi_view *mpi; /* ranks and messages of a merged MPI trace (mpi_view.h), or NULL */
};

/* Top `limit` functions by self time, then totals.  Returns 0 or -EIO. */
int ulma_summary_text(FILE *out, const struct ulma_summary *s, uint32_t limit);

/* The line tables (docs/lines.md) of the `limit` functions with lines
 * that took the most time (UINT32_MAX: all), as the text summary shows
 * them after its function table.  Returns how many functions have lines
 * (0: nothing written). */
uint32_t ulma_summary_lines_text(FILE *out, const struct ulma_summary *s, uint32_t limit);

/* Every function, then totals, as one JSON object.  Returns 0 or -EIO. */
int ulma_summary_json(FILE *out, const struct ulma_summary *s);

/* Time-averaged number of the program's threads on a CPU: their CPU time
 * (between their first and last schedstat samples, which lost events do
 * not affect, or from their first to their last event less their time off
 * a CPU) over the session's wall time. */
double ulma_summary_parallelism(const struct ulma_summary *s);

/* CPU time of the program's threads over the session, in ns. */
uint64_t ulma_summary_program_cpu_ns(const struct ulma_summary *s);

/* "switches", "schedstat" or "none": how time was split (docs/time-split.md). */
const char *ulma_summary_split_method(const struct ulma_summary *s);

/* Sum over threads of (last - first) event time, and of self time, in ns:
 * for the time-conservation check. */
void ulma_summary_thread_times(const struct ulma_summary *s, uint32_t thread, uint64_t *wall_ns,
			       uint64_t *self_ns);

#endif
