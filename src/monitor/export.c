/* export.c - `ulma export TRACE --format FMT -o OUT`: a trace rewritten in
 * another tool's format (src/analysis/export.h).
 *
 * The output is written under a temporary name in the same directory and
 * renamed into place only once complete, so a half-written export never
 * sits under the final name.  `-o -` streams a file format to stdout.  A
 * directory format (ctf, otf2) replaces an existing empty directory but never
 * one with files in it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../analysis/export.h"
#include "../core/safe_file.h"
#include "commands.h"

#define MAX_PATTERNS 64

static void print_usage(FILE *f)
{
	fputs("usage: ulma export TRACE --format FMT -o OUT [filters]\n"
	      "  -f, --format FMT     one of:\n",
	      f);
	for (const struct ulma_export_format *x = ulma_export_formats; x->name; x++)
		fprintf(f, "                         %-11s %s\n", x->name, x->about);
	fputs("  -o, --output OUT     the file (or directory) to write; - for stdout\n"
	      "  --counts             folded: call counts instead of self microseconds\n"
	      "  --no-compress        perfetto: packets not zlib-compressed (larger, faster to write)\n"
	      "  --no-correction      times as measured, the hook's own cost included (by default it is\n"
	      "                       taken out as in the summary: docs/overhead.md)\n"
	      "filters, which every format honours:\n"
	      "  --thread TID         only this OS thread id\n"
	      "  --process PID        only this process\n"
	      "  --from T, --to T     only this window, since the trace start (ns, or 5us, 1.5ms, 2s);\n"
	      "                       frames crossing an edge are clipped\n"
	      "  --min-duration T     drop frames shorter than T; their time goes to the parent\n"
	      "  --include PATTERN    keep only functions whose name or file matches (fnmatch); repeatable\n"
	      "  --exclude PATTERN    drop matching functions; their time goes to the parent; repeatable\n",
	      f);
}

static int parse_id(const char *opt, const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > UINT32_MAX) {
		ulma_die_msg("%s takes a non-negative integer id, not '%s'", opt, s);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_time(const char *opt, const char *s, uint64_t *out)
{
	if (ulma_walk_parse_ns(s, out) == 0)
		return 0;
	ulma_die_msg("%s takes a time in ns or with a suffix (us, ms, s), not '%s'", opt, s);
	return -1;
}

/* Write a file format straight into out: stdout, or a device or FIFO. */
static int write_stream(const struct ulma_export_format *fmt, FILE *in, const struct ulma_export_opts *o,
			FILE *out, struct ulma_export_result *res, int *werr)
{
	int err = fmt->write(in, o, out, NULL, res);
	if (!err && fflush(out) != 0)
		err = -EIO;
	*werr = err == -EIO ? errno : 0;
	return err;
}

/* Write a file format to path via a temporary file beside it; into path
 * itself for `-` (stdout) or a device or FIFO (`-o /dev/null`), which the
 * rename would replace. */
static int write_file(const struct ulma_export_format *fmt, FILE *in, const struct ulma_export_opts *o,
		      const char *path, struct ulma_export_result *res, int *werr)
{
	if (strcmp(path, "-") == 0)
		return write_stream(fmt, in, o, stdout, res, werr);
	int special = ulma_open_special(path);
	if (special >= 0) {
		FILE *out = fdopen(special, "wb");
		if (!out) {
			*werr = errno;
			close(special);
			return -EIO;
		}
		int err = write_stream(fmt, in, o, out, res, werr);
		fclose(out);
		return err;
	}
	if (special != -ENOENT) {
		*werr = -special;
		return -EIO;
	}
	size_t n = strlen(path);
	char *tmp = malloc(n + 16);
	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, n + 16, "%s.tmp.XXXXXX", path);
	int fd = mkstemp(tmp);
	if (fd < 0) {
		*werr = errno;
		free(tmp);
		return -EIO;
	}
	mode_t mask = umask(0); /* mkstemp makes 0600; an export is an ordinary file */
	umask(mask);
	fchmod(fd, 0666 & ~mask);
	FILE *out = fdopen(fd, "wb");
	if (!out) {
		*werr = errno;
		close(fd);
		unlink(tmp);
		free(tmp);
		return -EIO;
	}
	int err = fmt->write(in, o, out, NULL, res);
	if (err == -EIO)
		*werr = errno ? errno : EIO;
	if (fclose(out) != 0 && !err) {
		err = -EIO;
		*werr = errno;
	}
	if (!err && rename(tmp, path) != 0) {
		err = -EIO;
		*werr = errno;
	}
	if (err)
		unlink(tmp);
	free(tmp);
	return err;
}

