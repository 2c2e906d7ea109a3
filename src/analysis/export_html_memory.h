/* export_html_memory.h - the data of the HTML report's memory views
 * (docs/html.md, "Memory"), from a trace recorded with --memory:
 *
 * - memory over time: each process's counter marks the monitor writes
 *   (Python heap, native, RSS) as bounded series (series.h: the peak,
 *   the lowest point and the last value kept exactly), with the traced
 *   peak (the profile's, `ulma report`'s peak_bytes) and its time;
 * - the stacks holding the peak: a second walk of the trace feeds a
 *   second profile up to the very record that made the peak (counted in
 *   the first walk) and groups the process's live blocks then by calling
 *   context, as memray's peak view replays its records up to the high
 *   water mark (ulma opens traces as regular files; one it could not
 *   seek back in would get none);
 * - the leaks: the blocks still live at the end, by calling context;
 * - both as flame graphs (mem_flame.h): bounded trees of those groups'
 *   stacks whose widths are bytes, the smallest stacks merged into an
 *   "other" node under their nearest kept frame, with the functions they
 *   name in a table of frames (name, file, line, kind) of their own;
 * - objects per type and per function and type (3.13+).
 * Each list is cut to its largest entries (ULMA_HTML_MEM_ROWS, stacks to
 * their innermost ULMA_HTML_MEM_DEPTH frames) and says how many more.
 *
 * The export's sink hands it the marks and the memory records (after the
 * walk fed them to the profile); it owns its series.  Single-threaded.
 * Functions returning int give 0, -ENOMEM, or the second walk's error.
 */
#ifndef ULMA_EXPORT_HTML_MEMORY_H
#define ULMA_EXPORT_HTML_MEMORY_H

#include <stdint.h>
#include <stdio.h>

#include "export.h"
#include "export_text.h"
#include "export_walk.h"
#include "profile.h"
#include "profile_memory.h"
#include "series.h"

#define ULMA_HTML_MEM_ROWS 50      /* stacks at the peak, leaks, types: the largest */
#define ULMA_HTML_MEM_FUNC_ROWS 500 /* (function, type) object rows */
#define ULMA_HTML_MEM_DEPTH 32     /* frames of a stack, the innermost */
#define ULMA_HTML_MEM_PROCS 64     /* processes whose counters are followed */
#define ULMA_HTML_MEM_CHARTS 16    /* of those, charted: the peak's, then the highest */
#define ULMA_HTML_MEM_POINTS 256   /* buckets per series (at most 513 points) */
#define ULMA_HTML_MEM_FLAME_NODES 2000  /* flame graph nodes kept (at most as many "other" nodes more) */
#define ULMA_HTML_MEM_FLAME_SHARE 10000 /* none under 1/10000 of the root */

enum { HM_HEAP, HM_NATIVE, HM_RSS, HM_SERIES };

struct ulma_html_mem_proc {
	uint32_t pid;
	struct ulma_series s[HM_SERIES];
};

struct ulma_html_memory {
	struct ulma_html_mem_proc *procs;
	uint32_t nprocs;
	uint64_t records;     /* memory records of passing threads so far */
	uint64_t peak_record; /* the one that made the peak (1-based; 0: none) */
	uint64_t peak_bytes;
	uint64_t peak_at_ns;  /* its time, on its thread's corrected clock */
	uint32_t peak_pid;
	/* the second walk's groups of the peak process's live blocks */
	struct ulma_mem_leak *at_peak;
	uint32_t nat_peak;
	struct ulma_profile replay; /* the second walk's profile, for the stacks' names */
	bool replayed;
};

void ulma_html_memory_free(struct ulma_html_memory *m);

/* A counter mark: taken into a series if it is one of the monitor's
 * memory counters.  0 or -ENOMEM. */
int ulma_html_memory_mark(struct ulma_html_memory *m, const struct ulma_walk *w, uint32_t thread,
			  const struct ulma_walk_mark *mark);

/* A memory record of a passing thread at at_ns, just fed to profile p. */
void ulma_html_memory_record(struct ulma_html_memory *m, const struct ulma_profile *p, uint64_t at_ns);

/* After the walk: read the trace again from `start` (its position when the
 * first walk began) with the same filter, up to the peak's record, and
 * group what was live then.  Nothing if in cannot seek or there was no
 * peak.  0, -ENOMEM or the walk's error. */
int ulma_html_memory_replay(struct ulma_html_memory *m, FILE *in, long start, const struct ulma_export_opts *o);

/* Append `,"memory":{...}` (or `,"memory":null` when p has no memory) to b.
 * row_of[key] is a function's row in the page's table (UINT32_MAX: none).
 * b's errors are sticky; returns 0 or -ENOMEM. */
int ulma_html_memory_json(struct ulma_sbuf *b, const struct ulma_walk *w, const struct ulma_profile *p,
			  const struct ulma_html_memory *m, const uint32_t *row_of);

#endif
