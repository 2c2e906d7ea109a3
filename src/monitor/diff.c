/* diff.c - `ulma diff A.trace B.trace`: what changed between two runs
 * (src/analysis/diff.h, docs/diff.md), as a table, as JSON, or as a
 * differential flame graph; with --fail-above, an exit status for CI.
 *
 * Exit status: 0, or 1 when --fail-above found a regression past it; 2 for
 * a usage error; 3 when a trace cannot be read (missing, not a trace,
 * corrupt, another version) or the output cannot be written.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../analysis/diff.h"
#include "../core/safe_file.h"
#include "commands.h"

#define EXIT_REGRESSION 1
#define EXIT_UNREADABLE 3

static const char diff_usage[] =
	"usage: ulma diff A.trace B.trace [--format text|json] [--limit N] [--html OUT.html]\n"
	"                 [--fail-above PCT%] [--min-time T] [--no-correction]\n"
	"  --format F        text (default) or json (docs/json.md, \"ulma diff\")\n"
	"  --limit N         rows of the text table: the functions that changed most (default 30)\n"
	"  --html OUT        also write a differential flame graph (a self-contained page);\n"
	"                    `--html -` writes it to stdout instead of the table\n"
	"  --fail-above PCT  exit 1 when a function's total time grew by more than PCT percent\n"
	"  --min-time T      ... and by at least T (default 1ms; ns, or 5us, 1.5ms, 2s)\n"
	"  --fail-on WHAT    wall (default): the total time; cpu: its part on a CPU, which a busy\n"
	"                    machine's waits for a CPU do not change (both runs need the time split)\n"
	"  --no-correction   times as measured, the hook's own cost included (docs/overhead.md)\n"
	"exit status: 0; 1 a regression past --fail-above; 2 bad usage; 3 a trace could not be read\n"
	"or the output written (docs/diff.md)\n";

/* The terminal's width, else $COLUMNS, else 120. */
static unsigned terminal_width(void)
{
	struct winsize ws;
	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
		return ws.ws_col;
	const char *cols = getenv("COLUMNS");
	long v = cols ? strtol(cols, NULL, 10) : 0;
	return v >= 40 && v <= 1000 ? (unsigned)v : 120;
}

/* "10", "10%" or "2.5%": a percentage >= 0.  Returns 0 or -1. */
static int parse_percent(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || (*end && strcmp(end, "%") != 0) || !isfinite(v) || v < 0)
		return -1;
	*out = v;
	return 0;
}

/* Read one side; says what is wrong.  Returns 0 or -1. */
static int read_side(struct ulma_diff_side *s, const char *path, bool no_correction, bool tree)
{
	FILE *f;
	const char *why;
	int err = ulma_trace_open(path, &f, &why);
	if (err) {
		memset(s, 0, sizeof(*s));
		ulma_walk_init(&s->walk, NULL);
		ulma_profile_init(&s->profile);
		ulma_die_msg("cannot open trace '%s': %s", path, why ? why : strerror(-err));
		return -1;
	}
	err = ulma_diff_side_read(s, f, no_correction, tree);
	fclose(f);
	if (s->read_error)
		ulma_die_msg("cannot read trace '%s': %s", path, strerror(EIO));
	else if (err == -EPROTO)
		ulma_die_msg("%s: not a readable ulma trace: %s", path, s->st.error);
	else if (err)
		ulma_die_msg("%s: %s", path, strerror(-err));
	else if (!s->st.complete)
		ulma_die_msg("warning: %s is incomplete (cut short at byte %llu); comparing the %llu events it holds",
			     path, (unsigned long long)s->st.bytes, (unsigned long long)s->st.events);
	return err || s->read_error ? -1 : 0;
}

/* The flame graph into path: a device or FIFO as it is, else a new file
 * (safe_file.h), removed again if it could not be written whole. */
static int write_html(const struct ulma_diff *d, const char *path)
{
	bool to_stdout = strcmp(path, "-") == 0;
	int fd = to_stdout ? dup(STDOUT_FILENO) : ulma_open_special(path);
	bool special = fd >= 0;
	if (fd == -ENOENT)
		fd = ulma_safe_create(path, 0666);
	FILE *out = fd >= 0 ? fdopen(fd, "wb") : NULL;
	if (!out) {
		ulma_die_msg("cannot write '%s': %s", path, strerror(fd < 0 ? -fd : errno));
		if (fd >= 0)
			close(fd);
		if (fd >= 0 && !special)
			ulma_safe_discard(path);
		return -1;
	}
	errno = 0;
	int err = ulma_diff_html(out, d, d->path_a, d->path_b);
	int werr = errno;
	if (fclose(out) != 0 && !err) {
		err = -EIO;
		werr = errno;
	}
	if (err) {
		ulma_die_msg("cannot write '%s': %s", path, strerror(err == -EIO ? (werr ? werr : EIO) : -err));
		if (!special)
			ulma_safe_discard(path);
		return -1;
	}
	return 0;
}

