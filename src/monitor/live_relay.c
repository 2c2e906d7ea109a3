/* live_relay.c - the pseudo-terminal and the relay process (see live_relay.h). */
#include "live_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LEAVE_SEQ "\033[0m\033[?7h\033[?25h\033[?1049l" /* as live_term.c */
#define GONE_NOTE "ulma: the monitor ended unexpectedly; the program runs on, its output follows\r\n"

/* Control bytes on the socket between the monitor and the relay. */
#define CTL_RELEASE 'R' /* monitor: the view is closed, let the output through */
#define CTL_FULL 'F'    /* relay: the spool cannot take more; close the view */

/* An unlinked file for the held output: disk, not memory, holds a chatty
 * program's output however long the view stays open. */
static int open_spool(void)
{
	const char *dir = getenv("TMPDIR");
	char path[PATH_MAX];
	if (!dir || !*dir)
		dir = "/tmp";
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	if (snprintf(path, sizeof(path), "%s/ulma-output-XXXXXX", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	unlink(path);
	return fd;
}

/* Bytes written before the first failure (errno says why), or n. */
static size_t write_some(int fd, const char *p, size_t n)
{
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(fd, p + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = ENOSPC;
			break;
		}
		done += (size_t)w;
	}
	return done;
}

static bool write_all(int fd, const char *p, size_t n)
{
	return write_some(fd, p, n) == n;
}

/* Close every descriptor but the ones in keep (ascending). */
static void close_others(const int *keep, int n)
{
	int lo = 3;
	for (int i = 0; i <= n; i++) {
		int hi = i < n ? keep[i] - 1 : INT_MAX;
		if (hi >= lo) {
#ifdef SYS_close_range
			if (syscall(SYS_close_range, (unsigned)lo, (unsigned)hi, 0u) == 0)
				goto next;
#endif
			for (int fd = lo; fd <= hi && fd < 65536; fd++)
				close(fd);
		}
#ifdef SYS_close_range
	next:
#endif
		if (i < n)
			lo = keep[i] + 1;
	}
}

static volatile sig_atomic_t relay_resized;

static void relay_on_winch(int sig)
{
	(void)sig;
	relay_resized = 1;
}

static void follow_size(int out, int master)
{
	struct winsize ws;
	if (ioctl(out, TIOCGWINSZ, &ws) == 0)
		ioctl(master, TIOCSWINSZ, &ws);
}

/* Output the spool could not take: the rest of one read from the master,
 * which is not read again until this has gone to the terminal, so the
 * program waits (its pseudo-terminal fills) rather than lose a byte. */
struct unsaved {
	char bytes[65536];
	size_t len;
	int error; /* why the spool failed; 0 while it has not */
};

/* Copy the held output to the terminal, then what the spool could not
 * take, after a line saying why it could not; the spool is not needed
 * after. */
static void flush_held(int spool, int out, char *buf, size_t cap, struct unsaved *u)
{
	if (u->error) {
		char note[256];
		int n = snprintf(note, sizeof(note),
				 "ulma: cannot hold the program's output in $TMPDIR (%s): the live view closed, "
				 "and the output goes straight through\r\n",
				 strerror(u->error));
		write_all(out, note, (size_t)n < sizeof(note) ? (size_t)n : sizeof(note) - 1);
	}
	if (spool >= 0 && lseek(spool, 0, SEEK_SET) == 0) {
		ssize_t k;
		while ((k = read(spool, buf, cap)) > 0 || (k < 0 && errno == EINTR))
			if (k > 0 && !write_all(out, buf, (size_t)k))
				break;
	}
	write_all(out, u->bytes, u->len);
	u->len = 0;
}

/* Hold a read from the master.  When the spool fails (a full disk, a file
 * size limit), keep the rest and ask the monitor to close the view. */
static void hold_output(int spool, int ctl, const char *p, size_t n, struct unsaved *u)
{
	size_t kept = u->error ? 0 : write_some(spool, p, n);
	if (kept == n)
		return;
	if (!u->error) {
		u->error = errno ? errno : EIO;
		(void)!write(ctl, (char[]){CTL_FULL}, 1);
	}
	memcpy(u->bytes + u->len, p + kept, n - kept);
	u->len += n - kept;
}

/* In the forked child: 0-2 on /dev/null (hold none of the monitor's files
 * or pipes: a reader of its stdout must see the end when the program's
 * copies close, not ours), the master, control socket and spool on 3-5, and
 * nothing else open. */
static void relay_arrange_fds(int master, int ctl, int spool)
{
	int src[3] = {master, ctl, spool};
	for (int i = 0; i < 3; i++) /* out of the way of 0-5 first */
		src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 10);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3 && null >= 0; fd++)
		dup2(null, fd);
	for (int i = 0; i < 3; i++)
		dup2(src[i], 3 + i); /* not close-on-exec */
	static const int keep[3] = {3, 4, 5};
	close_others(keep, 3);
}

