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

#include "../analysis/summary.h"
#include "../core/session.h"

struct ulma_record_options {
	const char *output;  /* -o, --output: the trace file (default ulma.trace) */
	const char *summary; /* --summary: text (default), json or none */
	long limit;          /* --limit: rows of the text summary (default 25) */
	bool lossless;       /* --lossless */
	bool no_c_calls;     /* --no-c-calls */
	bool no_correction;  /* --no-correction */
};

/* getopt_long entries of the shared options, with the values that
 * ulma_record_option takes. */
#define ULMA_RECORD_LONG_OPTIONS                                                                           \
	{"output", required_argument, NULL, 'o'}, {"lossless", no_argument, NULL, 'L'},                  \
		{"no-c-calls", no_argument, NULL, 'C'}, {"no-correction", no_argument, NULL, 'K'},       \
		{"summary", required_argument, NULL, 's'}, {"limit", required_argument, NULL, 'n'}

void ulma_record_options_init(struct ulma_record_options *o);

/* Apply getopt's `c` (with its argument) if it is a shared option.  Returns
 * 1 if it was, 0 if it is not one, or -1 after saying what is wrong. */
int ulma_record_option(struct ulma_record_options *o, int c, const char *arg);

/* The session settings and trace flags these options ask for. */
void ulma_record_session_config(const struct ulma_record_options *o, struct ulma_session_config *cfg);
uint32_t ulma_record_meta_flags(const struct ulma_record_options *o, bool use_tsc);

/* Print the summary in the asked format (nothing for none). */
void ulma_record_print_summary(FILE *out, const struct ulma_record_options *o, const struct ulma_summary *s);

#endif
