/* live_term.c - raw keys, alternate screen and their restoration (see live_term.h). */
#include "live_term.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* alternate screen, hidden cursor, no auto-wrap (a long line is cut, never wraps) */
#define ENTER_SEQ "\033[?1049h\033[?25l\033[?7l\033[H\033[2J"
#define LEAVE_SEQ "\033[0m\033[?7h\033[?25h\033[?1049l"
#define WRITE_BUDGET_MS 50

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define NFATAL (sizeof(fatal_signals) / sizeof(fatal_signals[0]))

/* The one terminal.  The flags are written by signal handlers. */
static struct {
	int fd;
	dev_t rdev;
	struct termios saved;
	volatile sig_atomic_t entered;
	volatile sig_atomic_t resized, resumed, lost;
	bool handlers, atexit_done;
	struct sigaction old_fatal[NFATAL], old_winch, old_cont, old_tstp;
	unsigned char pending[32]; /* bytes of an escape sequence split across reads */
	size_t npending;
	unsigned pending_age; /* calls an incomplete sequence has waited */
} term = {.fd = -1};

static void write_all_raw(int fd, const char *s, size_t n)
{
	/* async-signal-safe: write only; a full terminal loses the sequence */
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		if (w > 0) {
			s += w;
			n -= (size_t)w;
		} else if (w < 0 && errno == EINTR) {
			continue;
		} else {
			struct pollfd p = {fd, POLLOUT, 0};
			if (w < 0 && errno == EAGAIN && poll(&p, 1, WRITE_BUDGET_MS) > 0)
				continue;
			return;
		}
	}
}

/* Are we the terminal's foreground job?  A background job that reads the
 * terminal is stopped by SIGTTIN, its whole process group with it (the
 * relay and the program too), and one that sets its modes by SIGTTOU. */
static int in_foreground(void)
{
	return tcgetpgrp(term.fd) == getpgrp();
}

static int raw_modes(void)
{
	struct termios t = term.saved;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO | IEXTEN); /* ISIG stays: Ctrl-C reaches the program */
	t.c_iflag &= ~(tcflag_t)(IXON | ICRNL);             /* Ctrl-S must not freeze the monitor */
	/* VMIN 1: with O_NONBLOCK an empty read then fails with EAGAIN, and
	 * 0 means hang-up (with VMIN 0 it would also mean "nothing yet") */
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	return tcsetattr(term.fd, TCSANOW, &t) == 0 ? 0 : -errno;
}

void ulma_term_leave(void)
{
	if (!term.entered || term.fd < 0)
		return;
	term.entered = 0;
	int e = errno;
	/* In the background (continued by `bg` after a SIGSTOP, which on_tstp
	 * never sees) the modes are the foreground job's to set: only leave the
	 * alternate screen, even under `stty tostop`, rather than be stopped. */
	sigset_t ttou, old;
	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	sigprocmask(SIG_BLOCK, &ttou, &old);
	write_all_raw(term.fd, LEAVE_SEQ, sizeof(LEAVE_SEQ) - 1);
	if (in_foreground())
		tcsetattr(term.fd, TCSANOW, &term.saved);
	sigprocmask(SIG_SETMASK, &old, NULL);
	errno = e;
}

static void on_fatal(int sig)
{
	/* SA_RESETHAND made the action default again: restore, then die of it */
	ulma_term_leave();
	raise(sig);
}

static void on_winch(int sig)
{
	(void)sig;
	term.resized = 1;
}

static void on_cont(int sig)
{
	(void)sig;
	term.resumed = 1;
	/* continued in the background after a stop on_tstp did not see (SIGSTOP) */
	if (term.entered && !in_foreground())
		term.lost = 1;
}

