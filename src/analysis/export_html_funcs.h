/* export_html_funcs.h - the HTML report's per-function split (the seed
 * 002 bar): of each function's self and total time, how much was on a
 * CPU, waiting for one, blocked and waiting for the GIL, in native code,
 * and the bytes it allocated, as `ulma report` has them (export_html_funcs.c). */
#ifndef ULMA_EXPORT_HTML_FUNCS_H
#define ULMA_EXPORT_HTML_FUNCS_H

#include <stdbool.h>
#include <stdint.h>

#include "export_text.h"
#include "export_walk.h"
#include "profile.h"

/* What the report's profile knows beyond wall time. */
struct ulma_html_has {
	bool split;  /* on-CPU / runnable / blocked told apart */
	bool gil;    /* of blocked, the GIL */
	bool native; /* some time in C functions or native code */
	bool memory; /* allocations (--memory) */
};

/* One function (a merge key of the walk), summed over its walk indices. */
struct ulma_html_split {
	uint64_t self_cpu, self_runnable, self_blocked, self_gil;
	uint64_t total_cpu, total_runnable, total_blocked, total_gil;
	uint64_t self_native, total_native;
	uint64_t self_bytes, total_bytes; /* allocated */
	uint64_t self_native_bytes;       /* of self_bytes, native code's blocks */
	uint64_t net_bytes;               /* of self_bytes, still allocated at the end */
};

/* out[key] for every key of w below w->nfuncs (the caller allocates
 * w->nfuncs entries), from the profile p the walk fed (its times
 * corrected as the walk's are).  Sets *has.  The walk has run to its end. */
void ulma_html_funcs_split(const struct ulma_walk *w, const struct ulma_profile *p, struct ulma_html_split *out,
			   struct ulma_html_has *has);

/* `[s_cpu,s_run,s_blk,s_gil,t_cpu,t_run,t_blk,t_gil,s_native,t_native,s_bytes,t_bytes,s_native_bytes,net_bytes]`
 * into b. */
void ulma_html_split_json(struct ulma_sbuf *b, const struct ulma_html_split *x);

#endif
