/* profile_lines.h - per-line hits and times of the code chosen with --lines.
 *
 * A LINE event says the thread's innermost frame starts executing a line
 * (a hit); LINE_RESUME says a resumed frame goes on inside one (no hit).
 * A line's time runs from its event to the frame's next line event or the
 * frame's end (return, yield, unwind): so it includes the calls the line
 * makes, as line_profiler's does, and each call made while the line runs
 * is also counted under the line (ulma_line_call).  Off-CPU time and the
 * events inside (the hook's cost, overhead.h) come from the thread's
 * cumulative clocks, as a function's total does.
 *
 * The state of a frame's current line lives beside the thread's stack, in
 * an array allocated at the thread's first line event, so that threads
 * and programs without lines pay one predictable branch per exit.  An
 * entry is the current frame's only if its `frame` tag equals the frame's
 * events0 (each frame's is unique on its thread).
 *
 * Single-threaded, like the profile.  Functions returning int give 0 or
 * -ENOMEM.
 */
#ifndef ULMA_PROFILE_LINES_H
#define ULMA_PROFILE_LINES_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/idmap.h"
#include "profile.h"

/* One line of one function. */
struct ulma_line_row {
	uint32_t func; /* dense function index */
	uint32_t line;
	uint64_t hits;
	uint64_t ticks;  /* from each hit (or resume) to the frame's next line or its end */
	uint64_t events; /* events inside those times, for the hook's cost */
	uint64_t blocked_ns; /* off the CPU during them (ns), as in ulma_func_row */
	uint64_t runnable_ns;
	uint64_t gil_ns;
	uint32_t next; /* the function's next row (UINT32_MAX: none), newest first */
	uint32_t first_call; /* its newest call (UINT32_MAX: none) */
	uint64_t alloc_count; /* allocations while the line ran, its calls' included (--memory) */
	uint64_t alloc_bytes;
};

/* The calls a line made, per function called. */
struct ulma_line_call {
	uint32_t row;    /* the calling line (index into rows) */
	uint32_t callee; /* dense function index */
	uint64_t calls;
	uint64_t ticks;  /* the callee frames' wall time */
	uint64_t events; /* events inside those frames, for the hook's cost */
	uint32_t next;   /* the line's next call (UINT32_MAX: none), newest first */
};

/* A copy of a source file, as the monitor read it during the run. */
struct ulma_profile_source {
	char *path; /* NUL-terminated; owned */
	char *text; /* len bytes, NUL-terminated; owned */
	size_t len;
	unsigned flags; /* enum ulma_source_flag */
};

struct ulma_profile_lines {
	struct ulma_line_row *rows;
	uint32_t nrows;
	uint32_t cap_rows;
	struct ulma_idmap row_of; /* (func + 1) << 32 | line -> row */
	struct ulma_line_call *calls;
	uint32_t ncalls;
	uint32_t cap_calls;
	struct ulma_idmap call_of; /* (row + 1) << 32 | callee -> call */
	struct ulma_profile_source *sources;
	uint32_t nsources;
	uint32_t cap_sources;
};

/* The line a thread's frame is in, beside the frame (profile.h). */
struct ulma_line_open {
	uint64_t frame;  /* the frame's events0: this entry is that frame's */
	uint32_t row;    /* UINT32_MAX: none */
	uint64_t start;  /* ticks */
	uint64_t events0; /* the thread's events at the start */
	struct ulma_thread_clocks at;
	uint64_t alloc_count0; /* the thread's allocations at the start */
	uint64_t alloc_bytes0;
};

/* A line event of `thread` at `ticks`: its innermost frame starts line
 * `line` (hit) or goes on in it after a resume (!hit).  Without a frame it
 * is only counted as an event. */
int ulma_profile_line(struct ulma_profile *p, uint32_t thread, uint64_t ticks, uint32_t line, bool hit);

/* ulma_profile_pop calls ulma_profile_lines_pop (declared in profile.h)
 * as frame `f` ends, when its thread has line state: the frame's line
 * ends, and its call counts under the caller's line. */

/* Rows of function `func`, sorted by line; caller frees *out.  Returns
 * the count (0 with *out NULL if none), or -ENOMEM. */
int ulma_profile_lines_of(const struct ulma_profile *p, uint32_t func, uint32_t **out);

/* Does function `func` have line rows? */
bool ulma_profile_has_lines(const struct ulma_profile *p, uint32_t func);

/* Keep a copy of the file at path (a later copy replaces it). */
int ulma_profile_add_source(struct ulma_profile *p, const char *path, size_t path_len, const char *text, size_t len,
			    unsigned flags);

/* The copy of the file at path, or NULL. */
const struct ulma_profile_source *ulma_profile_source_of(const struct ulma_profile *p, const char *path);

void ulma_profile_lines_free(struct ulma_profile_lines *l);

#endif
