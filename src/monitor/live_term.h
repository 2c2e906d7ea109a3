/* live_term.h - the terminal under the live view: raw keys, alternate
 * screen, and a guaranteed way back.
 *
 * The live view draws on the terminal stderr writes to, and only when it
 * is this process's controlling terminal and the process is in its
 * foreground process group (a background job must not take the keyboard).  Entering the view saves the terminal's modes, switches to
 * the alternate screen (so whatever was on the screen comes back when the
 * view closes), hides the cursor and turns off canonical input and echo.
 * ISIG stays on: Ctrl-C and Ctrl-\ still reach the whole foreground group,
 * so the program gets them as it would untraced.
 *
 * The terminal is restored on every way out this process can see: leaving
 * the view, exit() (an atexit handler), fatal signals (SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL, SIGABRT restore and re-raise), and Ctrl-Z (SIGTSTP leaves
 * the view, stops, and on `fg` enters it again).  Continued in the
 * background (`bg`, after Ctrl-Z or SIGSTOP) the view is lost, and the
 * terminal is neither read nor its modes set: either would stop the whole
 * job again.  SIGKILL is the one way it
 * cannot see; the relay process (live_relay.h) restores the terminal then.
 *
 * There is one terminal per process, so the state is a private singleton
 * the signal handlers can reach.  Functions return 0 or -errno and never
 * print.  Call from the monitor's main thread only.
 */
#ifndef ULMA_LIVE_TERM_H
#define ULMA_LIVE_TERM_H

#include <stddef.h>
#include <stdint.h>
#include <termios.h>

/* Keys the view understands; printable keys are their ASCII code. */
enum ulma_key {
	ULMA_KEY_NONE = -1,
	ULMA_KEY_UP = 0x100,
	ULMA_KEY_DOWN,
	ULMA_KEY_PGUP,
	ULMA_KEY_PGDN,
	ULMA_KEY_HOME,
	ULMA_KEY_END,
};

/* What happened since the last call to ulma_term_events. */
enum ulma_term_event {
	ULMA_TERM_RESIZED = 1u << 0,  /* SIGWINCH: measure and redraw */
	ULMA_TERM_RESUMED = 1u << 1,  /* back from a stop: redraw everything */
	ULMA_TERM_LOST = 1u << 2,     /* continued in the background, or the terminal went away */
};

/* Open stderr's terminal if the view may use it: it is our controlling
 * terminal and we are in its foreground group.  Returns 0, -ENOTTY when there is no such
 * terminal, or -errno. */
int ulma_term_open(void);

/* The modes saved by ulma_term_open (what the program's pseudo-terminal
 * copies), and the current window size.  Valid after a successful open. */
const struct termios *ulma_term_saved_modes(void);
void ulma_term_size(unsigned *rows, unsigned *cols);

/* Does fd refer to the view's terminal?  (Used to choose which of the
 * program's standard streams go through the relay.) */
int ulma_term_is_same(int fd);

/* Switch to the alternate screen and raw keys.  Returns 0 or -errno. */
int ulma_term_enter(void);

/* Back to the saved modes and the main screen.  Idempotent and
 * async-signal-safe. */
void ulma_term_leave(void);

/* Leave the view if entered, close the terminal, remove the handlers. */
void ulma_term_close(void);

/* The terminal's fd for polling, or -1. */
int ulma_term_fd(void);

/* Next key typed, or ULMA_KEY_NONE.  Never blocks. */
int ulma_term_key(void);

/* Pending enum ulma_term_event bits; reading clears them. */
unsigned ulma_term_events(void);

/* Write a frame.  Waits at most a few tens of milliseconds for a slow
 * terminal; returns -EAGAIN if the frame did not fit (the caller then
 * redraws everything next time) or -EIO if the terminal is gone. */
int ulma_term_write(const char *buf, size_t len);

#endif
