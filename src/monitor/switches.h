/* switches.h - the scheduler's own context-switch records for the traced
 * processes, through perf_event_open.
 *
 * One software "dummy" event per CPU, with context_switch=1, records every
 * time a traced thread is switched in or out, with its pid, tid, the CPU
 * and a CLOCK_MONOTONIC timestamp; a switch-out says whether the thread was
 * preempted (still runnable) or left the CPU because it blocked.  Opened on
 * a child before it runs, with inherit=1, the events follow every thread
 * and process it ever starts; opened on a running process, one set per
 * existing thread (later threads inherit).  Each CPU's records land in one
 * ring buffer that the kernel fills and the monitor reads without a
 * syscall.  This needs no privilege for one's own processes
 * (perf_event_paranoid up to 2); where it is refused the monitor samples
 * schedstat instead (docs/time-split.md).  task=1 adds thread exits, so
 * state kept per thread can be dropped.
 *
 * Errors are negative errno.  Single-threaded: the monitor's loop only.
 */
#ifndef ULMA_SWITCHES_H
#define ULMA_SWITCHES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct ulma_switches;

enum ulma_switch_kind {
	ULMA_SWITCH_IN = 0,      /* the thread got a CPU */
	ULMA_SWITCH_OUT = 1,     /* it left its CPU: blocked */
	ULMA_SWITCH_PREEMPT = 2, /* it left its CPU while still runnable */
	ULMA_SWITCH_EXIT = 3,    /* it exited */
};

struct ulma_switch_record {
	uint64_t ns; /* CLOCK_MONOTONIC */
	uint32_t pid;
	uint32_t tid;
	uint32_t cpu;
	uint8_t kind; /* enum ulma_switch_kind */
};

/* Follow `pid`, which has not started running the program yet (it waits
 * for us), and everything it starts.  Returns 0 or -errno (EACCES/EPERM
 * when perf_event_open is refused, ENOSYS where it does not exist). */
int ulma_switches_open_child(pid_t pid, struct ulma_switches **out);

/* Follow every thread of running process `pid` and whatever they start.
 * Threads that appear while this opens are picked up too.  Returns 0 or
 * -errno. */
int ulma_switches_open_process(pid_t pid, struct ulma_switches **out);

/* Call `fn` for every record the kernel has written since the last call,
 * in time order (the CPUs' buffers merged).  Returns the number of records,
 * or fn's first negative return (the record it refused and those after it
 * are delivered again by the next call). */
long ulma_switches_read(struct ulma_switches *sw, int (*fn)(void *ctx, const struct ulma_switch_record *r),
			void *ctx);

/* Records the kernel dropped because a buffer was full. */
uint64_t ulma_switches_lost(const struct ulma_switches *sw);

/* Stop and free; accepts NULL. */
void ulma_switches_close(struct ulma_switches *sw);

#endif
