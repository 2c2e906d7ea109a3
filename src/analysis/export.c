/* export.c - the table of export formats and the walk they share. */
#include "export.h"

#include <errno.h>
#include <string.h>

const struct ulma_export_format ulma_export_formats[] = {
	{"pstats", "Python's pstats / cProfile marshal file (pstats.Stats, snakeviz)", ulma_export_pstats, false},
	{"folded", "folded stacks for flamegraph.pl, inferno, speedscope (self us)", ulma_export_folded, false},
	{"chrome", "Chrome trace-event JSON for Perfetto and chrome://tracing", ulma_export_chrome, false},
	{"perfetto", "Perfetto's protobuf trace (TrackEvent): the Perfetto UI and trace processor", ulma_export_perfetto, false},
	{"speedscope", "speedscope JSON, one evented profile per thread", ulma_export_speedscope, false},
	{"callgrind", "callgrind profile for KCachegrind and callgrind_annotate", ulma_export_callgrind, false},
	{"html", "self-contained HTML report: flame graph, function table, timeline", ulma_export_html, false},
	{"ctf", "CTF 1.8 directory for babeltrace2 and Trace Compass (entry/exit events, cpu_id)", ulma_export_ctf, true},
#ifdef ULMA_HAVE_OTF2
	{"otf2", "OTF2 archive directory for Vampir, Scalasca and otf2-print (enter/leave, metrics)", ulma_export_otf2, true},
#else
	{"otf2", "OTF2 archive directory (not in this build: it needs the OTF2 library)", NULL, true},
#endif
	{NULL, NULL, NULL, false},
};

const struct ulma_export_format *ulma_export_find(const char *name)
{
	for (const struct ulma_export_format *f = ulma_export_formats; f->name; f++)
		if (strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

int ulma_export_walk(FILE *in, const struct ulma_export_opts *o, struct ulma_walk *w,
		     const struct ulma_walk_sink *sink, struct ulma_export_result *res)
{
	memset(res, 0, sizeof(*res));
	ulma_walk_init(w, &o->filter);
	int err = ulma_walk_run(w, in, sink, &res->st);
	res->events = res->st.events;
	res->frames = w->frames;
	res->complete = res->st.complete;
	res->read_error = err == -EIO && ferror(in);
	return err;
}
