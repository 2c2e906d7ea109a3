/* gilwait.h - how much of a thread's blocked time went to waiting for the GIL.
 *
 * schedstat says how long a thread ran and how long it sat in a run queue;
 * the rest of its wall time it was blocked, for whatever reason.  To tell
 * the GIL from the rest without privileges, the monitor also reads
 * /proc/PID/task/TID/syscall at every schedstat sample: a thread asleep in
 * a futex on an address inside its interpreter's GIL (the range the
 * program published in its thread slot, src/python/gil.c) is waiting for
 * the GIL; asleep anywhere else, it is blocked on something else; "running"
 * means on a CPU or about to be.
 *
 * Each interval between two samples gets a share of its blocked time as
 * GIL time, from what was seen at its two ends (ulma_gilwait_share):
 * everything if the only blocking seen was the GIL, half if the GIL at one
 * end and something else at the other, nothing if no GIL.  When neither
 * end was blocked, the wait began and ended between the samples, and the
 * thread's most recent blocking reason decides.  docs/time-split.md gives
 * the error.  The file can be read only by a process allowed to ptrace the
 * thread (the same user, and under Yama's ptrace_scope 1 an ancestor such
 * as `ulma run`); where it cannot, GIL waits stay unknown.
 */
#ifndef ULMA_GILWAIT_H
#define ULMA_GILWAIT_H

#include <stdbool.h>
#include <stdint.h>

enum ulma_block {
	ULMA_BLOCK_NONE = 0,  /* running or runnable, or not seen */
	ULMA_BLOCK_GIL = 1,   /* asleep waiting for the GIL */
	ULMA_BLOCK_OTHER = 2, /* asleep on anything else */
};

struct ulma_gilwait {
	int fd;                 /* the thread's /proc syscall file, -1 if none */
	uint64_t gil_lo, gil_hi; /* the GIL's bytes: [lo, hi) */
	enum ulma_block prev;   /* what the previous sample saw */
	enum ulma_block last_blocked; /* the latest blocking seen, NONE if never */
	bool primed;            /* prev_* hold a sample */
	uint64_t prev_wall_ns, prev_busy_ns; /* wall clock, and cpu + runnable ns, at it */
	uint64_t gil_ns;        /* cumulative estimate */
};

/* Open the syscall file of (pid, tid) for a GIL of gil_len bytes at
 * gil_addr.  Returns 0, or -errno (-EINVAL when the GIL is unknown); on
 * error g->fd is -1 and ulma_gilwait_step gives nothing. */
int ulma_gilwait_open(struct ulma_gilwait *g, uint32_t pid, uint32_t tid, uint64_t gil_addr, uint32_t gil_len);

/* What one line of /proc/.../syscall says about a thread, for a GIL at
 * [lo, hi). */
enum ulma_block ulma_gilwait_classify(const char *line, uint64_t lo, uint64_t hi);

/* The share of an interval's blocked time spent on the GIL, from its two
 * ends and the latest blocking reason seen before them. */
double ulma_gilwait_share(enum ulma_block before, enum ulma_block after, enum ulma_block last_blocked);

/* Take a sample: the thread's wall clock (CLOCK_MONOTONIC ns) and its
 * cumulative cpu and runnable ns from schedstat, read just before.  Adds
 * to g->gil_ns.  Returns false when the file cannot be read (the thread is
 * gone, or the file never opened); the estimate then stops growing. */
bool ulma_gilwait_step(struct ulma_gilwait *g, uint64_t wall_ns, uint64_t cpu_ns, uint64_t wait_ns);

/* What the thread is doing now (one read of the file), without sampling:
 * for classifying one off-CPU interval the switch records delimit.
 * NONE when the file cannot be read. */
enum ulma_block ulma_gilwait_probe(struct ulma_gilwait *g);

void ulma_gilwait_close(struct ulma_gilwait *g);

#endif
