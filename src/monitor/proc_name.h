/* proc_name.h - what to call a traced process in the live view.
 *
 * A process is named by its command line as /proc/PID/cmdline gives it,
 * arguments joined by spaces, without the interpreter: "python3 -m
 * pkg.tool x" shows as "-m pkg.tool x", "/usr/bin/python3.12 work.py" as
 * "work.py".  `ulma run` starts the program as "python3 -c <boot code>
 * work.py" (src/monitor/run.c): a -c whose code imports ulma._boot is left
 * out too, so that shows as "work.py".  The script or program is named by
 * its file name: "python3 /srv/app/work.py" shows as "work.py".  Names are read once per pid, the first time it is asked for,
 * so a process that has ended keeps the name it had; one that ended before
 * it was asked for is "?".  Control bytes are left in: the caller cleans
 * what it prints.
 *
 * The cache holds up to ULMA_PROC_NAMES pids; beyond that, the oldest
 * entries are reused.  Single-threaded; no allocation, no errors.
 */
#ifndef ULMA_PROC_NAME_H
#define ULMA_PROC_NAME_H

#include <stddef.h>
#include <stdint.h>

#define ULMA_PROC_NAMES 256
#define ULMA_PROC_NAME_MAX 96

struct ulma_proc_names {
	uint32_t pid[ULMA_PROC_NAMES];
	char name[ULMA_PROC_NAMES][ULMA_PROC_NAME_MAX];
	uint32_t count; /* entries used, at most ULMA_PROC_NAMES */
	uint32_t next;  /* the entry to reuse when full */
};

/* The name of `pid`: from the cache, or read now and cached. */
const char *ulma_proc_name(struct ulma_proc_names *names, uint32_t pid);

/* Format a raw cmdline (NUL-separated arguments, `len` bytes) into `out`. */
void ulma_proc_name_format(const char *cmdline, size_t len, char *out, size_t cap);

#endif
