/* gilwait.c - GIL waits told apart from other blocking (see gilwait.h). */
#include "gilwait.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int ulma_gilwait_open(struct ulma_gilwait *g, uint32_t pid, uint32_t tid, uint64_t gil_addr, uint32_t gil_len)
{
	memset(g, 0, sizeof(*g));
	g->fd = -1;
	if (gil_addr == 0 || gil_len == 0 || gil_addr + gil_len < gil_addr)
		return -EINVAL;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%u/task/%u/syscall", pid, tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	g->fd = fd;
	g->gil_lo = gil_addr;
	g->gil_hi = gil_addr + gil_len;
	return 0;
}

/* "running", or "NR ARG0 ... SP PC" with NR decimal and the rest hex;
 * "-1 SP PC" for a thread blocked outside a system call. */
enum ulma_block ulma_gilwait_classify(const char *line, uint64_t lo, uint64_t hi)
{
	if (strncmp(line, "running", 7) == 0)
		return ULMA_BLOCK_NONE;
	char *end;
	long nr = strtol(line, &end, 10);
	if (end == line)
		return ULMA_BLOCK_NONE; /* unreadable: say nothing */
	if (nr != SYS_futex)
		return ULMA_BLOCK_OTHER;
	const char *p = end;
	unsigned long long addr = strtoull(p, &end, 16);
	if (end == p)
		return ULMA_BLOCK_OTHER;
	return addr >= lo && addr < hi ? ULMA_BLOCK_GIL : ULMA_BLOCK_OTHER;
}

double ulma_gilwait_share(enum ulma_block before, enum ulma_block after, enum ulma_block last_blocked)
{
	if (before == ULMA_BLOCK_NONE && after == ULMA_BLOCK_NONE)
		return last_blocked == ULMA_BLOCK_GIL ? 1.0 : 0.0;
	int gil = (before == ULMA_BLOCK_GIL) + (after == ULMA_BLOCK_GIL);
	int other = (before == ULMA_BLOCK_OTHER) + (after == ULMA_BLOCK_OTHER);
	if (gil == 0)
		return 0.0;
	return other ? 0.5 : 1.0;
}

/* Read the syscall file: false if it cannot be (the file is then closed). */
static bool read_now(struct ulma_gilwait *g, enum ulma_block *now)
{
	char buf[256];
	ssize_t n = g->fd >= 0 ? pread(g->fd, buf, sizeof(buf) - 1, 0) : -1;
	if (n <= 0) {
		ulma_gilwait_close(g);
		return false;
	}
	buf[n] = 0;
	*now = ulma_gilwait_classify(buf, g->gil_lo, g->gil_hi);
	return true;
}

enum ulma_block ulma_gilwait_probe(struct ulma_gilwait *g)
{
	enum ulma_block now = ULMA_BLOCK_NONE;
	if (read_now(g, &now) && now != ULMA_BLOCK_NONE)
		g->last_blocked = now;
	return now;
}

bool ulma_gilwait_step(struct ulma_gilwait *g, uint64_t wall_ns, uint64_t cpu_ns, uint64_t wait_ns)
{
	enum ulma_block now;
	if (!read_now(g, &now))
		return false;
	uint64_t busy = cpu_ns + wait_ns;
	if (g->primed && wall_ns > g->prev_wall_ns) {
		uint64_t wall = wall_ns - g->prev_wall_ns;
		uint64_t ran = busy > g->prev_busy_ns ? busy - g->prev_busy_ns : 0;
		uint64_t blocked = wall > ran ? wall - ran : 0;
		g->gil_ns += (uint64_t)(ulma_gilwait_share(g->prev, now, g->last_blocked) * (double)blocked + 0.5);
	}
	g->primed = true;
	g->prev = now;
	g->prev_wall_ns = wall_ns;
	g->prev_busy_ns = busy;
	if (now != ULMA_BLOCK_NONE)
		g->last_blocked = now;
	return true;
}

void ulma_gilwait_close(struct ulma_gilwait *g)
{
	if (g->fd >= 0)
		close(g->fd);
	g->fd = -1;
}
