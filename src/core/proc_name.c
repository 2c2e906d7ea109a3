/* proc_name.c - naming traced processes by their command line (see proc_name.h). */
#include "proc_name.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* in the code `ulma run` hands to `python -c` (src/monitor/run.c) */
#define BOOT_MARK "import ulma._boot"

/* True for "python", "python3", "/usr/bin/python3.12", "python3.13t", "pypy3". */
static int is_interpreter(const char *arg)
{
	const char *base = strrchr(arg, '/');
	base = base ? base + 1 : arg;
	return strncmp(base, "python", 6) == 0 || strncmp(base, "pypy", 4) == 0;
}

void ulma_proc_name_format(const char *cmdline, size_t len, char *out, size_t cap)
{
	size_t n = 0, i = 0;
	if (cap == 0)
		return;
	/* skip argv[0] when it is the interpreter and something follows it */
	size_t first = strnlen(cmdline, len);
	if (first < len && first + 1 < len && is_interpreter(cmdline)) {
		i = first + 1;
		/* and the interpreter's own options (-B, -u, -X dev, -W error ...),
		 * up to -c, -m, the script or the last argument */
		for (;;) {
			const char *opt = cmdline + i;
			size_t opt_len = strnlen(opt, len - i), next = i + opt_len + 1;
			if (next >= len || opt_len < 2 || opt[0] != '-' || opt[1] == '-' || opt[1] == 'c' || opt[1] == 'm')
				break;
			if (opt_len == 2 && (opt[1] == 'X' || opt[1] == 'W')) { /* its value follows */
				size_t value_end = next + strnlen(cmdline + next, len - next) + 1;
				if (value_end >= len)
					break;
				next = value_end;
			}
			i = next;
		}
		/* and `ulma run`'s boot code, when the program's arguments follow */
		const char *arg = cmdline + i;
		size_t arg_len = strnlen(arg, len - i);
		if (arg_len == 2 && memcmp(arg, "-c", 2) == 0 && i + 3 < len) {
			const char *code = arg + 3;
			size_t code_len = strnlen(code, len - i - 3);
			size_t after = i + 3 + code_len + 1;
			if (after < len && memmem(code, code_len, BOOT_MARK, strlen(BOOT_MARK)))
				i = after;
		}
	}
	/* the script (or program) by its file name: the column is narrow */
	size_t arg_end = i + strnlen(cmdline + i, len - i);
	const char *slash = cmdline[i] != '-' ? memrchr(cmdline + i, '/', arg_end - i) : NULL;
	if (slash && (size_t)(slash - cmdline) + 1 < arg_end)
		i = (size_t)(slash - cmdline) + 1;
	for (; i < len && n + 1 < cap; i++)
		out[n++] = cmdline[i] ? cmdline[i] : ' ';
	while (n > 0 && out[n - 1] == ' ')
		n--;
	out[n] = 0;
	if (n == 0)
		snprintf(out, cap, "?");
}

bool ulma_proc_name_read(uint32_t pid, char *out, size_t cap)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
	if (fd >= 0)
		close(fd);
	ulma_proc_name_format(buf, n > 0 ? (size_t)n : 0, out, cap);
	return n > 0 && strcmp(out, "?") != 0;
}

uint32_t ulma_proc_ppid_read(uint32_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *p = strrchr(buf, ')'); /* after "pid (comm", which may hold any byte */
	unsigned long ppid = 0;
	char state;
	if (!p || sscanf(p + 1, " %c %lu", &state, &ppid) != 2 || ppid > UINT32_MAX)
		return 0;
	return (uint32_t)ppid;
}