/* Remove the files of a temporary directory this command made, then it;
 * its subdirectories (OTF2's per-location files) the same way, `levels`
 * deep at most. */
static void remove_temp_dir(const char *dir, int levels)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			if (unlinkat(dirfd(d), e->d_name, 0) != 0 && errno == EISDIR && levels > 0) {
				char sub[4096];
				if (snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name) < (int)sizeof(sub))
					remove_temp_dir(sub, levels - 1);
			}
		}
		closedir(d);
	}
	rmdir(dir);
}

/* Write a directory format to path via a temporary directory beside it.
 * An existing empty directory is replaced; anything else is left alone. */
static int write_dir(const struct ulma_export_format *fmt, FILE *in, const struct ulma_export_opts *o,
		     const char *path, struct ulma_export_result *res, int *werr)
{
	struct stat sb;
	if (lstat(path, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
		*werr = EEXIST;
		return -EIO;
	}
	size_t n = strlen(path);
	char *tmp = malloc(n + 16);
	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, n + 16, "%s.tmp.XXXXXX", path);
	if (!mkdtemp(tmp)) {
		*werr = errno;
		free(tmp);
		return -EIO;
	}
	mode_t mask = umask(0); /* mkdtemp makes 0700; an export is an ordinary directory */
	umask(mask);
	chmod(tmp, 0777 & ~mask);
	int err = fmt->write(in, o, NULL, tmp, res);
	if (err == -EIO)
		*werr = errno ? errno : EIO;
	if (!err && rename(tmp, path) != 0) {
		err = -EIO;
		*werr = errno;
	}
	if (err)
		remove_temp_dir(tmp, 1);
	free(tmp);
	return err;
}

/* Read the trace at path, write fmt to output; report errors.  Returns the
 * exit status. */
static int export_one(const struct ulma_export_format *fmt, const char *path, const char *output,
		      const struct ulma_export_opts *o)
{
	if (strcmp(output, "-") != 0 && ulma_same_file(output, path)) {
		ulma_die_msg("the output '%s' is the trace '%s' being read: write it elsewhere", output, path);
		return ULMA_EXIT_USAGE;
	}
	FILE *in;
	const char *why;
	int open_err = ulma_trace_open(path, &in, &why);
	if (open_err) {
		ulma_die_msg("cannot open trace '%s': %s", path, why ? why : strerror(-open_err));
		return 1;
	}
	struct ulma_export_result res;
	int werr = 0;
	memset(&res, 0, sizeof(res));
	int err = fmt->directory ? write_dir(fmt, in, o, output, &res, &werr)
				 : write_file(fmt, in, o, output, &res, &werr);
	fclose(in);
	if (res.read_error) {
		ulma_die_msg("cannot read trace '%s': %s", path, strerror(EIO));
		return 1;
	}
	if (err == -EPROTO) {
		ulma_die_msg("%s: not a readable ulma trace: %s", path, res.st.error);
		return 1;
	}
	if (err == -EIO) {
		ulma_die_msg("cannot write '%s': %s", output, strerror(werr ? werr : EIO));
		return 1;
	}
	if (err == -EFBIG && res.why[0]) {
		ulma_die_msg("not writing '%s': %s", output, res.why);
		return 1;
	}
	if (err) {
		ulma_die_msg("%s: %s", path, strerror(-err));
		return 1;
	}
	if (!res.complete)
		ulma_die_msg("warning: %s is incomplete (cut short at byte %llu); exported the %llu events it holds",
			     path, (unsigned long long)res.st.bytes, (unsigned long long)res.st.events);
	if (res.frames == 0)
		ulma_die_msg("warning: no frames to export: the trace is empty or the filters kept nothing");
	return 0;
}

int ulma_report_html(const char *trace, const char *output, bool no_correction)
{
	struct ulma_export_opts o;
	memset(&o, 0, sizeof(o));
	ulma_walk_filter_init(&o.filter);
	o.filter.no_correction = no_correction;
	return export_one(ulma_export_find("html"), trace, output, &o);
}

