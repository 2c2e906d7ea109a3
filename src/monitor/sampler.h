/* sampler.h - read a traced thread's scheduler accounting without privileges.
 *
 * /proc/PID/task/TID/schedstat holds three numbers: ns spent on a CPU, ns
 * spent runnable in a run queue, and the number of timeslices.  The monitor
 * keeps the file open per thread and re-reads it with pread (one syscall
 * per sample).  Errors are negative errno; a thread that has exited gives
 * -ESRCH or -ENOENT.
 */
#ifndef ULMA_SAMPLER_H
#define ULMA_SAMPLER_H

#include <stdint.h>

/* Open the schedstat of (pid, tid).  Returns an fd or -errno. */
int ulma_sampler_open(uint32_t pid, uint32_t tid);

/* Read cumulative cpu and wait ns from an fd opened above.  Returns 0 or -errno. */
int ulma_sampler_read(int fd, uint64_t *cpu_ns, uint64_t *wait_ns);

#endif
