/* record_options.h - what every recording command shares.
 *
 * `ulma run`, `ulma record`, `ulma top` and the monitor of ulma.profile()
 * (`ulma __host`) take the same options for the trace and its summary, set
 * up the session and the trace's flags from them alike, and print the
 * summary at the end the same way.  Each command keeps its own options
 * beside these and its own usage text.
 */
#ifndef ULMA_RECORD_OPTIONS_H
#define ULMA_RECORD_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <sys/types.h>

#include "../analysis/summary.h"
#include "../core/session.h"
#include "../core/trace_writer.h"
#include "collector.h"
#include "switches.h"

#define ULMA_RECORD_LINES_MAX 64 /* --lines patterns */

struct ulma_record_options {
	const char *output;  /* -o, --output: the trace file (default ULMA_RECORD_DEFAULT_OUTPUT) */
	bool output_set;     /* -o was given (under mpirun it names a directory) */
	bool kept_earlier;   /* an earlier default trace was renamed ulma.trace.old */
	const char *summary; /* --summary: text (default), json or none */
	bool summary_set;    /* --summary was given (under mpirun the default is none, docs/mpi.md) */
	long limit;          /* --limit: rows of the text summary (default 25) */
	bool may_drop;       /* --may-drop: writers drop events when a ring is full (default: they wait) */
	bool no_c_calls;     /* --no-c-calls */
	bool memory;         /* --memory: allocations and frees (docs/memory.md) */
	uint64_t memory_sample_bytes; /* --memory=sample[:BYTES]: 0 records every allocation */
	bool no_correction;  /* --no-correction */
	int split;           /* --split: enum ulma_split_method, or -1 for the best available (default) */
	const char *lines[ULMA_RECORD_LINES_MAX]; /* --lines, each pattern once, in argv */
	unsigned nlines;
};

/* getopt_long entries of the shared options, with the values that
 * ulma_record_option takes. */
#define ULMA_RECORD_LONG_OPTIONS                                                                           \
	{"output", required_argument, NULL, 'o'}, {"lossless", no_argument, NULL, 'L'},                  \
		{"may-drop", no_argument, NULL, 'D'}, {"no-c-calls", no_argument, NULL, 'C'},            \
		{"no-correction", no_argument, NULL, 'K'}, {"summary", required_argument, NULL, 's'},    \
		{"limit", required_argument, NULL, 'n'}, {"split", required_argument, NULL, 'S'},        \
		{"memory", optional_argument, NULL, 'M'}, {"lines", required_argument, NULL, 'P'}

/* Their lines in the commands' usage texts. */
#define ULMA_RECORD_USAGE_SPLIT                                                                            \
	"  --split M              how to split time on and off the CPU: switches (the scheduler's own\n"   \
	"                         records; the default where allowed) or schedstat (sampled)\n"            \
	"  --may-drop             let the program drop events rather than wait when a ring is full\n"      \
	"                         (the default is to wait: nothing is lost; docs/design.md)\n"      \
	"  --memory[=sample[:BYTES]]  record every allocation and free (Python's allocators and native\n"  \
	"                         code's): bytes per function, leaks, the peak, objects per type; with\n"  \
	"                         sample, one allocation every BYTES (default 256K) on average, bytes\n"  \
	"                         estimated (docs/memory.md)\n"

#define ULMA_RECORD_USAGE_LINES                                                                            \
	"  --lines PATTERN        time every line of the code PATTERN chooses: a function or module name\n"  \
	"                         (pkg.mod.func, Class.method, globs allowed), a file (prog.py, pkg/*.py)\n" \
	"                         or `all` of the program's own files; repeatable (docs/lines.md)\n"

void ulma_record_options_init(struct ulma_record_options *o);

/* The trace file a recording command writes when no -o names one. */
#define ULMA_RECORD_DEFAULT_OUTPUT "ulma.trace"

/* Open the trace at o->output for writing (ulma_trace_writer_open).  The
 * default output replaces no earlier trace: a regular file already at
 * ulma.trace is first renamed ulma.trace.old (an older .old goes), as perf
 * keeps perf.data.old, and a line on stderr says so (o->kept_earlier); a
 * path given with -o
 * was asked for, and is replaced.  Returns 0, or -1 after saying why
 * (nothing was written, and the earlier trace is where it was). */
int ulma_record_open_trace(struct ulma_record_options *o, const struct ulma_trace_meta *meta,
			   struct ulma_trace_writer **out);

/* Remove the trace of a run that never started (ulma_safe_discard), and
 * put back the earlier ulma.trace that ulma_record_open_trace renamed. */
void ulma_record_discard_trace(const struct ulma_record_options *o);

/* Apply getopt's `c` (with its argument) if it is a shared option.  Returns
 * 1 if it was, 0 if it is not one, or -1 after saying what is wrong. */
int ulma_record_option(struct ulma_record_options *o, int c, const char *arg);

/* Write the --lines patterns into a new session, before any program
 * starts tracing into it (ULMA_DEF_LINES_WANTED).  0, or -1 said. */
int ulma_record_define_lines(const struct ulma_record_options *o, struct ulma_session *s);

/* The session settings and trace flags these options ask for. */
void ulma_record_session_config(const struct ulma_record_options *o, struct ulma_session_config *cfg);
uint32_t ulma_record_meta_flags(const struct ulma_record_options *o, bool use_tsc);

/* Print the summary in the asked format (nothing for none). */
void ulma_record_print_summary(FILE *out, const struct ulma_record_options *o, const struct ulma_summary *s);

/* Open the switch records of `pid` (a child that waits to run, or a
 * running process) if --split allows: ULMA_SPLIT_SWITCHES and *sw, or the
 * method to use instead (*sw NULL), after saying why when switches were
 * asked for by name. */
int ulma_record_open_switches(const struct ulma_record_options *o, pid_t pid, bool child,
			      struct ulma_switches **sw);

/* CPU time this process has used so far, in ns. */
uint64_t ulma_record_self_cpu_ns(void);

/* Write END from the collector and close the trace (w may be NULL).
 * Returns 0 or -errno (already said). */
int ulma_record_close_trace(const struct ulma_record_options *o, struct ulma_collector *col, struct ulma_trace_writer *w,
			    const struct ulma_clock_pair *end, int exit_status, uint64_t monitor_cpu_ns);

/* The summary of a finished recording (trace_path NULL: no trace). */
void ulma_record_summary(struct ulma_summary *s, struct ulma_collector *col, const char *trace_path, bool use_tsc,
			 uint64_t hz, const struct ulma_clock_pair *start, const struct ulma_clock_pair *end,
			 int exit_status, uint64_t monitor_cpu_ns, bool no_correction);

#endif
