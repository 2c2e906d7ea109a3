/* pid_names.h - what to call each process of a trace.
 *
 * A small table from pid to name (the command line the monitor read when
 * the process first wrote, as a PROCESS chunk carries it).  The profile
 * and the export walker each keep one, so the summary, the JSON report,
 * the live view and the exporters name processes alike; a pid with no
 * entry is shown by its number.  Lookups are linear: a trace has a few
 * processes, rarely hundreds.  Single-threaded; the table owns its copies.
 */
#ifndef ULMA_PID_NAMES_H
#define ULMA_PID_NAMES_H

#include <stddef.h>
#include <stdint.h>

struct ulma_pid_names {
	uint32_t *pid;
	char **name; /* NUL-terminated, owned */
	uint32_t count;
	uint32_t cap;
};

/* Name `pid` (a later name replaces an earlier).  0 or -ENOMEM. */
int ulma_pid_names_set(struct ulma_pid_names *t, uint32_t pid, const char *name, size_t len);

/* The name of `pid`, or NULL. */
const char *ulma_pid_names_get(const struct ulma_pid_names *t, uint32_t pid);

void ulma_pid_names_free(struct ulma_pid_names *t);

#endif
