/* live_relay.h - hold the program's terminal output while the live view
 * owns the screen, and give it back afterwards.
 *
 * While the view is open, the program's stdout and stderr, where they are
 * the terminal, are a pseudo-terminal instead: the program still sees a
 * terminal (isatty, the window size, line buffering), but what it writes
 * goes to a small relay process, which keeps it in an unlinked temporary
 * file.  When the view closes (`q`, or the program's end) the relay writes
 * that file to the terminal and from then on copies the program's output
 * through as it comes.  Both streams share one pseudo-terminal, so their
 * interleaving is kept.
 *
 * The relay is a separate process (the `ulma` program run as `ulma __relay`)
 * so that it outlives the monitor: if the
 * monitor is killed (SIGKILL), the relay sees its control socket close,
 * restores the terminal the monitor left in raw mode on the alternate
 * screen, writes what it held and keeps relaying.  The program never blocks
 * on, nor gets an error from, a dead reader.
 *
 * No output is ever dropped.  When the spool cannot take more (a full
 * $TMPDIR), the relay keeps the bytes it could not write, stops reading
 * until the view is closed (the program's writes wait meanwhile), and asks
 * the monitor to close the view; then it says why on the terminal, writes
 * what it held and relays the rest straight through.  The relay ignores SIGINT,
 * SIGQUIT, SIGTERM, SIGHUP and SIGPIPE, follows the terminal's size, and
 * exits when every holder of the pseudo-terminal (the program and its
 * children) has closed it.
 *
 * Functions return 0 or -errno and never print.  Monitor's main thread only.
 */
#ifndef ULMA_LIVE_RELAY_H
#define ULMA_LIVE_RELAY_H

#include <stdbool.h>
#include <sys/types.h>
#include <termios.h>

#include "commands.h"

struct ulma_relay {
	pid_t pid;  /* the relay process, 0 if none */
	int slave;  /* the program's end, until ulma_relay_spawned; -1 after */
	int ctl;    /* control socket to and from the relay; -1 once closed */
	bool released;
	bool hung_up; /* the relay closed its end: nothing more will come */
};

/* Create the pseudo-terminal with the terminal's modes (`modes`) and size,
 * and start the relay holding output.  tty_fd is the terminal. */
int ulma_relay_start(struct ulma_relay *r, int tty_fd, const struct termios *modes);

/* The program has its copy of the slave: drop ours, so that the relay sees
 * the end of the output when the program's copies close. */
void ulma_relay_spawned(struct ulma_relay *r);

/* The view has closed and the terminal is back in its modes: write what
 * was held and let output through from now on. */
void ulma_relay_release(struct ulma_relay *r);

/* The descriptor to poll for word from the relay until the release, or -1. */
int ulma_relay_fd(const struct ulma_relay *r);

/* Has the relay said the output can no longer be held (the spool's file
 * system is full, or a file size limit)?  Then the view must close, so that
 * the output goes straight through.  Reads without blocking. */
bool ulma_relay_full(struct ulma_relay *r);

/* Release, then wait up to timeout_ms for the relay to write everything
 * the program wrote and exit (a daemon child still holding the terminal
 * keeps it running; it then finishes on its own). */
void ulma_relay_finish(struct ulma_relay *r, int timeout_ms);

/* `ulma __relay MODES` (declared in commands.h) is the relay process after
 * exec, not for users: descriptors 3, 4 and 5 are the master, the control
 * socket and the spool; MODES is the terminal's termios in hex. */

#endif
