/* mpi_rank.c - `ulma run` under mpirun: rank, trace path, PMPI library (mpi_rank.h). */
#include "mpi_rank.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/trace_writer.h"

static bool env_u32(const char *name, uint32_t *out)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return false;
	char *end;
	unsigned long x = strtoul(v, &end, 10);
	if (*end || x > UINT32_MAX)
		return false;
	*out = (uint32_t)x;
	return true;
}

bool ulma_mpi_env_detect(struct ulma_mpi_env *env)
{
	static const char *const ranks[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
	static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
	for (size_t i = 0; i < sizeof(ranks) / sizeof(ranks[0]); i++) {
		if (!env_u32(ranks[i], &env->rank))
			continue;
		if (!env_u32(sizes[i], &env->size) || env->size <= env->rank)
			env->size = 0;
		return true;
	}
	return false;
}

int ulma_mpi_trace_path(const char *dir, uint32_t rank, char *buf, size_t cap)
{
	char path[4096];
	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	for (char *p = path + 1;; p++) { /* mkdir -p: ranks race to make it, EEXIST is fine */
		bool last = *p == '\0';
		if (*p != '/' && !last)
			continue;
		*p = '\0';
		if (mkdir(path, 0777) < 0 && errno != EEXIST)
			return -errno;
		if (last)
			break;
		*p = '/';
	}
	struct stat st;
	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (snprintf(buf, cap, "%s/rank-%04u.trace", dir, (unsigned)rank) >= (int)cap)
		return -ENAMETOOLONG;
	return 0;
}

int ulma_mpi_lib_find(const char *runtime, char *buf, size_t cap)
{
	const char *slash = strrchr(runtime, '/');
	int dirlen = slash ? (int)(slash - runtime) : 1;
	const char *dir = slash ? runtime : ".";
	if (snprintf(buf, cap, "%.*s/libulma_mpi.so", dirlen, dir) >= (int)cap)
		return -ENOENT;
	return access(buf, R_OK) == 0 ? 0 : -ENOENT;
}

int64_t ulma_mpi_test_skew_ns(void)
{
	const char *v = getenv("ULMA_TEST_CLOCK_SKEW_NS");
	return v && *v ? strtoll(v, NULL, 10) : 0;
}

int ulma_mpi_write_rank(struct ulma_trace_writer *w, const struct ulma_mpi_env *env, uint32_t pid)
{
	char host[256] = "";
	if (gethostname(host, sizeof(host) - 1) < 0)
		snprintf(host, sizeof(host), "?");
	struct ulma_trace_rank r = {
		.pid = pid,
		.rank = env->rank,
		.size = env->size ? env->size : env->rank + 1,
		.host = host,
		.host_len = strlen(host),
	};
	return ulma_trace_mpi_rank(w, &r);
}
