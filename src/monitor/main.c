/* main.c - entry point of the `ulma` program: dispatch to a subcommand. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

#ifndef ULMA_VERSION
#define ULMA_VERSION "0.0.0"
#endif

static const char usage[] =
	"usage: ulma <command> [options]\n"
	"\n"
	"commands:\n"
	"  run [options] script.py [args...]   trace a Python program, print a summary, write a trace\n"
	"  run [options] -m module [args...]   the same for a module\n"
	"  top PID [--once]                    live table of a running attachable process (docs/live.md)\n"
	"  record PID -d SECONDS [-o FILE]     trace a running attachable process for a while\n"
	"  report TRACE [--format text|json] [--limit N]\n"
	"                                      summarise a trace file\n"
	"  export TRACE --format FMT -o OUT    write a trace for another tool: pstats, folded, chrome,\n"
	"                                      perfetto, speedscope, callgrind, ctf, html (docs/exports.md)\n"
	"  diff A.trace B.trace [--format text|json] [--html OUT] [--fail-above PCT%]\n"
	"                                      what changed between two runs, per function (docs/diff.md)\n"
	"  merge DIR -o OUT.trace              merge an MPI run's rank traces into one (docs/mpi.md)\n"
	"  version                             print the version\n"
	"\n"
	"`ulma <command> --help` describes a command's options.\n";

void ulma_die_msg(const char *fmt, ...)
{
	va_list ap;
	fputs("ulma: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int ulma_parse_limit(const char *arg, long *out)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (end == arg || *end || v <= 0) {
		ulma_die_msg("--limit takes a positive number, not '%s'", arg);
		return -1;
	}
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return ULMA_EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "run") == 0)
		return ulma_cmd_run(argc - 2, argv + 2);
	if (strcmp(cmd, "report") == 0)
		return ulma_cmd_report(argc - 2, argv + 2);
	if (strcmp(cmd, "__relay") == 0) /* the live view's output relay, started by run */
		return ulma_cmd_relay(argc - 2, argv + 2);
	if (strcmp(cmd, "top") == 0)
		return ulma_cmd_top(argc - 2, argv + 2);
	if (strcmp(cmd, "record") == 0)
		return ulma_cmd_record(argc - 2, argv + 2);
	if (strcmp(cmd, "__host") == 0) /* the monitor of `with ulma.profile():`, started by the program */
		return ulma_cmd_host(argc - 2, argv + 2);
	if (strcmp(cmd, "export") == 0)
		return ulma_cmd_export(argc - 2, argv + 2);
	if (strcmp(cmd, "diff") == 0)
		return ulma_cmd_diff(argc - 2, argv + 2);
	if (strcmp(cmd, "merge") == 0)
		return ulma_cmd_merge(argc - 2, argv + 2);
	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
		printf("ulma %s\n", ULMA_VERSION);
		return 0;
	}
	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	ulma_die_msg("unknown command '%s'", cmd);
	fputs(usage, stderr);
	return ULMA_EXIT_USAGE;
}