int ulma_cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{"format", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{"thread", required_argument, NULL, 't'},
		{"process", required_argument, NULL, 'p'},
		{"from", required_argument, NULL, 'F'},
		{"to", required_argument, NULL, 'T'},
		{"min-duration", required_argument, NULL, 'm'},
		{"include", required_argument, NULL, 'i'},
		{"exclude", required_argument, NULL, 'x'},
		{"counts", no_argument, NULL, 'c'},
		{"no-compress", no_argument, NULL, 'Z'},
		{"no-correction", no_argument, NULL, 'K'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *format = NULL, *output = NULL;
	const char *include[MAX_PATTERNS], *exclude[MAX_PATTERNS];
	struct ulma_export_opts o;
	memset(&o, 0, sizeof(o));
	ulma_walk_filter_init(&o.filter);
	o.filter.include = include;
	o.filter.exclude = exclude;
	int c;
	optind = 0;
	while ((c = getopt_long(argc + 1, argv - 1, "f:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			format = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		case 't':
			if (parse_id("--thread", optarg, &o.filter.tid))
				return ULMA_EXIT_USAGE;
			break;
		case 'p':
			if (parse_id("--process", optarg, &o.filter.pid))
				return ULMA_EXIT_USAGE;
			break;
		case 'F':
			if (parse_time("--from", optarg, &o.filter.from_ns))
				return ULMA_EXIT_USAGE;
			break;
		case 'T':
			if (parse_time("--to", optarg, &o.filter.to_ns))
				return ULMA_EXIT_USAGE;
			break;
		case 'm':
			if (parse_time("--min-duration", optarg, &o.filter.min_duration_ns))
				return ULMA_EXIT_USAGE;
			break;
		case 'i':
		case 'x': {
			size_t *n = c == 'i' ? &o.filter.ninclude : &o.filter.nexclude;
			if (*n == MAX_PATTERNS) {
				ulma_die_msg("at most %d --include and %d --exclude patterns", MAX_PATTERNS,
					     MAX_PATTERNS);
				return ULMA_EXIT_USAGE;
			}
			(c == 'i' ? include : exclude)[(*n)++] = optarg;
			break;
		}
		case 'c':
			o.counts = true;
			break;
		case 'Z':
			o.no_compress = true;
			break;
		case 'K':
			o.filter.no_correction = true;
			break;
		case 'h':
			print_usage(stdout);
			return 0;
		default:
			print_usage(stderr);
			return ULMA_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		ulma_die_msg(optind > argc ? "export needs a trace file" : "export takes one trace file");
		print_usage(stderr);
		return ULMA_EXIT_USAGE;
	}
	if (!format || !output) {
		ulma_die_msg(!format ? "export needs --format" : "export needs -o OUT");
		print_usage(stderr);
		return ULMA_EXIT_USAGE;
	}
	if (o.filter.from_ns > o.filter.to_ns) {
		ulma_die_msg("--from is after --to");
		return ULMA_EXIT_USAGE;
	}
	const struct ulma_export_format *fmt = ulma_export_find(format);
	if (!fmt) {
		char names[256] = "";
		for (const struct ulma_export_format *x = ulma_export_formats; x->name; x++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 x == ulma_export_formats ? "" : ", ", x->name);
		ulma_die_msg("unknown export format '%s' (choose %s)", format, names);
		return 1;
	}
	if (!fmt->write) {
		ulma_die_msg("this ulma was built without the OTF2 library, so it cannot write %s: install it"
			     " (Debian: libotf2-trace-dev) and reinstall ulma", fmt->name);
		return 1;
	}
	if (fmt->directory && strcmp(output, "-") == 0) {
		ulma_die_msg("the %s format writes a directory: -o needs a path", fmt->name);
		return ULMA_EXIT_USAGE;
	}
#if !defined(ULMA_HAVE_ZLIB) && !defined(ULMA_HAVE_LIBDEFLATE) && !defined(ULMA_HAVE_ISAL)
	if (strcmp(fmt->name, "perfetto") == 0 && !o.no_compress)
		fprintf(stderr, "ulma: built without zlib, libdeflate or ISA-L: the perfetto trace is written uncompressed\n");
#endif
	return export_one(fmt, argv[optind - 1], output, &o);
}
