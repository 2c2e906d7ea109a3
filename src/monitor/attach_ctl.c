/* attach_ctl.c - find, check, claim and drive an attachable process (see attach_ctl.h). */
#include "attach_ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../core/clock.h"

#define WATCHER_SILENT_NS UINT64_C(1000000000) /* twenty missed looks */
#define STEP_MS 5

__attribute__((format(printf, 4, 5))) static int refuse(int code, char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
	return code;
}

static void nap_ms(int ms)
{
	struct timespec ts = {0, (long)ms * 1000000L};
	nanosleep(&ts, NULL);
}

static bool pid_alive(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

/* Try the directory the rule names, then the other one (a user runtime
 * directory may have come or gone between the two processes' starts). */
static int open_file(pid_t pid, struct ulma_attach_target *t)
{
	char dir[256];
	if (ulma_attach_dir(getuid(), dir, sizeof(dir)) < 0)
		return -ENOENT;
	snprintf(t->path, sizeof(t->path), "%s/%d", dir, (int)pid);
	int fd = open(t->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		char alt[320];
		if (strncmp(dir, "/tmp/", 5) == 0)
			snprintf(alt, sizeof(alt), "/run/user/%u/ulma/%d", (unsigned)getuid(), (int)pid);
		else
			snprintf(alt, sizeof(alt), "/tmp/ulma-%u/%d", (unsigned)getuid(), (int)pid);
		fd = open(alt, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			snprintf(t->path, sizeof(t->path), "%s", alt);
	}
	return fd < 0 ? -errno : fd;
}

int ulma_attach_open(pid_t pid, struct ulma_attach_target *t, char *why, size_t cap)
{
	char proc[64];
	struct stat st;
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->pidfd = -1;
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	if (pid <= 0 || stat(proc, &st) != 0)
		return refuse(-ESRCH, why, cap, "no process %d", (int)pid);
	if (st.st_uid != getuid())
		return refuse(-EPERM, why, cap,
			      "process %d belongs to another user (uid %u); ulma attaches only to your own processes",
			      (int)pid, (unsigned)st.st_uid);
	int fd = open_file(pid, t);
	if (fd < 0)
		return refuse(-ENOENT, why, cap,
			      "process %d is not attachable: start it with `ulma run --attachable`, or call "
			      "ulma.attachable() in it",
			      (int)pid);
	struct ulma_attach_ctl *c = MAP_FAILED;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() && !(st.st_mode & 077) &&
	    st.st_size == (off_t)sizeof(*c))
		c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (c == MAP_FAILED)
		return refuse(-EPROTO, why, cap, "%s is not an ulma control file of yours (mode 0600)", t->path);
	t->ctl = c;
	if (c->magic != ULMA_ATTACH_MAGIC || c->version != ULMA_ATTACH_VERSION || c->size != sizeof(*c))
		return refuse(-EPROTO, why, cap, "%s was made by another version of ulma", t->path);
	if (c->pid != (uint32_t)pid || c->uid != getuid() || c->start_time != ulma_attach_start_time(pid))
		return refuse(-ENOENT, why, cap,
			      "process %d is not attachable (%s is left over from an earlier process %d)", (int)pid,
			      t->path, (int)pid);
#ifdef SYS_pidfd_open
	t->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
	return 0;
}

int ulma_attach_claim(struct ulma_attach_target *t, char *why, size_t cap)
{
	struct ulma_attach_ctl *c = t->ctl;
	uint32_t me = (uint32_t)getpid(), holder = 0;
	if (atomic_load(&c->state) == ULMA_STATE_EXITING)
		return refuse(-ESHUTDOWN, why, cap, "process %d is exiting", (int)t->pid);
	while (!atomic_compare_exchange_strong(&c->monitor_pid, &holder, me)) {
		/* holder now holds the current value */
		if (pid_alive((pid_t)holder))
			return refuse(-EBUSY, why, cap, "process %d is already traced by another ulma (pid %u)",
				      (int)t->pid, holder);
		/* a monitor that died without giving it back: take it over */
	}
	t->claimed = true;
	/* An old stamp is no verdict: the watcher may have spent a while in an
	 * action (a detach waits for the GIL of a busy program).  It does not
	 * answer when it stamps nothing new for a whole silent window. */
	uint64_t seen = atomic_load(&c->watcher_ns), since = ulma_clock_monotonic_ns();
	while (ulma_clock_monotonic_ns() > seen + WATCHER_SILENT_NS &&
	       ulma_clock_monotonic_ns() - since < WATCHER_SILENT_NS && !ulma_attach_ended(t)) {
		nap_ms(STEP_MS);
		seen = atomic_load(&c->watcher_ns);
	}
	if (ulma_clock_monotonic_ns() > seen + WATCHER_SILENT_NS)
		return refuse(-EAGAIN, why, cap,
			      "process %d does not answer: its ulma thread is not running (is it stopped, or a "
			      "child forked from an attachable process?)",
			      (int)t->pid);
	return 0;
}

/* Wait until the state is one of a and b, the process ends, or the time is up. */
static int wait_state(struct ulma_attach_target *t, uint32_t a, uint32_t b, int timeout_ms)
{
	for (int waited = 0;; waited += STEP_MS) {
		uint32_t s = atomic_load(&t->ctl->state);
		if (s == a || s == b)
			return 0;
		if (ulma_attach_ended(t))
			return -ESRCH;
		if (waited >= timeout_ms)
			return -ETIMEDOUT;
		nap_ms(STEP_MS);
	}
}

int ulma_attach_request(struct ulma_attach_target *t, int session_fd, int timeout_ms, char *why,
			size_t cap)
{
	struct ulma_attach_ctl *c = t->ctl;
	/* a monitor that died a moment ago may still be attached: let it go first */
	atomic_store(&c->want, ULMA_WANT_DETACHED);
	int r = wait_state(t, ULMA_STATE_DETACHED, ULMA_STATE_EXITING, timeout_ms);
	if (r == 0 && atomic_load(&c->state) == ULMA_STATE_EXITING)
		r = -ESRCH;
	uint64_t attaches_before = atomic_load(&c->attaches);
	if (r == 0) {
		atomic_store(&c->session_fd, (uint32_t)session_fd);
		atomic_store(&c->want, ULMA_WANT_ATTACHED); /* seq_cst: session_fd is visible first */
		r = wait_state(t, ULMA_STATE_ATTACHED, ULMA_STATE_FAILED, timeout_ms);
	}
	/* The program counts an attach before it says ATTACHED, and may be
	 * exiting (or gone) by the time we look: it was attached all the same,
	 * and what it traced is in the session.  We hold the claim, so the
	 * count moved for us. */
	if ((r == 0 && atomic_load(&c->state) == ULMA_STATE_ATTACHED) ||
	    atomic_load(&c->attaches) != attaches_before)
		return 0;
	atomic_store(&c->want, ULMA_WANT_DETACHED);
	if (r == -ESRCH)
		return refuse(r, why, cap, "process %d ended", (int)t->pid);
	if (r == -ETIMEDOUT)
		return refuse(r, why, cap, "process %d did not attach within %d s", (int)t->pid, timeout_ms / 1000);
	char reason[sizeof(c->error) + 1];
	memcpy(reason, c->error, sizeof(c->error));
	reason[sizeof(c->error)] = 0;
	return refuse(-EIO, why, cap, "process %d could not attach: %s", (int)t->pid, reason);
}

int ulma_attach_detach(struct ulma_attach_target *t, int timeout_ms)
{
	atomic_store(&t->ctl->want, ULMA_WANT_DETACHED);
	int r = wait_state(t, ULMA_STATE_DETACHED, ULMA_STATE_EXITING, timeout_ms);
	return r;
}

bool ulma_attach_ended(const struct ulma_attach_target *t)
{
	if (t->pidfd >= 0) {
		struct pollfd p = {t->pidfd, POLLIN, 0};
		return poll(&p, 1, 0) > 0;
	}
	/* no pidfd: gone, replaced, or a zombie its parent has not reaped */
	if (!pid_alive(t->pid) || ulma_attach_start_time(t->pid) != t->ctl->start_time)
		return true;
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)t->pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	return p && (p[2] == 'Z' || p[2] == 'X');
}

void ulma_attach_close(struct ulma_attach_target *t)
{
	if (t->ctl && t->ctl != MAP_FAILED) {
		if (t->claimed) {
			uint32_t me = (uint32_t)getpid();
			atomic_compare_exchange_strong(&t->ctl->monitor_pid, &me, 0);
		}
		munmap(t->ctl, sizeof(*t->ctl));
	}
	if (t->pidfd >= 0)
		close(t->pidfd);
	memset(t, 0, sizeof(*t));
	t->pidfd = -1;
}
