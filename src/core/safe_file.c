/* safe_file.c - a new file at a path, through a temporary name and a
 * rename, never through a symlink or hard link left there; and whether an
 * output path names an input file (see safe_file.h). */
#include "safe_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TEMP_NAME_TRIES 64

/* A device or FIFO the caller asked to write into, rather than a file to
 * replace: only one its owner or root made (no other user can have
 * planted it), and never a symlink (lstat). */
static int is_writable_special(const struct stat *st)
{
	return (S_ISCHR(st->st_mode) || S_ISFIFO(st->st_mode)) && (st->st_uid == geteuid() || st->st_uid == 0);
}

static uint64_t random_u64(void)
{
	uint64_t v;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	static uint64_t counter;
	return ((uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15u) ^ ((uint64_t)getpid() << 32) ^ ++counter;
}

int ulma_open_special(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0 || !is_writable_special(&st))
		return -ENOENT;
	int fd = open(path, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) == 0 && is_writable_special(&st))
		return fd;
	close(fd); /* replaced since the lstat: the caller makes a file after all */
	return -ENOENT;
}

int ulma_safe_create(const char *path, mode_t mode)
{
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return -EISDIR;
	int special = ulma_open_special(path);
	if (special != -ENOENT)
		return special;
	/* beside the path, so that the rename stays in one file system; a short
	 * name of its own, so that a long final name still fits */
	const char *slash = strrchr(path, '/');
	int dir_len = slash ? (int)(slash - path) + 1 : 0;
	size_t cap = (size_t)dir_len + 40;
	char *temp = malloc(cap);
	if (!temp)
		return -ENOMEM;
	int fd = -EEXIST;
	for (int i = 0; i < TEMP_NAME_TRIES && fd == -EEXIST; i++) {
		snprintf(temp, cap, "%.*s.ulma-%016llx.tmp", dir_len, path, (unsigned long long)random_u64());
		fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, mode);
		if (fd < 0)
			fd = -errno;
	}
	if (fd >= 0 && rename(temp, path) != 0) {
		int err = -errno;
		unlink(temp);
		close(fd);
		fd = err;
	}
	free(temp);
	return fd;
}

void ulma_safe_discard(const char *path)
{
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
		unlink(path);
}

bool ulma_same_file(const char *output, const char *input)
{
	struct stat in, out;
	if (stat(input, &in) != 0 || !S_ISREG(in.st_mode))
		return false;
	if (lstat(output, &out) == 0 && out.st_dev == in.st_dev && out.st_ino == in.st_ino)
		return true;
	return stat(output, &out) == 0 && out.st_dev == in.st_dev && out.st_ino == in.st_ino;
}
