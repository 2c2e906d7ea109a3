/* cli_stubs.h - what main.c gives the `ulma` program's commands, for the
 * fuzz targets that run commands without main(): ulma_die_msg counts its
 * messages instead of printing them (fuzz_messages), ulma_parse_limit
 * parses as the program does.  Include in one file of a target. */
#ifndef ULMA_FUZZ_CLI_STUBS_H
#define ULMA_FUZZ_CLI_STUBS_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "monitor/commands.h"

static unsigned fuzz_messages;

void ulma_die_msg(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap); /* formatted all the same: the sanitizers see the arguments */
	va_end(ap);
	fuzz_messages++;
}

int ulma_parse_limit(const char *arg, long *out)
{
	char *end;
	*out = strtol(arg, &end, 10);
	return *end || *out <= 0 ? -1 : 0;
}

#endif
