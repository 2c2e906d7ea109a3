/* fuzz_rings.c - libFuzzer target for the monitor's decoding of what
 * traced programs write into shared memory (src/monitor/collector*.c):
 * the records of their rings, the definition area, and the slots'
 * identity and positions, through the same drain, apply, reap and end the
 * monitor runs.  A traced program is not trusted to write well-formed
 * records (a buggy C extension, a program scribbling on the mapping, a
 * writer killed mid-record): docs/design.md, "Hostile writers".
 *
 * Each input is a session's contents (ring_seeds.h has the layout),
 * written into a fresh session of 256-record rings and drained as
 * ring_drain.h says; besides the sanitizers and libFuzzer's timeout, the
 * harness aborts when a check of ring_drain.h fails (the collector failed,
 * or its trace does not read back to the live profile).  The trace goes
 * to a scratch directory under /dev/shm.
 *
 * Run: build with -DULMA_FUZZ=ON (target fuzz_rings), then
 *     FUZZ_MAX_LEN=16384 bash tests/fuzz/run.sh build/fuzz/fuzz_rings SECONDS tests/fuzz/ring-seeds
 * The seeds come from real rings: tests/fuzz/capture_rings.py.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_stubs.h"
#include "ring_drain.h"
#include "ring_seeds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], trace_path[96];
static FILE *devnull;

static void cleanup(void)
{
	unlink(trace_path);
	rmdir(dir);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/dev/shm/fuzz-rings-%d", (int)getpid());
	snprintf(trace_path, sizeof(trace_path), "%s/rings.trace", dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		perror("fuzz_rings: mkdir");
		abort();
	}
	atexit(cleanup);
	devnull = fopen("/dev/null", "w");
	if (!devnull) {
		perror("fuzz_rings: /dev/null");
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!devnull)
		setup();
	struct ulma_ring_seed seed;
	if (!ulma_ring_seed_parse(data, size, &seed))
		return 0;
	struct ulma_ring_drained d;
	if (!ulma_ring_seed_drain(&seed, trace_path, devnull, &d)) {
		fprintf(stderr, "fuzz_rings: %s\n", d.why);
		abort();
	}
	ulma_ring_drained_free(&d);
	unlink(trace_path);
	return 0;
}