static void on_tstp(int sig)
{
	int e = errno;
	int was = term.entered;
	struct sigaction dfl = {.sa_handler = SIG_DFL}, self = {.sa_handler = on_tstp};
	sigset_t set;
	(void)sig;
	ulma_term_leave();
	sigemptyset(&dfl.sa_mask);
	sigemptyset(&self.sa_mask);
	sigaction(SIGTSTP, &dfl, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGTSTP);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(SIGTSTP); /* stops here until SIGCONT */
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigaction(SIGTSTP, &self, NULL);
	if (was) {
		/* `bg` puts us in the background: touching the modes would stop us again */
		if (in_foreground()) {
			raw_modes();
			write_all_raw(term.fd, ENTER_SEQ, sizeof(ENTER_SEQ) - 1);
			term.entered = 1;
			term.resumed = 1;
		} else {
			term.lost = 1;
		}
	}
	errno = e;
}

static void install_handlers(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	for (size_t i = 0; i < NFATAL; i++)
		sigaction(fatal_signals[i], &sa, &term.old_fatal[i]);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_winch;
	sigaction(SIGWINCH, &sa, &term.old_winch);
	sa.sa_handler = on_cont;
	sigaction(SIGCONT, &sa, &term.old_cont);
	sa.sa_handler = on_tstp;
	sigaction(SIGTSTP, &sa, &term.old_tstp);
	term.handlers = true;
}

static void remove_handlers(void)
{
	if (!term.handlers)
		return;
	for (size_t i = 0; i < NFATAL; i++)
		sigaction(fatal_signals[i], &term.old_fatal[i], NULL);
	sigaction(SIGWINCH, &term.old_winch, NULL);
	sigaction(SIGCONT, &term.old_cont, NULL);
	sigaction(SIGTSTP, &term.old_tstp, NULL);
	term.handlers = false;
}

int ulma_term_open(void)
{
	struct stat tty, err;
	if (term.fd >= 0)
		return -EBUSY;
	char path[256];
	if (!isatty(STDERR_FILENO) || fstat(STDERR_FILENO, &err) != 0 ||
	    ttyname_r(STDERR_FILENO, path, sizeof(path)) != 0)
		return -ENOTTY;
	/* stderr's terminal, opened anew: our own non-blocking file description.
	 * (/dev/tty would do, but its st_rdev names /dev/tty, not the terminal.) */
	int fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -ENOTTY;
	int r = 0;
	if (fstat(fd, &tty) != 0 || !S_ISCHR(tty.st_mode) || tty.st_rdev != err.st_rdev)
		r = -ENOTTY;
	else if (tcgetsid(fd) != getsid(0))
		r = -ENOTTY; /* not our controlling terminal: its keys are not ours to take */
	else if (tcgetpgrp(fd) != getpgrp())
		r = -ENOTTY; /* a background job must not take the keyboard */
	else if (tcgetattr(fd, &term.saved) != 0)
		r = -errno;
	if (r) {
		close(fd);
		return r;
	}
	term.fd = fd;
	term.rdev = tty.st_rdev;
	term.resized = term.resumed = term.lost = 0;
	term.npending = 0;
	return 0;
}

const struct termios *ulma_term_saved_modes(void)
{
	return &term.saved;
}

