/* commands.h - the subcommands of the `ulma` program.  Each takes the
 * arguments after its own name and returns the process exit status. */
#ifndef ULMA_COMMANDS_H
#define ULMA_COMMANDS_H

#include <stdbool.h>

int ulma_cmd_run(int argc, char **argv);
int ulma_cmd_report(int argc, char **argv);
int ulma_cmd_relay(int argc, char **argv); /* internal: see live_relay.h */
int ulma_cmd_top(int argc, char **argv);    /* attach.c */
int ulma_cmd_record(int argc, char **argv);
int ulma_cmd_host(int argc, char **argv);   /* attach.c: the monitor of ulma.profile() */
int ulma_cmd_export(int argc, char **argv);
int ulma_cmd_diff(int argc, char **argv);   /* diff.c */
int ulma_cmd_merge(int argc, char **argv);  /* merge.c: an MPI run's rank traces into one */
/* `ulma report TRACE --html OUT`: the html export, unfiltered (export.c). */
int ulma_report_html(const char *trace, const char *output, bool no_correction);

/* Print "ulma: " + message to stderr.  For the program only, never the library. */
void ulma_die_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parse a --limit value (a positive number of rows).  Returns 0, or -1
 * after saying what is wrong. */
int ulma_parse_limit(const char *arg, long *out);

#define ULMA_EXIT_USAGE 2

#endif
