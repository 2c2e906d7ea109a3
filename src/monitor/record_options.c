/* record_options.c - what every recording command shares (see record_options.h). */
#include "record_options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "commands.h"
#include "../core/safe_file.h"
#include "ulma/shm.h"
#include "ulma/trace_format.h"
#include "../analysis/profile_memory.h"

#define ULMA_LINES_PATTERN_MAX 4096

void ulma_record_options_init(struct ulma_record_options *o)
{
	*o = (struct ulma_record_options){.output = ULMA_RECORD_DEFAULT_OUTPUT, .summary = "text", .limit = 25, .split = -1};
}

/* --lines PATTERN.  1, or -1 after saying what is wrong. */
static int add_lines_pattern(struct ulma_record_options *o, const char *pattern)
{
	size_t len = strlen(pattern);
	if (len == 0 || strspn(pattern, " \t\n") == len) {
		ulma_die_msg("--lines takes a pattern (a function or module name, a file, or all), not '%s'", pattern);
		return -1;
	}
	if (len > ULMA_LINES_PATTERN_MAX) {
		ulma_die_msg("--lines takes a pattern of at most %d bytes, not %zu", ULMA_LINES_PATTERN_MAX, len);
		return -1;
	}
	for (unsigned i = 0; i < o->nlines; i++)
		if (strcmp(o->lines[i], pattern) == 0)
			return 1;
	if (o->nlines == ULMA_RECORD_LINES_MAX) {
		ulma_die_msg("--lines given more than %d times: join the names in a glob, or use a file pattern",
			     ULMA_RECORD_LINES_MAX);
		return -1;
	}
	o->lines[o->nlines++] = pattern;
	return 1;
}

#define MEMORY_SAMPLE_DEFAULT (256u << 10) /* bytes between samples, on average */

/* --memory's optional value: `sample` or `sample:BYTES` (K, M or G
 * suffixes, powers of 1024).  1, or -1 after saying what is wrong. */
static int memory_mode(struct ulma_record_options *o, const char *arg)
{
	if (!arg)
		return 1;
	if (strncmp(arg, "sample", 6) != 0 || (arg[6] != '\0' && arg[6] != ':')) {
		ulma_die_msg("--memory takes sample or sample:BYTES, not '%s'", arg);
		return -1;
	}
	o->memory_sample_bytes = MEMORY_SAMPLE_DEFAULT;
	if (arg[6] == '\0')
		return 1;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(arg + 7, &end, 10);
	unsigned shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 : *end == 'G' || *end == 'g' ? 30 : 0;
	if (shift)
		end++;
	if (errno || end == arg + 7 || *end || arg[7] == '-' || n == 0 || n > (UINT64_C(1) << 40) >> shift) {
		ulma_die_msg("--memory=sample:BYTES takes a number of bytes from 1 to 1T (K, M, G allowed), not '%s'",
			     arg + 7);
		return -1;
	}
	o->memory_sample_bytes = (uint64_t)n << shift;
	return 1;
}

#define EARLIER_TRACE ULMA_RECORD_DEFAULT_OUTPUT ".old"

int ulma_record_open_trace(struct ulma_record_options *o, const struct ulma_trace_meta *meta,
			   struct ulma_trace_writer **out)
{
	struct stat st;
	if (!o->output_set && strcmp(o->output, ULMA_RECORD_DEFAULT_OUTPUT) == 0 && lstat(o->output, &st) == 0 &&
	    S_ISREG(st.st_mode)) {
		if (rename(o->output, EARLIER_TRACE) != 0) {
			ulma_die_msg("cannot keep the earlier %s as %s (%s): it is left as it was; name the trace "
				     "with -o", o->output, EARLIER_TRACE, strerror(errno));
			return -1;
		}
		o->kept_earlier = true;
		fprintf(stderr, "ulma: the earlier %s is now %s\n", o->output, EARLIER_TRACE);
	}
	int err = ulma_trace_writer_open(o->output, meta, out);
	if (err) {
		ulma_die_msg("cannot write the trace to '%s': %s", o->output, strerror(-err));
		if (o->kept_earlier && rename(EARLIER_TRACE, o->output) == 0) /* over what the writer may have made */
			o->kept_earlier = false;
		return -1;
	}
	return 0;
}

void ulma_record_discard_trace(const struct ulma_record_options *o)
{
	ulma_safe_discard(o->output);
	if (o->kept_earlier && rename(EARLIER_TRACE, o->output) == 0)
		fprintf(stderr, "ulma: %s is back as %s\n", EARLIER_TRACE, o->output);
}

int ulma_record_option(struct ulma_record_options *o, int c, const char *arg)
{
	switch (c) {
	case 'o':
		o->output = arg;
		o->output_set = true;
		return 1;
	case 'L': /* the default since writers wait; kept for old command lines */
		o->may_drop = false;
		return 1;
	case 'D':
		o->may_drop = true;
		return 1;
	case 'S':
		if (strcmp(arg, "switches") == 0) {
			o->split = ULMA_SPLIT_SWITCHES;
		} else if (strcmp(arg, "schedstat") == 0) {
			o->split = ULMA_SPLIT_SCHEDSTAT;
		} else {
			ulma_die_msg("--split takes switches or schedstat, not '%s'", arg);
			return -1;
		}
		return 1;
	case 'C':
		o->no_c_calls = true;
		return 1;
	case 'M':
		o->memory = true;
		return memory_mode(o, arg);
	case 'K':
		o->no_correction = true;
		return 1;
	case 's':
		if (strcmp(arg, "text") && strcmp(arg, "json") && strcmp(arg, "none")) {
			ulma_die_msg("--summary takes text, json or none, not '%s'", arg);
			return -1;
		}
		o->summary = arg;
		o->summary_set = true;
		return 1;
	case 'n':
		return ulma_parse_limit(arg, &o->limit) < 0 ? -1 : 1;
	case 'P':
		return add_lines_pattern(o, arg);
	default:
		return 0;
	}
}

