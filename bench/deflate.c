/* deflate.c - which deflate the perfetto export's batches get: zlib's and
 * libdeflate's levels, timed side by side on the packets themselves.
 *
 * Reads a perfetto export written with --no-compress (its bytes are the
 * packets the default compresses) and deflates it in batches of the
 * export's size (OUT_CAP, 32 KiB) into zlib streams, as
 * export_perfetto_packets.c does, with zlib and with libdeflate at levels
 * 1, 2, 3 and 6, and with ISA-L at its levels 0 to 3 where it is found.  Prints, per compressor and level, the CPU seconds, MB per
 * CPU second and the compression ratio, and what that rate means for the
 * export: events per second of deflating alone, given the events the file
 * holds.  Usage: bench_deflate FILE EVENTS [batch bytes].
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <zlib.h>
#include <libdeflate.h>
#if defined(BENCH_ISAL)
#include <isa-l/igzip_lib.h>
#endif

static double cpu_seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void report(const char *who, int level, double seconds, size_t in, size_t out, double events)
{
	printf("%-10s level %d: %6.3f s  %5.0f MB/s  ratio %5.2f  %6.1f M events/s\n", who, level, seconds,
	       (double)in / seconds / 1e6, (double)in / (double)out, events / seconds / 1e6);
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: bench_deflate FILE EVENTS [batch bytes]\n");
		return 2;
	}
	double events = atof(argv[2]);
	size_t batch = argc == 4 ? (size_t)atol(argv[3]) : 32768;
	FILE *f = fopen(argv[1], "rb");
	if (!f || fseek(f, 0, SEEK_END) != 0) {
		perror(argv[1]);
		return 1;
	}
	long len = ftell(f);
	rewind(f);
	unsigned char *in = malloc((size_t)len), *out = malloc(2 * batch + 1024);
	if (!in || !out || batch == 0 || fread(in, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "bench_deflate: cannot read %s\n", argv[1]);
		return 1;
	}
	fclose(f);
	static const int levels[] = {1, 2, 3, 6};
	for (unsigned k = 0; k < sizeof(levels) / sizeof(levels[0]); k++) {
		z_stream z = {0};
		if (deflateInit(&z, levels[k]) != Z_OK)
			return 1;
		size_t total = 0;
		double t = cpu_seconds();
		for (size_t i = 0; i < (size_t)len; i += batch) {
			size_t n = (size_t)len - i < batch ? (size_t)len - i : batch;
			z.next_in = in + i;
			z.avail_in = (uInt)n;
			z.next_out = out;
			z.avail_out = (uInt)(2 * batch + 1024);
			if (deflate(&z, Z_FINISH) != Z_STREAM_END)
				return 1;
			total += 2 * batch + 1024 - z.avail_out;
			deflateReset(&z);
		}
		report("zlib", levels[k], cpu_seconds() - t, (size_t)len, total, events);
		deflateEnd(&z);
	}
	for (unsigned k = 0; k < sizeof(levels) / sizeof(levels[0]); k++) {
		struct libdeflate_compressor *c = libdeflate_alloc_compressor(levels[k]);
		if (!c)
			return 1;
		size_t total = 0;
		double t = cpu_seconds();
		for (size_t i = 0; i < (size_t)len; i += batch) {
			size_t n = (size_t)len - i < batch ? (size_t)len - i : batch;
			size_t m = libdeflate_zlib_compress(c, in + i, n, out, 2 * batch + 1024);
			if (!m)
				return 1;
			total += m;
		}
		report("libdeflate", levels[k], cpu_seconds() - t, (size_t)len, total, events);
		libdeflate_free_compressor(c);
	}
#if defined(BENCH_ISAL)
	/* ISA-L's levels 0-3 (it has no others), one-shot per batch as the export does */
	static const uint32_t isal_buf[] = {0, ISAL_DEF_LVL1_DEFAULT, ISAL_DEF_LVL2_DEFAULT, ISAL_DEF_LVL3_DEFAULT};
	unsigned char *work = malloc(ISAL_DEF_LVL3_DEFAULT);
	if (!work)
		return 1;
	for (int level = 0; level <= 3; level++) {
		size_t total = 0;
		double t = cpu_seconds();
		for (size_t i = 0; i < (size_t)len; i += batch) {
			size_t n = (size_t)len - i < batch ? (size_t)len - i : batch;
			struct isal_zstream z;
			isal_deflate_stateless_init(&z);
			z.level = (uint32_t)level;
			z.level_buf = work;
			z.level_buf_size = isal_buf[level];
			z.gzip_flag = IGZIP_ZLIB;
			z.end_of_stream = 1;
			z.next_in = in + i;
			z.avail_in = (uint32_t)n;
			z.next_out = out;
			z.avail_out = (uint32_t)(2 * batch + 1024);
			if (isal_deflate_stateless(&z) != COMP_OK)
				return 1;
			total += 2 * batch + 1024 - z.avail_out;
		}
		report("ISA-L", level, cpu_seconds() - t, (size_t)len, total, events);
	}
	free(work);
#endif
	free(in);
	free(out);
	return 0;
}
