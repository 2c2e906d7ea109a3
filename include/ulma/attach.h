/* attach.h - the control file between an attachable program and a monitor.
 *
 * A program made attachable (`ulma run --attachable`, `ulma.attachable()`)
 * runs untraced.  It creates one small file, mode 0600, in a directory
 * only its user can enter (ulma_attach_dir), named by its pid, and maps it.
 * A thread of its own (no GIL, no Python) reads the file's control words
 * 20 times a second.  A monitor of the same user (`ulma top PID`,
 * `ulma record PID`) maps the same file and:
 *
 *   1. takes the process by a compare-and-swap of monitor_pid from 0 (or
 *      from a monitor that no longer exists) to its own pid: a second
 *      monitor fails here;
 *   2. creates a session (shm.h), stores its fd number in session_fd, and
 *      sets want = ULMA_WANT_ATTACHED;
 *   3. the program's thread takes the GIL (a safe point: between two
 *      bytecodes, or in a call that released it), opens the session
 *      through /proc/<monitor_pid>/fd/<session_fd>, starts tracing every
 *      thread and sets state = ULMA_STATE_ATTACHED (or ULMA_STATE_FAILED
 *      with a reason in `error`);
 *   4. to detach, the monitor sets want = ULMA_WANT_DETACHED.  The program
 *      stops tracing and sets state = ULMA_STATE_DETACHED.  The monitor
 *      drains the rings, then sets monitor_pid back to 0.
 *
 * If the monitor dies while attached (its heartbeat in the session is more
 * than 2 s old, or its pid is gone), the program detaches by itself and
 * frees the claim.  The monitor checks pid, uid and start_time against
 * /proc/<pid>, so a stale file left by a killed program whose pid was
 * reused is never mistaken for the new process.
 *
 * Every field is an integer; the file is exactly sizeof(struct
 * ulma_attach_ctl) bytes.
 */
#ifndef ULMA_ATTACH_H
#define ULMA_ATTACH_H

#include <assert.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define ULMA_ATTACH_MAGIC UINT64_C(0x3154544d4c5500) /* "\0ULMTT1" */
#define ULMA_ATTACH_VERSION 1u
#define ULMA_ATTACH_POLL_NS 50000000L /* the program looks 20 times a second */

enum ulma_attach_want {
	ULMA_WANT_DETACHED = 0,
	ULMA_WANT_ATTACHED = 1,
};

enum ulma_attach_state {
	ULMA_STATE_DETACHED = 0,
	ULMA_STATE_ATTACHED = 1,
	ULMA_STATE_FAILED = 2,  /* the last attach failed: see error */
	ULMA_STATE_EXITING = 3, /* the program is ending: no more attaching */
};

struct ulma_attach_ctl {
	uint64_t magic;
	uint32_t version;
	uint32_t size;          /* sizeof(struct ulma_attach_ctl) */
	uint32_t pid;
	uint32_t uid;
	uint64_t start_time;    /* field 22 of /proc/<pid>/stat: tells a reused pid apart */
	uint32_t python_hex;    /* PY_VERSION_HEX of the program */
	uint32_t reserved;
	_Atomic uint32_t monitor_pid; /* the monitor that holds the process, 0 if none */
	_Atomic uint32_t want;        /* enum ulma_attach_want, written by the monitor */
	_Atomic uint32_t state;       /* enum ulma_attach_state, written by the program */
	_Atomic uint32_t session_fd;  /* the session's fd in the monitor */
	_Atomic uint64_t attaches;    /* attaches done, for the curious */
	_Atomic uint64_t watcher_ns;  /* CLOCK_MONOTONIC of the program's last look */
	char error[192];              /* NUL-terminated reason for ULMA_STATE_FAILED */
};
static_assert(sizeof(struct ulma_attach_ctl) == 264, "control file layout");

/* The directory of a user's control files: /run/user/<uid>/ulma when the
 * user's runtime directory exists, else /tmp/ulma-<uid>.  Both sides apply
 * the same rule, whatever their environments say.  Returns 0 or -1. */
static inline int ulma_attach_dir(uid_t uid, char *buf, size_t cap)
{
	char run[64];
	struct stat st;
	snprintf(run, sizeof(run), "/run/user/%u", (unsigned)uid);
	int n;
	if (stat(run, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid)
		n = snprintf(buf, cap, "%s/ulma", run);
	else
		n = snprintf(buf, cap, "/tmp/ulma-%u", (unsigned)uid);
	return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* Field 22 of /proc/<pid>/stat: the process's start time in clock ticks
 * since boot, 0 if unknown.  With the pid it names a process uniquely. */
static inline uint64_t ulma_attach_start_time(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *p = buf + n;
	while (p > buf && *p != ')') /* the command name may hold spaces and parentheses */
		p--;
	unsigned long long v = 0;
	if (*p == ')' && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
				&v) == 1)
		return v;
	return 0;
}

#endif
