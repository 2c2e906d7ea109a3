/* proc_name.h - what to call a traced process.
 *
 * A process is named by its command line as /proc/PID/cmdline gives it,
 * arguments joined by spaces, without the interpreter: "python3 -m
 * pkg.tool x" shows as "-m pkg.tool x", "/usr/bin/python3.12 work.py" as
 * "work.py".  `ulma run` starts the program as "python3 -c <boot code>
 * work.py" (src/monitor/run.c): a -c whose code imports ulma._boot is left
 * out too, so that shows as "work.py".  The script or program is named by
 * its file name: "python3 /srv/app/work.py" shows as "work.py".  A
 * traced process names itself, reading its own command line as its first
 * thread attaches to the session (src/runtime/threads.c, a
 * ULMA_DEF_PROCESS definition); the collector keeps the name in the
 * profile and the trace (src/analysis/pid_names.h), so a process that has
 * ended keeps the name it had, its parent's pid with it.  It reads
 * /proc/PID itself only for a process that could not write its name (the
 * definition area full).  Control bytes are left in: the caller cleans
 * what it prints.  No allocation; safe in a signal handler.
 */
#ifndef ULMA_PROC_NAME_H
#define ULMA_PROC_NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ULMA_PROC_NAME_MAX 256

/* The name of process `pid`, read now into `out`; "?" and false if it
 * cannot be read (gone, or not ours) or is empty. */
bool ulma_proc_name_read(uint32_t pid, char *out, size_t cap);

/* The parent of process `pid` (/proc/PID/stat's ppid), read now; 0 if
 * it cannot be read.  A process whose parent has ended has been handed to
 * init or a subreaper: read it while the process most likely starts. */
uint32_t ulma_proc_ppid_read(uint32_t pid);

/* Format a raw cmdline (NUL-separated arguments, `len` bytes) into `out`. */
void ulma_proc_name_format(const char *cmdline, size_t len, char *out, size_t cap);

#endif