static void relay_setup_process(void)
{
	/* SIGXFSZ: a spool over RLIMIT_FSIZE is a failed write, handled, not death */
	static const int ignored[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGPIPE, SIGXFSZ};
	static const int dflt[] = {SIGTSTP, SIGCONT, SIGTTOU, SIGTTIN, SIGUSR1, SIGUSR2,
				   SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_IGN;
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		sigaction(ignored[i], &sa, NULL);
	sa.sa_handler = SIG_DFL;
	for (size_t i = 0; i < sizeof(dflt) / sizeof(dflt[0]); i++)
		sigaction(dflt[i], &sa, NULL);
	sa.sa_handler = relay_on_winch;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGWINCH, &sa, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_NAME, "ulma-relay", 0, 0, 0);
}

/* The relay's whole life: fds 3-5 as relay_arrange_fds left them. */
__attribute__((noreturn)) static void relay_main(const struct termios *modes)
{
	static char buf[65536];
	static struct unsaved unsaved;
	const int master = 3, ctl = 4, spool = 5;
	relay_setup_process();
	/* a blocking descriptor of our own: the monitor's is non-blocking */
	int out = open("/dev/tty", O_WRONLY | O_NOCTTY | O_CLOEXEC);
	bool hold = true, ctl_open = true, master_open = true;
	follow_size(out, master);
	while (master_open || (hold && ctl_open)) {
		if (relay_resized) {
			relay_resized = 0;
			follow_size(out, master);
		}
		/* with unsaved output, the program waits until the view closes */
		bool take = master_open && !(hold && unsaved.len > 0);
		struct pollfd p[2] = {{take ? master : -1, POLLIN, 0}, {ctl_open ? ctl : -1, POLLIN, 0}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents) {
			char c;
			ssize_t k = read(ctl, &c, 1);
			if (k == 1 && c == CTL_RELEASE && hold) {
				flush_held(spool, out, buf, sizeof(buf), &unsaved);
				hold = false;
			} else if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN)) {
				ctl_open = false;
				close(ctl);
				if (hold) {
					/* the monitor died with the view open: undo its raw
					 * mode and alternate screen, then show what we held */
					tcsetattr(out, TCSANOW, modes);
					write_all(out, LEAVE_SEQ, sizeof(LEAVE_SEQ) - 1);
					write_all(out, GONE_NOTE, sizeof(GONE_NOTE) - 1);
					flush_held(spool, out, buf, sizeof(buf), &unsaved);
					hold = false;
				}
			}
		}
		if (take && p[0].revents) {
			ssize_t k = read(master, buf, sizeof(buf));
			if (k > 0 && hold) {
				hold_output(spool, ctl, buf, (size_t)k, &unsaved);
			} else if (k > 0) {
				/* a failing terminal loses output, never blocks the program */
				(void)write_all(out, buf, (size_t)k);
			} else if (k == 0 || (errno != EINTR && errno != EAGAIN)) {
				master_open = false; /* EIO: every copy of the slave is closed */
			}
		}
	}
	if (hold)
		flush_held(spool, out, buf, sizeof(buf), &unsaved);
	_exit(0);
}

