/* fuzz_report.c - libFuzzer target for `ulma report` (src/monitor/report.c):
 * the text and JSON summaries and the HTML report, rebuilt from a trace;
 * and for `ulma diff` (src/monitor/diff.c), which reads two traces: the
 * input against itself and against its first half (a trace cut short,
 * so the two differ), as text, JSON with --fail-above, --html and
 * --fail-on cpu.
 *
 * Each input is a trace; every complete chunk's CRC-32C is recomputed first
 * so that mutations reach the decoders.  Each input is reported in every
 * form: text, json, text with --no-correction, --html to stdout, and the
 * line tables (--lines).  The
 * command runs as the program runs it, on the trace through a memfd's
 * /proc path, with stdout on /dev/null.  Besides the sanitizers and libFuzzer's
 * timeout (a report that never finishes), the harness aborts when the
 * command exits with anything but 0 or 1, or with 1 and no message.
 *
 * The program's ulma_die_msg and ulma_parse_limit live in main.c beside
 * main(); the harness has its own (cli_stubs.h): messages are counted, not printed.
 *
 * Run: build with -DULMA_FUZZ=ON (target fuzz_report), then
 *     bash tests/fuzz/run.sh build/fuzz/fuzz_report SECONDS
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fix_checksums.h"
#include "cli_stubs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The trace's file: one memfd, rewritten for each input; its first half in another. */
static int trace_fd = -1, half_fd = -1;
static char trace_path[64], half_path[64];

static void setup(void)
{
	trace_fd = memfd_create("fuzz-report-trace", MFD_CLOEXEC);
	if (trace_fd < 0) {
		perror("fuzz_report: memfd_create");
		abort();
	}
	snprintf(trace_path, sizeof(trace_path), "/proc/self/fd/%d", trace_fd);
	half_fd = memfd_create("fuzz-report-half", MFD_CLOEXEC);
	if (half_fd < 0) {
		perror("fuzz_report: memfd_create");
		abort();
	}
	snprintf(half_path, sizeof(half_path), "/proc/self/fd/%d", half_fd);
	if (!freopen("/dev/null", "w", stdout)) {
		perror("fuzz_report: stdout on /dev/null");
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (trace_fd < 0)
		setup();
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	ulma_fuzz_fix_checksums(copy, size);
	if (ftruncate(trace_fd, 0) != 0 || pwrite(trace_fd, copy, size, 0) != (ssize_t)size ||
	    ftruncate(half_fd, 0) != 0 || pwrite(half_fd, copy, size / 2, 0) != (ssize_t)(size / 2)) {
		perror("fuzz_report: writing the trace");
		abort();
	}
	free(copy);

	/* the command's arguments follow its name, which getopt reads at argv[-1] */
	char *args[][5] = {
		{"report", trace_path, NULL},
		{"report", trace_path, "--format", "json", NULL},
		{"report", trace_path, "--no-correction", NULL},
		{"report", trace_path, "--html", "-", NULL},
		{"report", trace_path, "--lines", NULL},
	};
	for (size_t form = 0; form < sizeof(args) / sizeof(args[0]); form++) {
		char **argv = args[form];
		int argc = 0;
		while (argv[argc + 1])
			argc++;
		fuzz_messages = 0;
		int status = ulma_cmd_report(argc, argv + 1);
		fflush(stdout);
		if (status != 0 && status != 1) {
			fprintf(stderr, "fuzz_report: report %s exited %d\n", argv[2] ? argv[2] : "", status);
			abort();
		}
		if (status == 1 && fuzz_messages == 0) {
			fprintf(stderr, "fuzz_report: report %s: exit status 1 without a message\n", argv[2] ? argv[2] : "");
			abort();
		}
	}
	char *diffs[][8] = {
		{"diff", trace_path, trace_path, NULL},
		{"diff", trace_path, half_path, "--format", "json", "--fail-above", "0%", NULL},
		{"diff", half_path, trace_path, "--html", "-", NULL},
		{"diff", half_path, trace_path, "--fail-above", "5", "--fail-on", "cpu", NULL},
	};
	for (size_t form = 0; form < sizeof(diffs) / sizeof(diffs[0]); form++) {
		char **argv = diffs[form];
		int argc = 0;
		while (argv[argc + 1])
			argc++;
		fuzz_messages = 0;
		int status = ulma_cmd_diff(argc, argv + 1);
		fflush(stdout);
		/* 0; 1 a regression; 3 unreadable: both said */
		if ((status != 0 && status != 1 && status != 3) || (status != 0 && fuzz_messages == 0)) {
			fprintf(stderr, "fuzz_report: diff form %zu exited %d after %u messages\n", form, status, fuzz_messages);
			abort();
		}
	}
	return 0;
}
