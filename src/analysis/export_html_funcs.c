/* export_html_funcs.c - the per-function split of the HTML report (see
 * export_html_funcs.h).
 *
 * The figures are the profile's, the one `ulma report` prints: the walk
 * feeds it every event of the passing threads (export_walk.h), so the time
 * window and the patterns do not cut it, where they cut the call tree.
 * The page therefore draws the split as shares of the tree's self and
 * total, which are the same figures when nothing is filtered.  Without a
 * split all of the time counts as on a CPU, as in the summary.
 */
#include "export_html_funcs.h"

#include <string.h>

#include "profile_memory.h"
#include "summary_parts.h"

void ulma_html_funcs_split(const struct ulma_walk *w, const struct ulma_profile *p, struct ulma_html_split *out,
			   struct ulma_html_has *has)
{
	struct ulma_summary s = {.profile = p,
				 .cal = {.ns_per_tick = w->ns_per_tick},
				 .overhead_ps = w->cost_ps,
				 .no_correction = w->filter.no_correction};
	memset(out, 0, (size_t)w->nfuncs * sizeof(*out));
	*has = (struct ulma_html_has){.split = p->split != ULMA_PROFILE_SPLIT_NONE,
				      .gil = p->has_gil != 0,
				      .memory = p->memory != NULL};
	for (uint32_t i = 0; i < w->nfuncs && i < p->nfuncs; i++) {
		const struct ulma_func_row *f = &p->funcs[i];
		struct ulma_html_split *o = &out[w->funcs[i].key];
		struct ulma_time_split self, total;
		if (f->calls == 0)
			continue;
		ulma_summary_times(&s, f, &self, &total);
		o->self_cpu += self.on_cpu_ns;
		o->self_runnable += self.runnable_ns;
		o->self_blocked += self.blocked_ns;
		o->self_gil += self.gil_ns;
		o->total_cpu += total.on_cpu_ns;
		o->total_runnable += total.runnable_ns;
		o->total_blocked += total.blocked_ns;
		o->total_gil += total.gil_ns;
		/* a native function's own time is native; a zone's is what is below it */
		o->self_native += f->native == 1 ? self.wall_ns : 0;
		o->total_native += ulma_summary_native_ns(&s, f, &total);
		has->native |= o->total_native > 0;
		if (p->memory && i < p->memory->nfuncs) {
			o->self_bytes += p->memory->funcs[i].alloc_bytes;
			o->total_bytes += p->memory->funcs[i].total_alloc_bytes;
			o->self_native_bytes += p->memory->funcs[i].native_alloc_bytes;
			o->net_bytes += p->memory->funcs[i].alloc_bytes - p->memory->funcs[i].free_bytes;
		}
	}
}

void ulma_html_split_json(struct ulma_sbuf *b, const struct ulma_html_split *x)
{
	const uint64_t v[] = {x->self_cpu,  x->self_runnable, x->self_blocked, x->self_gil,
			      x->total_cpu, x->total_runnable, x->total_blocked, x->total_gil,
			      x->self_native, x->total_native, x->self_bytes, x->total_bytes,
			      x->self_native_bytes, x->net_bytes};
	ulma_sbuf_put(b, "[", 1);
	for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
		if (k)
			ulma_sbuf_put(b, ",", 1);
		ulma_sbuf_u64(b, v[k]);
	}
	ulma_sbuf_put(b, "]", 1);
}
