/* fuzz_merge.c - libFuzzer target for `ulma merge` (src/monitor/merge*.c):
 * its decoding of ranks, MPI events and clock offsets, the logical-clock
 * replay, and the merged trace it writes, read back by `ulma report`.
 *
 * Each input is one rank's trace (the seeds hold mpi-rank.ulma, an MPI
 * rank 0 of 1); every complete chunk's CRC-32C is recomputed first so
 * that mutations reach the decoders.  It is written as
 * DIR/rank-0000.trace in a fresh directory under /dev/shm, merged into
 * DIR/all.trace, and a merged trace is reported in JSON.  Besides the
 * sanitizers and libFuzzer's timeout, the harness aborts when a command
 * exits with anything but 0 or 1, or with 1 and no message.  The merge's
 * one line of results goes to stderr, with the sanitizers' reports.
 *
 * Run: build with -DULMA_FUZZ=ON (target fuzz_merge), then
 *     bash tests/fuzz/run.sh build/fuzz/fuzz_merge SECONDS
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fix_checksums.h"
#include "cli_stubs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static char dir[64], rank_path[96], out_path[96];

static void cleanup(void)
{
	unlink(rank_path);
	unlink(out_path);
	rmdir(dir);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/dev/shm/fuzz-merge-%d", (int)getpid());
	snprintf(rank_path, sizeof(rank_path), "%s/rank-0000.trace", dir);
	snprintf(out_path, sizeof(out_path), "%s/all.trace", dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		perror("fuzz_merge: mkdir");
		abort();
	}
	atexit(cleanup);
	if (!freopen("/dev/null", "w", stdout)) {
		perror("fuzz_merge: stdout on /dev/null");
		abort();
	}
}

static void expect_clean(int rc, const char *what)
{
	if (rc == 0 || (rc == 1 && fuzz_messages > 0))
		return;
	fprintf(stdout, "fuzz_merge: %s exited %d after %u messages\n", what, rc, fuzz_messages);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0])
		setup();
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	ulma_fuzz_fix_checksums(copy, size);
	FILE *f = fopen(rank_path, "wb");
	if (!f || fwrite(copy, 1, size, f) != size || fclose(f) != 0) {
		perror("fuzz_merge: writing the rank's trace");
		abort();
	}
	free(copy);
	unlink(out_path);
	fuzz_messages = 0;
	char *merge[] = {dir, "-o", out_path, NULL};
	int rc = ulma_cmd_merge(3, merge);
	expect_clean(rc, "merge");
	if (rc == 0) {
		fuzz_messages = 0;
		char *report[] = {out_path, "--format", "json", NULL};
		expect_clean(ulma_cmd_report(3, report), "report of the merged trace");
	}
	return 0;
}