int ulma_record_define_lines(const struct ulma_record_options *o, struct ulma_session *s)
{
	for (unsigned i = 0; i < o->nlines; i++) {
		if (ulma_session_define(s, ULMA_DEF_LINES_WANTED, o->lines[i], strlen(o->lines[i]), "", 0, 0) == 0) {
			ulma_die_msg("no room for the --lines patterns in the session");
			return -1;
		}
	}
	return 0;
}

void ulma_record_session_config(const struct ulma_record_options *o, struct ulma_session_config *cfg)
{
	cfg->lossless = !o->may_drop;
	cfg->c_calls = !o->no_c_calls;
	cfg->memory = o->memory;
	cfg->memory_sample_bytes = o->memory_sample_bytes;
}

uint32_t ulma_record_meta_flags(const struct ulma_record_options *o, bool use_tsc)
{
	return (use_tsc ? ULMA_META_TSC : 0) | (o->may_drop ? 0 : ULMA_META_LOSSLESS) |
	       (o->no_c_calls ? ULMA_META_NO_C_CALLS : 0) | (o->memory ? ULMA_META_MEMORY : 0);
}

void ulma_record_print_summary(FILE *out, const struct ulma_record_options *o, const struct ulma_summary *s)
{
	if (strcmp(o->summary, "text") == 0)
		ulma_summary_text(out, s, (uint32_t)o->limit);
	else if (strcmp(o->summary, "json") == 0)
		ulma_summary_json(out, s);
}

int ulma_record_open_switches(const struct ulma_record_options *o, pid_t pid, bool child, struct ulma_switches **sw)
{
	*sw = NULL;
	if (o->split == ULMA_SPLIT_SCHEDSTAT)
		return ULMA_SPLIT_SCHEDSTAT;
	int err = child ? ulma_switches_open_child(pid, sw) : ulma_switches_open_process(pid, sw);
	if (!err)
		return ULMA_SPLIT_SWITCHES;
	if (o->split == ULMA_SPLIT_SWITCHES)
		ulma_die_msg("no context-switch records (%s%s); sampling schedstat instead", strerror(-err),
			     err == -EACCES || err == -EPERM ? ": see /proc/sys/kernel/perf_event_paranoid" : "");
	return ULMA_SPLIT_SCHEDSTAT;
}

uint64_t ulma_record_self_cpu_ns(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * UINT64_C(1000000000) +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

int ulma_record_close_trace(const struct ulma_record_options *o, struct ulma_collector *col, struct ulma_trace_writer *w,
			    const struct ulma_clock_pair *end, int exit_status, uint64_t monitor_cpu_ns)
{
	col->profile.lost += atomic_load(&col->session->hdr->lost_unmarked); /* drops no marker reports */
	if (col->profile.memory)
		col->profile.memory->unattributed = atomic_load(&col->session->hdr->mem_unattributed);
	if (!w)
		return 0;
	struct ulma_trace_end e = {
		.end_ticks = end->ticks,
		.end_ns = end->ns,
		.events = ulma_profile_events(&col->profile),
		.lost = col->profile.lost,
		.failures = atomic_load(&col->session->hdr->failures),
		.exit_status = exit_status,
		.split = (uint32_t)col->split,
		.monitor_cpu_ns = monitor_cpu_ns,
		.switches_lost = ulma_switches_lost(col->switches),
		.gil_split = col->profile.has_gil != 0,
		.resynced = col->resynced,
		.refused = col->refused,
		.mem_unattributed = col->profile.memory ? col->profile.memory->unattributed : 0,
	};
	int err = col->error ? col->error : 0;
	int cerr = ulma_trace_writer_close(w, &e);
	if (!err)
		err = cerr;
	if (err)
		ulma_die_msg("error writing the trace '%s': %s", o->output, strerror(-err));
	return err;
}

void ulma_record_summary(struct ulma_summary *s, struct ulma_collector *col, const char *trace_path, bool use_tsc,
			 uint64_t hz, const struct ulma_clock_pair *start, const struct ulma_clock_pair *end,
			 int exit_status, uint64_t monitor_cpu_ns, bool no_correction)
{
	struct stat st;
	*s = (struct ulma_summary){.profile = &col->profile,
				   .duration_ns = end->ns - start->ns,
				   .trace_bytes = trace_path && stat(trace_path, &st) == 0 ? (uint64_t)st.st_size : 0,
				   .trace_path = trace_path,
				   .failures = atomic_load(&col->session->hdr->failures),
				   .complete = true,
				   .exit_status = exit_status,
				   .overhead_ps = col->overhead_ps,
				   .no_correction = no_correction,
				   .monitor_cpu_ns = monitor_cpu_ns,
				   .switches_lost = ulma_switches_lost(col->switches),
				   .resynced = col->resynced,
				   .refused = col->refused};
	ulma_clock_calibrate(use_tsc, start, end, hz, &s->cal);
}
