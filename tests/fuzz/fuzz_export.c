/* fuzz_export.c - libFuzzer target for `ulma export` (src/analysis/export.h).
 *
 * Each input is a trace; every complete chunk's CRC-32C is recomputed first
 * so that mutations reach the decoders.  The input's length picks the
 * format (each format in turn) and a set of filters, so one corpus covers
 * them all, marks and native functions included (the seeds hold a version
 * 4 trace with them).  Besides the sanitizers, the harness aborts when an exporter
 * returns anything but 0, -EPROTO or -EFBIG (folded's refusal), or either
 * without its reason, and where the ctf export succeeds, decodes its
 * streams and compares every event with a second walk (ctf_check.h).  A file
 * format writes to /dev/null; the directory formats, ctf and otf2 (where
 * this build has the OTF2 library), into a scratch directory of the
 * harness's own, emptied after each input (OTF2's subdirectory too).
 *
 * Run: build with -DULMA_FUZZ=ON (target fuzz_export), then
 *     bash tests/fuzz/run.sh build/fuzz/fuzz_export SECONDS
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/export.h"
#include "ctf_check.h"
#include "fix_checksums.h"
#include "ulma/trace_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char scratch[4096]; /* the directory formats' output, made at the first input */

/* Remove what is in dir, and in its subdirectories `levels` deep. */
static void empty_dir(const char *dir, int levels)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) != 0 && errno == EISDIR && levels > 0) {
			char sub[4200];
			snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
			empty_dir(sub, levels - 1);
			rmdir(sub);
		}
	}
	if (d)
		closedir(d);
}

static void empty_scratch(void)
{
	empty_dir(scratch, 1);
}

static void remove_scratch(void)
{
	empty_scratch();
	rmdir(scratch);
}

static const char *scratch_dir(void)
{
	if (!scratch[0]) {
		const char *tmp = getenv("TMPDIR");
		snprintf(scratch, sizeof(scratch), "%s/ulma-fuzz-ctf-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(scratch)) {
			perror("fuzz_export: mkdtemp");
			abort();
		}
		atexit(remove_scratch);
	}
	return scratch;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const pats[] = {"f*", "*.py", "~", "0x*", "*.c"};
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy || size == 0) {
		free(copy);
		return 0;
	}
	memcpy(copy, data, size);
	ulma_fuzz_fix_checksums(copy, size);

	size_t nformats = 0;
	while (ulma_export_formats[nformats].name)
		nformats++;
	const struct ulma_export_format *fmt = &ulma_export_formats[size % nformats];
	if (!fmt->write) { /* a format this build left out */
		free(copy);
		return 0;
	}
	unsigned sel = (unsigned)(size / nformats);
	struct ulma_export_opts o;
	memset(&o, 0, sizeof(o));
	ulma_walk_filter_init(&o.filter);
	if (sel & 1)
		o.filter.min_duration_ns = 5;
	if (sel & 2) {
		o.filter.from_ns = 3;
		o.filter.to_ns = 2000;
	}
	if (sel & 4) {
		o.filter.exclude = pats;
		o.filter.nexclude = 1;
	}
	if (sel & 8) {
		o.filter.include = pats + 1;
		o.filter.ninclude = 2;
	}
	if (sel & 32) { /* native frames: by address, and by file where debug information gives one */
		o.filter.exclude = pats + 3;
		o.filter.nexclude = 1;
		o.filter.include = pats + 4;
		o.filter.ninclude = (sel & 64) ? 1 : 0;
	}
	o.counts = (sel & 16) != 0;
	o.no_compress = (sel & 16) != 0; /* perfetto: both the compressed and the plain writer */

	FILE *in = fmemopen(copy, size, "rb");
	FILE *out = fmt->directory ? NULL : fopen("/dev/null", "wb");
	const char *dir = fmt->directory ? scratch_dir() : NULL;
	if (in && (out || dir)) {
		struct ulma_export_result res;
		int err = fmt->write(in, &o, out, dir, &res);
		bool refused = err == -EFBIG && res.why[0]; /* folded's size limit, with its reason */
		if ((err != 0 && err != -EPROTO && !refused) || (err == -EPROTO && !res.st.error[0])) {
			fprintf(stderr, "fuzz_export: %s returned %d (%s)\n", fmt->name, err, res.st.error);
			abort();
		}
		FILE *again = err == 0 && strcmp(fmt->name, "ctf") == 0 ? fmemopen(copy, size, "rb") : NULL;
		if (again) { /* the streams decoded, against a second walk */
			ctf_check(again, &o, dir);
			fclose(again);
		}
	}
	if (dir)
		empty_scratch();
	if (in)
		fclose(in);
	if (out)
		fclose(out);
	free(copy);
	return 0;
}
