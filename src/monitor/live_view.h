/* live_view.h - `ulma run`'s live table, drawn by the monitor while the
 * program runs.
 *
 * The view renders the collector's profile (through live_table.h) on the
 * terminal (live_term.h) about twice a second and after every key: a status
 * line (elapsed time, events/s, events lost, running threads and processes,
 * trace size), then one row per function (function, file:line, calls,
 * total, self, self %, and with schedstat data cpu% run% blk% of the self
 * time), then a line of keys.  v switches to one row per process (its
 * threads' totals, its state and command) and back.  Keys: s cycles the sort
 * column, c clears the history, p pauses the display, q closes the view
 * (tracing goes on), arrows and page keys scroll.  While the view is open
 * the program's terminal output is held by the relay (live_relay.h) and
 * appears when the view closes.  docs/live.md explains the choices.
 *
 * Nothing here runs in the traced program.  Returns 0 or -errno; never
 * prints except on the terminal it owns.  Monitor's main thread only.
 */
#ifndef ULMA_LIVE_VIEW_H
#define ULMA_LIVE_VIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/clock.h"
#include "../core/trace_writer.h"
#include "collector.h"

struct ulma_live;

/* What the view shows: owned by the caller, read on every refresh. */
struct ulma_live_source {
	const struct ulma_collector *col;
	const struct ulma_trace_writer *writer;
	bool use_tsc;
	uint64_t hz;                 /* measured ticks per second */
	struct ulma_clock_pair start; /* the session's start */
	bool hold_output;             /* the program is our child: hold its terminal output */
	bool no_correction;           /* show raw times, the hook's cost included (docs/overhead.md) */
};

/* Take the terminal and (with hold_output) start the relay, before the
 * program starts.
 * Returns 0, -ENOTTY when stderr is not our foreground terminal (run
 * without a view), or another -errno. */
int ulma_live_open(const struct ulma_live_source *src, struct ulma_live **out);

/* The descriptor the program gets as its fd (0, 1 or 2) instead of ours,
 * or -1 to keep ours: stdout and stderr go through the relay when they are
 * the terminal. */
int ulma_live_program_fd(const struct ulma_live *lv, int fd);

/* The program has started (or failed to): open the view. */
void ulma_live_started(struct ulma_live *lv);

/* Is the view on the screen? */
bool ulma_live_showing(const struct ulma_live *lv);

enum ulma_live_result {
	ULMA_LIVE_ON,     /* the view is showing */
	ULMA_LIVE_CLOSED, /* it closed just now: q, or the terminal went away */
	ULMA_LIVE_OFF,    /* it was closed before */
};

/* Read keys and redraw when due.  Cheap when there is nothing to do. */
enum ulma_live_result ulma_live_tick(struct ulma_live *lv);

/* Sleep up to ns, waking early for a key or a resize. */
void ulma_live_sleep(struct ulma_live *lv, long ns);

/* Close the view if open, give the terminal and the program's output back
 * (waiting briefly for the relay to write it), and free.  Accepts NULL. */
void ulma_live_close(struct ulma_live *lv);

#endif
