/* export_objects.h - Python objects over time for the timeline exports
 * (chrome, perfetto, ctf, otf2): per process, the types with the most objects, each
 * a counter of its objects created less those destroyed since the trace
 * began (--memory on Python 3.13+, docs/memory.md "Objects").
 *
 * The walk hands each object event to ulma_xobjects_add (its sink's
 * on_object), which keeps every (process, type) count as a bounded series
 * (series.h: its highest and lowest points and its last value kept
 * exactly).  Which types to draw is known only at the end: then
 * ulma_xobjects_choose marks, per process, the ULMA_XOBJ_TOP types whose
 * count rose highest, and the exporter writes their points: track by
 * track (chrome, perfetto), or a process's tracks merged in time order
 * (ulma_xobjects_merged: ctf and otf2, whose streams go forward in time).  Memory is
 * bounded: at most ULMA_XOBJ_TRACKS (process, type) pairs are followed
 * (the rest counted in `left_out`), each series at most ULMA_XOBJ_BUCKETS
 * buckets.
 *
 * Single-threaded.  Functions returning int give 0 or -ENOMEM.
 */
#ifndef ULMA_EXPORT_OBJECTS_H
#define ULMA_EXPORT_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/idmap.h"
#include "export_walk.h"
#include "series.h"

#define ULMA_XOBJ_TOP 8          /* types drawn per process */
#define ULMA_XOBJ_TRACKS 4096u   /* (process, type) pairs followed */
#define ULMA_XOBJ_BUCKETS 128u   /* per series: at most 257 points drawn */

struct ulma_xobj_track {
	uint32_t pid;
	uint32_t type;   /* the type's funcs key (its name: w->funcs[type].name) */
	uint32_t thread; /* walk index of the first thread that counted it (its tid for chrome) */
	int64_t net;     /* created - destroyed so far */
	bool drawn;      /* chosen by ulma_xobjects_choose */
	struct ulma_series s;
};

struct ulma_xobjects {
	struct ulma_xobj_track *t;
	uint32_t n, cap;
	struct ulma_idmap index; /* pid << 32 | type, + 1 -> track */
	uint64_t left_out;       /* object events of pairs past ULMA_XOBJ_TRACKS */
};

void ulma_xobjects_free(struct ulma_xobjects *x);

/* An object event of a passing thread, at at_ns (the sink's on_object). */
int ulma_xobjects_add(struct ulma_xobjects *x, const struct ulma_walk *w, uint32_t thread,
		      const struct ulma_trace_object *o, uint64_t at_ns);

/* Order the tracks by process, then highest count first, and mark the
 * first ULMA_XOBJ_TOP of each process whose count rose above 0 as drawn. */
void ulma_xobjects_choose(struct ulma_xobjects *x);

/* A point of a drawn track: the track's count at `at`. */
struct ulma_xobj_point {
	uint64_t at;
	double v;
	uint32_t track; /* index in x->t */
	uint32_t seq;   /* its place before the merge: a track's points at one time keep their order */
};

/* After ulma_xobjects_choose: the points of the drawn tracks of the
 * process whose tracks begin at track `first`, in time order (ties in
 * track order), into *out (the caller frees it; NULL when none), *n of
 * them; *end is the first track of the next process (x->n after the
 * last).  0 or -ENOMEM. */
int ulma_xobjects_merged(const struct ulma_xobjects *x, uint32_t first, uint32_t *end, struct ulma_xobj_point **out,
			 uint32_t *n);

/* The counter's name: "objects: TYPE (created - destroyed)". */
void ulma_xobjects_name(const struct ulma_walk *w, const struct ulma_xobj_track *t, char *out, size_t cap);

#endif
