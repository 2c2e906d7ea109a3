/* fuzz_export.c - libFuzzer target for `ulma export` (src/analysis/export.h).
 *
 * Each input is a trace; every complete chunk's CRC-32C is recomputed first
 * so that mutations reach the decoders.  The input's length picks the
 * format (each file format in turn) and a set of filters, so one corpus
 * covers them all (the directory format, ctf, is skipped).  Besides the
 * sanitizers, the harness aborts when an exporter returns anything but 0
 * or -EPROTO, or -EPROTO without a reason.  Output goes to /dev/null.
 *
 * Run: build with -DULMA_FUZZ=ON (target fuzz_export), then
 *     bash tests/fuzz/run.sh build/fuzz/fuzz_export SECONDS
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/export.h"
#include "fix_checksums.h"
#include "ulma/trace_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const pats[] = {"f*", "*.py", "~"};
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
	o.counts = (sel & 16) != 0;

	FILE *in = fmemopen(copy, size, "rb");
	FILE *out = fopen("/dev/null", "wb");
	if (in && out && !fmt->directory) {
		struct ulma_export_result res;
		int err = fmt->write(in, &o, out, NULL, &res);
		if ((err != 0 && err != -EPROTO) || (err == -EPROTO && !res.st.error[0])) {
			fprintf(stderr, "fuzz_export: %s returned %d (%s)\n", fmt->name, err, res.st.error);
			abort();
		}
	}
	if (in)
		fclose(in);
	if (out)
		fclose(out);
	free(copy);
	return 0;
}
