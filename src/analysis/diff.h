/* diff.h - what changed between two runs: two traces read into profiles,
 * their functions matched, and the changes per function.
 *
 * Each trace is read once through the export walker (export_walk.h), which
 * feeds a profile (profile.h) as `ulma report` does, so a function's calls,
 * self and total time and their on-CPU / runnable / blocked split are the
 * summary's numbers, corrected for the hook's cost unless no_correction
 * (summary_parts.h: ulma_summary_times).  With `tree` the walk also builds
 * the calling-context tree (calltree.h) that the differential flame graph
 * draws (diff_html.c).  Without it, memory is bounded by the functions and
 * threads of the traces and the depth of their stacks, not by their events.
 *
 * Functions are matched by kind, file, name and line; a function whose
 * line moved (code edited above it) is matched by kind, file and name when
 * that is unique among the unmatched of both runs.  Definitions repeated
 * within one trace (one per forked process) are summed first.  A function
 * in one run only is a row with the other side absent.
 *
 * Single-threaded.  Functions returning int give 0, -ENOMEM, -EPROTO for a
 * corrupt trace (the reason in the side's status), or -EIO.
 */
#ifndef ULMA_DIFF_H
#define ULMA_DIFF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "calltree.h"
#include "export_walk.h"
#include "overhead.h"
#include "profile.h"

/* One trace, read. */
struct ulma_diff_side {
	struct ulma_walk walk;
	struct ulma_profile profile;
	struct ulma_calltree tree; /* built with `tree` only */
	bool has_tree;
	struct ulma_trace_status st;
	bool read_error; /* an I/O error reading it, not a corrupt trace */
};

/* Read trace `in` into s (all of s is set; free it with
 * ulma_diff_side_free whatever this returns). */
int ulma_diff_side_read(struct ulma_diff_side *s, FILE *in, bool no_correction, bool tree);
void ulma_diff_side_free(struct ulma_diff_side *s);

#define ULMA_DIFF_ABSENT UINT32_MAX

/* A function's figures in one run (all zero when absent). */
struct ulma_diff_figures {
	uint64_t calls;
	struct ulma_time_split self;
	struct ulma_time_split total;
};

struct ulma_diff_row {
	uint32_t a, b; /* the walk key (export_walk.h) of the function in run A, in run B, or ULMA_DIFF_ABSENT */
	struct ulma_diff_figures fa, fb;
};

struct ulma_diff {
	const struct ulma_diff_side *a, *b;
	const char *path_a, *path_b; /* what to call the runs: set by the caller */
	struct ulma_diff_row *rows; /* largest regression (growth of total time) first */
	uint32_t nrows;
	uint32_t *row_of_a; /* walk key in A -> row, ULMA_DIFF_ABSENT for a key that is no row */
	uint32_t *row_of_b;
	bool split;         /* both runs split their time off the CPU */
	bool gil;           /* both told GIL waits apart */
};

/* Match the functions of a and b (both read) into d.  Returns 0 or -ENOMEM
 * (d is then empty); free with ulma_diff_free. */
int ulma_diff_build(struct ulma_diff *d, const struct ulma_diff_side *a, const struct ulma_diff_side *b);
void ulma_diff_free(struct ulma_diff *d);

/* A row's name, file, line and kind (from the run that has it, B first). */
const struct ulma_walk_func *ulma_diff_func(const struct ulma_diff *d, const struct ulma_diff_row *r);

/* The table for a terminal `width` columns wide: the `limit` rows that
 * changed most (by growth, then by shrinkage), then the totals.  Returns
 * 0 or -EIO. */
int ulma_diff_text(FILE *out, const struct ulma_diff *d, uint32_t limit, unsigned width);

/* The CI threshold (ulma_diff_regressions). */
struct ulma_diff_threshold {
	double percent; /* < 0: none */
	uint64_t min_ns;
	bool on_cpu;    /* compare the totals' on-CPU part (both runs split), not their wall time */
};

/* Every row, then the totals, as one JSON object (docs/json.md, "ulma
 * diff"); with a threshold (percent >= 0) its figures and the rows past
 * it.  Returns 0 or -EIO. */
int ulma_diff_json(FILE *out, const struct ulma_diff *d, const struct ulma_diff_threshold *threshold);

/* The CI threshold: rows of functions in both runs whose total (or its
 * on-CPU part, with t->on_cpu and both runs split) grew by more than
 * t->percent of A's and by at least t->min_ns.  A function in one run
 * only is not counted: its callers' totals carry the change.  Returns
 * how many. */
uint32_t ulma_diff_regressions(const struct ulma_diff *d, const struct ulma_diff_threshold *t);

/* The differential flame graph as a self-contained HTML page (diff_html.c);
 * both sides read with `tree`.  Returns 0, -ENOMEM or -EIO. */
int ulma_diff_html(FILE *out, const struct ulma_diff *d, const char *name_a, const char *name_b);

#endif
