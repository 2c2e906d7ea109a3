/* export.h - `ulma export`: a trace rewritten in another tool's format.
 *
 * Every format reads the trace through the walker (export_walk.h), so the
 * filters mean the same thing everywhere.  File formats write to the stream
 * they are given and never close it; directory formats (CTF) write files
 * into a directory that exists and is empty.  None prints or exits.
 * docs/exports.md describes each format and how it was checked.
 *
 * Each writer returns 0, -EPROTO for a corrupt trace (the reason in
 * st->error), -EIO if the output could not be written, -EFBIG for an
 * output it refuses to write (the reason in why), or another negative
 * errno.
 */
#ifndef ULMA_EXPORT_H
#define ULMA_EXPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "../core/trace_reader.h"
#include "export_walk.h"

struct ulma_export_opts {
	struct ulma_walk_filter filter;
	bool counts; /* folded: call counts instead of self microseconds */
	bool no_compress; /* perfetto: packets as they are, not zlib-compressed batches */
};

struct ulma_export_result {
	struct ulma_trace_status st; /* the reader's status */
	uint64_t events;  /* trace events decoded */
	uint64_t frames;  /* frames kept by the filters */
	bool complete;    /* the trace had its END */
	bool read_error;  /* the trace could not be read (an -EIO not about the output) */
	char why[256];    /* with -EFBIG: why the output was refused (folded: its size) */
};

typedef int (*ulma_export_fn)(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
			      struct ulma_export_result *res);

struct ulma_export_format {
	const char *name;
	const char *about;  /* one line for the usage text */
	ulma_export_fn write; /* NULL: a format this build left out */
	bool directory;     /* writes into dir, not out */
};

/* The formats, ended by a NULL name. */
extern const struct ulma_export_format ulma_export_formats[];

/* The format called name, or NULL.  Its write may be NULL (see above). */
const struct ulma_export_format *ulma_export_find(const char *name);

int ulma_export_pstats(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
		       struct ulma_export_result *res);
int ulma_export_folded(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
		       struct ulma_export_result *res);
int ulma_export_chrome(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
		       struct ulma_export_result *res);
int ulma_export_perfetto(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
			 struct ulma_export_result *res);
int ulma_export_speedscope(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
			   struct ulma_export_result *res);
int ulma_export_callgrind(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
			  struct ulma_export_result *res);
int ulma_export_html(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
		     struct ulma_export_result *res);
int ulma_export_ctf(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
		    struct ulma_export_result *res);
/* export_otf2.c, built only with the OTF2 library (ULMA_HAVE_OTF2); the
 * table lists otf2 either way, with a NULL write where it is missing. */
int ulma_export_otf2(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
		     struct ulma_export_result *res);

/* Shared by the writers: initialise w with o's filter, run it over in with
 * sink, fill res.  The caller frees w (ulma_walk_free) in every case. */
int ulma_export_walk(FILE *in, const struct ulma_export_opts *o, struct ulma_walk *w,
		     const struct ulma_walk_sink *sink, struct ulma_export_result *res);

#endif