int ulma_cmd_relay(int argc, char **argv)
{
	struct termios modes;
	unsigned char *m = (unsigned char *)&modes;
	if (argc != 1 || strlen(argv[0]) != 2 * sizeof(modes))
		return 2;
	for (size_t i = 0; i < sizeof(modes); i++) {
		unsigned v;
		if (sscanf(argv[0] + 2 * i, "%2x", &v) != 1)
			return 2;
		m[i] = (unsigned char)v;
	}
	relay_main(&modes);
	return 0;
}

int ulma_relay_start(struct ulma_relay *r, int tty_fd, const struct termios *modes)
{
	char name[128];
	struct winsize ws;
	int ctlfd[2] = {-1, -1}, slave = -1, spool = -1, err;
	r->pid = 0;
	r->slave = r->ctl = -1;
	r->released = r->hung_up = false;

	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0)
		return -errno;
	if (grantpt(master) != 0 || unlockpt(master) != 0 || ptsname_r(master, name, sizeof(name)) != 0)
		goto err_errno;
	slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		goto err_errno;
	/* the program sees the terminal's own modes and size */
	if (tcsetattr(slave, TCSANOW, modes) != 0)
		goto err_errno;
	if (ioctl(tty_fd, TIOCGWINSZ, &ws) == 0)
		ioctl(master, TIOCSWINSZ, &ws);
	spool = open_spool();
	if (spool < 0) {
		err = spool;
		goto err_close;
	}
	/* both ways: releases go to the relay, a full spool comes back */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctlfd) != 0)
		goto err_errno;
	pid_t pid = fork();
	if (pid < 0)
		goto err_errno;
	if (pid == 0) {
		/* exec ourselves, so that the relay does not share the monitor's
		 * command line (`pkill -f "ulma run"` must leave it alone) */
		char hex[2 * sizeof(*modes) + 1];
		const unsigned char *m = (const unsigned char *)modes;
		for (size_t i = 0; i < sizeof(*modes); i++)
			snprintf(hex + 2 * i, 3, "%02x", m[i]);
		relay_arrange_fds(master, ctlfd[0], spool);
		char *argv[] = {"ulma", "__relay", hex, NULL};
		execv("/proc/self/exe", argv);
		relay_main(modes); /* no exec: the same, in this copy of the monitor */
	}
	close(master);
	close(spool);
	close(ctlfd[0]);
	r->pid = pid;
	r->slave = slave;
	r->ctl = ctlfd[1];
	return 0;

err_errno:
	err = -errno;
err_close:
	if (ctlfd[0] >= 0) {
		close(ctlfd[0]);
		close(ctlfd[1]);
	}
	if (spool >= 0)
		close(spool);
	if (slave >= 0)
		close(slave);
	close(master);
	return err;
}

void ulma_relay_spawned(struct ulma_relay *r)
{
	if (r->slave >= 0)
		close(r->slave);
	r->slave = -1;
}

void ulma_relay_release(struct ulma_relay *r)
{
	if (r->released || r->ctl < 0)
		return;
	r->released = true;
	ssize_t w;
	do
		w = send(r->ctl, (char[]){CTL_RELEASE}, 1, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
}

int ulma_relay_fd(const struct ulma_relay *r)
{
	return r->released || r->hung_up ? -1 : r->ctl;
}

bool ulma_relay_full(struct ulma_relay *r)
{
	char c;
	ssize_t k;
	if (ulma_relay_fd(r) < 0)
		return false;
	while ((k = recv(r->ctl, &c, 1, MSG_DONTWAIT)) == 1)
		if (c == CTL_FULL)
			return true;
	if (k == 0 || (errno != EAGAIN && errno != EINTR))
		r->hung_up = true; /* a relay that died: stop polling for it */
	return false;
}

void ulma_relay_finish(struct ulma_relay *r, int timeout_ms)
{
	if (r->pid <= 0)
		return;
	ulma_relay_spawned(r);
	ulma_relay_release(r);
	close(r->ctl);
	r->ctl = -1;
	const struct timespec nap = {0, 5000000};
	for (int waited = 0; waited <= timeout_ms; waited += 5) {
		pid_t w = waitpid(r->pid, NULL, WNOHANG);
		if (w == r->pid || (w < 0 && errno != EINTR))
			break;
		nanosleep(&nap, NULL);
	}
	r->pid = 0;
}
