/* sampler.c - /proc schedstat reading (see sampler.h). */
#include "sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int ulma_sampler_open(uint32_t pid, uint32_t tid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%u/task/%u/schedstat", pid, tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int ulma_sampler_read(int fd, uint64_t *cpu_ns, uint64_t *wait_ns)
{
	char buf[128];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return n < 0 ? -errno : -ESRCH;
	buf[n] = 0;
	char *end;
	unsigned long long cpu = strtoull(buf, &end, 10);
	if (end == buf)
		return -EPROTO;
	char *p = end;
	unsigned long long wait = strtoull(p, &end, 10);
	if (end == p)
		return -EPROTO;
	*cpu_ns = cpu;
	*wait_ns = wait;
	return 0;
}