void ulma_term_size(unsigned *rows, unsigned *cols)
{
	struct winsize ws;
	*rows = 24;
	*cols = 80;
	if (term.fd >= 0 && ioctl(term.fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

int ulma_term_is_same(int fd)
{
	struct stat st;
	return term.fd >= 0 && isatty(fd) && fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) &&
	       st.st_rdev == term.rdev;
}

static void leave_at_exit(void)
{
	ulma_term_leave();
}

int ulma_term_enter(void)
{
	if (term.fd < 0)
		return -EBADF;
	if (term.entered)
		return 0;
	if (!term.atexit_done) {
		atexit(leave_at_exit);
		term.atexit_done = true;
	}
	if (!term.handlers)
		install_handlers();
	int r = raw_modes();
	if (r)
		return r;
	write_all_raw(term.fd, ENTER_SEQ, sizeof(ENTER_SEQ) - 1);
	term.entered = 1;
	return 0;
}

void ulma_term_close(void)
{
	ulma_term_leave();
	remove_handlers();
	if (term.fd >= 0)
		close(term.fd);
	term.fd = -1;
}

int ulma_term_fd(void)
{
	return term.fd;
}

unsigned ulma_term_events(void)
{
	unsigned ev = 0;
	if (term.resized) {
		term.resized = 0;
		ev |= ULMA_TERM_RESIZED;
	}
	if (term.resumed) {
		term.resumed = 0;
		ev |= ULMA_TERM_RESUMED;
	}
	if (term.lost)
		ev |= ULMA_TERM_LOST; /* sticky */
	return ev;
}

/* Decode one key from the front of the pending bytes.  Returns the key and
 * the bytes it used through *used, or ULMA_KEY_NONE with *used = 0 if the
 * bytes are the start of a sequence that has not fully arrived. */
static int decode(const unsigned char *b, size_t n, size_t *used)
{
	*used = 1;
	if (b[0] != 0x1b)
		return b[0];
	if (n == 1)
		return 0x1b; /* a lone Escape */
	if (b[1] != '[' && b[1] != 'O') {
		return 0x1b;
	}
	/* CSI or SS3: parameters then one final byte in 0x40-0x7e */
	size_t i = 2;
	while (i < n && b[i] >= 0x20 && b[i] < 0x40)
		i++;
	if (i == n) {
		*used = 0;
		return ULMA_KEY_NONE;
	}
	*used = i + 1;
	switch (b[i]) {
	case 'A':
		return ULMA_KEY_UP;
	case 'B':
		return ULMA_KEY_DOWN;
	case 'H':
		return ULMA_KEY_HOME;
	case 'F':
		return ULMA_KEY_END;
	case '~':
		if (i == 3 && b[2] == '5')
			return ULMA_KEY_PGUP;
		if (i == 3 && b[2] == '6')
			return ULMA_KEY_PGDN;
		if (i == 3 && (b[2] == '1' || b[2] == '7'))
			return ULMA_KEY_HOME;
		if (i == 3 && (b[2] == '4' || b[2] == '8'))
			return ULMA_KEY_END;
		return ULMA_KEY_NONE;
	default:
		return ULMA_KEY_NONE; /* left, right, function keys: unused */
	}
}

int ulma_term_key(void)
{
	if (term.fd < 0 || term.lost)
		return ULMA_KEY_NONE;
	/* The keyboard belongs to the foreground job: in the background (or
	 * on a terminal that hung up, where tcgetpgrp fails) the view is lost,
	 * and a read would stop us, and the program with us, by SIGTTIN. */
	if (!in_foreground()) {
		term.lost = 1;
		term.npending = 0;
		return ULMA_KEY_NONE;
	}
	for (;;) {
		if (term.npending > 0) {
			size_t used;
			int k = decode(term.pending, term.npending, &used);
			if (used > 0) {
				memmove(term.pending, term.pending + used, term.npending - used);
				term.npending -= used;
				term.pending_age = 0;
				if (k != ULMA_KEY_NONE)
					return k;
				continue;
			}
		}
		if (term.npending == sizeof(term.pending))
			term.npending = 0; /* an absurd sequence: forget it */
		ssize_t r = read(term.fd, term.pending + term.npending, sizeof(term.pending) - term.npending);
		if (r > 0) {
			term.npending += (size_t)r;
			continue;
		}
		if (r == 0 || (errno != EAGAIN && errno != EINTR))
			term.lost = 1; /* hung up */
		if (term.npending > 0 && ++term.pending_age > 2)
			term.npending = 0; /* a sequence that never finished: drop it */
		return ULMA_KEY_NONE;
	}
}

int ulma_term_write(const char *buf, size_t len)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (len > 0) {
		ssize_t w = write(term.fd, buf, len);
		if (w > 0) {
			buf += w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct timespec t1;
			clock_gettime(CLOCK_MONOTONIC, &t1);
			long spent = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
			struct pollfd p = {term.fd, POLLOUT, 0};
			if (spent < WRITE_BUDGET_MS && poll(&p, 1, (int)(WRITE_BUDGET_MS - spent)) > 0)
				continue;
			return -EAGAIN;
		}
		term.lost = 1;
		return -EIO;
	}
	return 0;
}
