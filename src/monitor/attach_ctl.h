/* attach_ctl.h - the monitor's side of an attachable process's control file
 * (include/ulma/attach.h): find it, check whose it is, take the process,
 * ask for attach and detach, give the process back.
 *
 * Every refusal comes back as a code with a sentence in `why` that the
 * command prints as is.  Nothing here prints or exits.  Single-threaded.
 */
#ifndef ULMA_ATTACH_CTL_H
#define ULMA_ATTACH_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "ulma/attach.h"

struct ulma_attach_target {
	pid_t pid;
	struct ulma_attach_ctl *ctl; /* the mapped control file */
	char path[320];
	bool claimed; /* monitor_pid is ours */
	int pidfd;    /* readable when the process ends; -1 if the kernel has none */
};

/* Open pid's control file and check that the process exists, is this
 * user's, and is the one that made the file.  Returns 0, -ESRCH (no such
 * process), -EPERM (another user's), -ENOENT (not attachable) or -EPROTO
 * (a foreign or stale file), each with why filled in. */
int ulma_attach_open(pid_t pid, struct ulma_attach_target *t, char *why, size_t cap);

/* Take the process for this monitor.  Returns 0, or -EBUSY when another
 * live monitor holds it, -EAGAIN when its watcher does not answer, or
 * -ESHUTDOWN when it is exiting. */
int ulma_attach_claim(struct ulma_attach_target *t, char *why, size_t cap);

/* Ask the process to trace into the session whose fd this monitor holds,
 * and wait up to timeout_ms.  Returns 0 once it has attached (also when it
 * attached and then ended before we looked: the session holds its events,
 * and ulma_attach_ended tells the rest), -ETIMEDOUT, -ESRCH (it ended
 * unattached) or -EIO (it refused: why holds its reason). */
int ulma_attach_request(struct ulma_attach_target *t, int session_fd, int timeout_ms, char *why,
			size_t cap);

/* Ask the process to stop tracing and wait up to timeout_ms for it.
 * Returns 0, -ETIMEDOUT or -ESRCH. */
int ulma_attach_detach(struct ulma_attach_target *t, int timeout_ms);

/* Has the process ended (or been replaced by another with its pid)? */
bool ulma_attach_ended(const struct ulma_attach_target *t);

/* Give the process back (if claimed) and unmap.  Accepts a zeroed target. */
void ulma_attach_close(struct ulma_attach_target *t);

#endif