int ulma_cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{"format", required_argument, NULL, 'f'},
		{"limit", required_argument, NULL, 'n'},
		{"html", required_argument, NULL, 'H'},
		{"fail-above", required_argument, NULL, 'F'},
		{"min-time", required_argument, NULL, 'm'},
		{"fail-on", required_argument, NULL, 'o'},
		{"no-correction", no_argument, NULL, 'C'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *format = "text", *html = NULL;
	long limit = 30;
	bool no_correction = false;
	struct ulma_diff_threshold threshold = {-1.0, 1000000, false};
	int c;
	optind = 0;
	while ((c = getopt_long(argc + 1, argv - 1, "f:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			format = optarg;
			break;
		case 'n':
			if (ulma_parse_limit(optarg, &limit) < 0)
				return ULMA_EXIT_USAGE;
			break;
		case 'H':
			html = optarg;
			break;
		case 'F':
			if (parse_percent(optarg, &threshold.percent)) {
				ulma_die_msg("--fail-above takes a percentage such as 10%%, not '%s'", optarg);
				return ULMA_EXIT_USAGE;
			}
			break;
		case 'm':
			if (ulma_walk_parse_ns(optarg, &threshold.min_ns)) {
				ulma_die_msg("--min-time takes a time in ns or with a suffix (us, ms, s), not '%s'", optarg);
				return ULMA_EXIT_USAGE;
			}
			break;
		case 'o':
			if (strcmp(optarg, "wall") != 0 && strcmp(optarg, "cpu") != 0) {
				ulma_die_msg("--fail-on takes wall or cpu, not '%s'", optarg);
				return ULMA_EXIT_USAGE;
			}
			threshold.on_cpu = strcmp(optarg, "cpu") == 0;
			break;
		case 'C':
			no_correction = true;
			break;
		case 'h':
			fputs(diff_usage, stdout);
			return 0;
		default:
			fputs(diff_usage, stderr);
			return ULMA_EXIT_USAGE;
		}
	}
	if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0) {
		ulma_die_msg("unknown format '%s' (choose text or json)", format);
		return ULMA_EXIT_USAGE;
	}
	if (argc - (optind - 1) != 2) {
		ulma_die_msg("diff takes two trace files, the run before (A) and the run after (B)");
		fputs(diff_usage, stderr);
		return ULMA_EXIT_USAGE;
	}
	const char *path_a = argv[optind - 1], *path_b = argv[optind];
	if (html && strcmp(html, "-") != 0 && (ulma_same_file(html, path_a) || ulma_same_file(html, path_b))) {
		ulma_die_msg("the output '%s' is a trace being read: write it elsewhere", html);
		return ULMA_EXIT_USAGE;
	}
	struct ulma_diff_side a, b;
	int ra = read_side(&a, path_a, no_correction, html != NULL);
	int rb = ra ? 0 : read_side(&b, path_b, no_correction, html != NULL);
	if (ra || rb) {
		ulma_diff_side_free(&a);
		if (!ra)
			ulma_diff_side_free(&b);
		return EXIT_UNREADABLE;
	}
	struct ulma_diff d;
	int err = ulma_diff_build(&d, &a, &b);
	int status = 0;
	if (!err && threshold.on_cpu && !d.split) {
		ulma_die_msg("--fail-on cpu needs both runs recorded with the on-CPU split (docs/time-split.md)");
		status = EXIT_UNREADABLE;
	} else if (err) {
		ulma_die_msg("cannot compare the traces: %s", strerror(-err));
		status = EXIT_UNREADABLE;
	} else {
		d.path_a = path_a;
		d.path_b = path_b;
		errno = 0;
		if (html && strcmp(html, "-") == 0)
			err = 0; /* the page goes to stdout instead */
		else
			err = strcmp(format, "json") == 0 ? ulma_diff_json(stdout, &d, &threshold)
							  : ulma_diff_text(stdout, &d, (uint32_t)limit, terminal_width());
		if (fflush(stdout) != 0 || err) {
			ulma_die_msg("cannot write the diff: %s", strerror(err == -ENOMEM ? ENOMEM : errno ? errno : EIO));
			status = EXIT_UNREADABLE;
		}
		if (!status && html && write_html(&d, html))
			status = EXIT_UNREADABLE;
		if (!status && threshold.percent >= 0) {
			uint32_t n = ulma_diff_regressions(&d, &threshold);
			if (n) {
				ulma_die_msg("%u function%s grew by more than %g%% and %.3f ms%s (--fail-above)", n,
					     n == 1 ? "" : "s", threshold.percent, (double)threshold.min_ns / 1e6,
					     threshold.on_cpu ? " on a CPU" : "");
				status = EXIT_REGRESSION;
			}
		}
	}
	ulma_diff_free(&d);
	ulma_diff_side_free(&a);
	ulma_diff_side_free(&b);
	return status;
}
