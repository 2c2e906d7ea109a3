/* summary.c - text and JSON rendering of a profile (see summary.h). */
#include "summary.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "display_width.h"
#include "export_text.h"
#include "overhead.h"
#include "profile_objects.h"
#include "summary_parts.h"
#include "ulma/shm.h"

uint64_t ulma_summary_ns(const struct ulma_summary *s, uint64_t ticks)
{
	return ulma_clock_ticks_to_ns(&s->cal, ticks);
}

/* The hook's cost per event to subtract, in ns (0: no correction). */
double ulma_summary_cost_per_event(const struct ulma_summary *s)
{
	return s->no_correction ? 0.0 : (double)s->overhead_ps / 1000.0;
}

/* The on-CPU part of wall_ns, the rest being off a CPU. */
static uint64_t on_cpu(uint64_t wall_ns, uint64_t blocked_ns, uint64_t runnable_ns)
{
	uint64_t off = blocked_ns + runnable_ns;
	return wall_ns > off ? wall_ns - off : 0;
}

void ulma_summary_times(const struct ulma_summary *s, const struct ulma_func_row *f, struct ulma_time_split *self,
			struct ulma_time_split *total)
{
	double b = ulma_summary_cost_per_event(s);
	uint64_t raw_total = ulma_summary_ns(s, f->total_ticks), raw_self = ulma_summary_ns(s, f->self_ticks);
	ulma_overhead_split(raw_self, on_cpu(raw_self, f->self_blocked_ns, f->self_runnable_ns), f->self_runnable_ns,
			    f->self_gil_ns, ulma_overhead_cost(f->self_events, b), self);
	uint64_t total_cost = ulma_overhead_cost(f->total_events, b);
	/* callees clamped at zero gave back less than was charged: a total
	 * never goes below its self time */
	uint64_t room = raw_total > self->wall_ns ? raw_total - self->wall_ns : 0;
	if (total_cost > room)
		total_cost = room;
	ulma_overhead_split(raw_total, on_cpu(raw_total, f->total_blocked_ns, f->total_runnable_ns),
			    f->total_runnable_ns, f->total_gil_ns, total_cost, total);
}

/* ns * num / den, rounded, in integers (times near 2^64, as a corrupt
 * trace may hold, neither overflow nor leave a double out of range);
 * num <= den. */
static uint64_t scale_ns(uint64_t ns, uint64_t num, uint64_t den)
{
	return (uint64_t)(((unsigned __int128)ns * num + den / 2) / den);
}

/* Of f's total as shown, the time in C functions and native code below
 * it: the measured share of the raw total, applied to the total shown (so
 * the hook's cost, where it is taken out, comes out of both parts alike).
 * (summary_parts.h) */
uint64_t ulma_summary_native_ns(const struct ulma_summary *s, const struct ulma_func_row *f,
				const struct ulma_time_split *total)
{
	uint64_t raw_total = ulma_summary_ns(s, f->total_ticks), raw_native = ulma_summary_ns(s, f->total_native_ticks);
	if (raw_total == 0 || raw_native == 0)
		return 0;
	if (raw_native >= raw_total)
		return total->wall_ns;
	return scale_ns(total->wall_ns, raw_native, raw_total);
}

/* The threads' time in native code (C functions and native code), and in
 * all, in ns. */
static void native_split(const struct ulma_summary *s, uint64_t *native, uint64_t *all)
{
	*native = *all = 0;
	for (uint32_t i = 0; i < s->profile->nthreads; i++) {
		*native += ulma_summary_ns(s, s->profile->threads[i].native_ticks);
		*all += ulma_summary_ns(s, s->profile->threads[i].self_ticks);
	}
	/* as the table's times: the hook's cost taken out, of both parts alike */
	uint64_t cost = ulma_overhead_cost(ulma_profile_events(s->profile), ulma_summary_cost_per_event(s));
	if (cost > 0 && *all > 0) {
		uint64_t kept = cost < *all ? *all - cost : 0;
		*native = scale_ns(*native, kept, *all);
		*all = kept;
	}
}

static const char *or_unknown(const char *s)
{
	return s && *s ? s : "?";
}

/* Shorten a path for a table cell: relative to cwd when inside it, else its tail. */
const char *ulma_summary_short_path(const char *path, char *buf, size_t cap)
{
	char cwd[4096];
	if (path[0] == '/' && getcwd(cwd, sizeof(cwd))) {
		size_t n = strlen(cwd);
		if (strncmp(path, cwd, n) == 0 && path[n] == '/')
			path += n + 1;
	}
	size_t len = strlen(path);
	if (len < cap)
		return path;
	snprintf(buf, cap, "...%s", path + len - (cap - 4));
	return buf;
}

static void human_bytes(uint64_t b, char *buf, size_t cap)
{
	if (b >= (UINT64_C(1) << 30))
		snprintf(buf, cap, "%.2f GiB", (double)b / (double)(UINT64_C(1) << 30));
	else if (b >= (1u << 20))
		snprintf(buf, cap, "%.2f MiB", (double)b / (double)(1u << 20));
	else if (b >= 1024)
		snprintf(buf, cap, "%.1f KiB", (double)b / 1024.0);
	else
		snprintf(buf, cap, "%llu B", (unsigned long long)b);
}

static void failure_text(uint32_t f, char *buf, size_t cap)
{
	buf[0] = 0;
	if (f & ULMA_FAIL_DEFS_FULL)
		strncat(buf, " definition area full (some names are '?');", cap - strlen(buf) - 1);
	if (f & ULMA_FAIL_NO_SLOT)
		strncat(buf, " too many live threads (their events were lost);", cap - strlen(buf) - 1);
	if (f & ULMA_FAIL_NOMEM)
		strncat(buf, " out of memory in the hook;", cap - strlen(buf) - 1);
	if (f & ULMA_FAIL_MONITOR_GONE)
		strncat(buf, " monitor stopped answering, lossless mode fell back to dropping;",
			cap - strlen(buf) - 1);
	if (f & ULMA_FAIL_HOOK_REPLACED)
		strncat(buf, " another profiler (a C extension such as yappi) replaced ulma's hook on some thread,"
			     " so calls made there meanwhile are missing;",
			cap - strlen(buf) - 1);
	if (f & ULMA_FAIL_LINES_TRACER)
		strncat(buf, " a trace function of the program's (sys.settrace: a debugger, coverage) held a thread"
			     " that ran code chosen with --lines, so its lines there are missing;",
			cap - strlen(buf) - 1);
	if (f & ULMA_FAIL_NOT_CALIBRATED)
		strncat(buf, " the hook's cost was not measured (a profiler or debugger of the program's watched every"
			     " thread while others ran), so the times include it;",
			cap - strlen(buf) - 1);
}

void ulma_summary_thread_times(const struct ulma_summary *s, uint32_t thread, uint64_t *wall_ns,
			       uint64_t *self_ns)
{
	const struct ulma_thread_row *t = &s->profile->threads[thread];
	*wall_ns = t->seen ? ulma_summary_ns(s, t->last_ticks - t->first_ticks) : 0;
	*self_ns = ulma_summary_ns(s, t->self_ticks);
}

static uint32_t count_processes(const struct ulma_profile *p)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < p->nthreads; i++) {
		uint32_t j = 0;
		while (j < i && p->threads[j].pid != p->threads[i].pid)
			j++;
		n += j == i;
	}
	return n;
}

/* A thread's on-CPU ns: over its events less its time off a CPU, or,
 * where the split is schedstat's, between its first and last samples when
 * they are two.  (With switch records the thread is sampled too, for the
 * GIL, but a short one may have a single sample: its CPU time read 0.) */
static uint64_t thread_cpu(const struct ulma_summary *s, const struct ulma_thread_row *t)
{
	if (t->sampled && s->profile->split == ULMA_PROFILE_SPLIT_SCHEDSTAT && t->sample_cpu1 > t->sample_cpu0)
		return t->sample_cpu1 - t->sample_cpu0;
	uint64_t wall = t->seen ? ulma_summary_ns(s, t->last_ticks - t->first_ticks) : 0;
	/* off the CPU within that span: what was charged to its frames (its
	 * clocks `now` also hold the time off before its first event) */
	return on_cpu(wall, t->self_blocked_ns, t->self_runnable_ns);
}

/* The on-CPU part of a thread's self time. */
static uint64_t thread_self_cpu(const struct ulma_summary *s, const struct ulma_thread_row *t)
{
	return on_cpu(ulma_summary_ns(s, t->self_ticks), t->self_blocked_ns, t->self_runnable_ns);
}

uint64_t ulma_summary_program_cpu_ns(const struct ulma_summary *s)
{
	uint64_t cpu = 0;
	for (uint32_t i = 0; i < s->profile->nthreads; i++)
		cpu += thread_cpu(s, &s->profile->threads[i]);
	return cpu;
}

const char *ulma_summary_split_method(const struct ulma_summary *s)
{
	switch (s->profile->split) {
	case ULMA_PROFILE_SPLIT_SWITCHES:
		return "switches";
	case ULMA_PROFILE_SPLIT_SCHEDSTAT:
		return "schedstat";
	default:
		return "none";
	}
}

#define CUT_MARK "..."

/* the monitor's CPU is given as a share of the program's from this much of it */
#define MONITOR_SHARE_FROM_NS 100000000u

/* s with each character the terminal must not get raw shown as '?': a
 * control (newlines, escape sequences, U+2028, ...) or invalid UTF-8
 * (ulma_terminal_char).  Function names and command lines are the traced
 * program's to choose.  At most `max` (> 3) columns (display_width.h: a
 * CJK character or an emoji takes two, a combining mark none): a wider s
 * is cut before a whole character and ends in "...", so the cut shows.
 * Returns the columns written. */
size_t ulma_summary_put_printable(FILE *out, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), cols = 0;
	bool printable;
	for (size_t left = n; left;) { /* measure first: is there a cut? */
		size_t k = ulma_terminal_char(p + (n - left), left, &printable);
		cols += printable ? ulma_display_width(ulma_utf8_code_point(p + (n - left), k)) : 1;
		left -= k;
	}
	bool cut = cols > max;
	size_t room = cut ? max - (sizeof(CUT_MARK) - 1) : cols, written = 0;
	while (n) {
		size_t k = ulma_terminal_char(p, n, &printable);
		size_t w = printable ? ulma_display_width(ulma_utf8_code_point(p, k)) : 1;
		if (written + w > room)
			break;
		if (printable)
			fwrite(p, 1, k, out);
		else
			fputc('?', out);
		written += w;
		p += k;
		n -= k;
	}
	if (cut) {
		fputs(CUT_MARK, out);
		written += sizeof(CUT_MARK) - 1;
	}
	return written;
}

/* One row per process, in order of appearance, with its command where known. */
static void print_processes(FILE *out, const struct ulma_summary *s)
{
	const struct ulma_profile *p = s->profile;
	fprintf(out, "%10s %8s %12s %10s %12s %12s  %s\n", "pid", "threads", "events", "lost", "self ms", "cpu ms",
		"command");
	for (uint32_t i = 0; i < p->nthreads; i++) {
		uint32_t pid = p->threads[i].pid, j = 0;
		while (j < i && p->threads[j].pid != pid)
			j++;
		if (j < i)
			continue; /* printed with its first thread */
		uint64_t events = 0, lost = 0, self = 0, cpu = 0;
		uint32_t threads = 0;
		for (uint32_t k = i; k < p->nthreads; k++) {
			const struct ulma_thread_row *t = &p->threads[k];
			if (t->pid != pid)
				continue;
			threads++;
			events += t->events;
			lost += t->lost;
			self += t->self_ticks;
			cpu += thread_cpu(s, t);
		}
		const char *name = ulma_pid_names_get(&p->names, pid);
		fprintf(out, "%10u %8u %12llu %10llu %12.3f %12.3f  ", pid, threads, (unsigned long long)events,
			(unsigned long long)lost, (double)ulma_summary_ns(s, self) / 1e6, (double)cpu / 1e6);
		ulma_summary_put_printable(out, name ? name : "?", 100);
		fputc('\n', out);
	}
}

static void print_lanes(FILE *out, const struct ulma_summary *s)
{
	const struct ulma_profile *p = s->profile;
	fprintf(out, "cpu lanes over %.3f s (a digit: the CPU the thread ran on, for at least a fifth of that time; '.': "
		"off a CPU):\n",
		(double)s->duration_ns / 1e9);
	for (uint32_t i = 0; i < p->nthreads && i < 32; i++)
		if (s->lanes[i]) {
			fprintf(out, "%8u/%-8u |%s|", p->threads[i].pid, p->threads[i].tid, s->lanes[i]);
			if (p->threads[i].name) { /* the thread's last name (docs/hooks.md, "Thread names") */
				fputc(' ', out);
				ulma_summary_put_printable(out, p->threads[i].name, 40);
			}
			fputc('\n', out);
		}
	if (p->nthreads > 32)
		fprintf(out, "  (%u more threads in the JSON report)\n", p->nthreads - 32);
}

/* Function indices by self time as shown (corrected unless asked not to). */
static uint32_t *sorted_by_shown_self(const struct ulma_summary *s)
{
	const struct ulma_profile *p = s->profile;
	uint64_t *key = malloc((p->nfuncs ? p->nfuncs : 1) * sizeof(*key));
	if (!key)
		return NULL;
	for (uint32_t i = 0; i < p->nfuncs; i++) {
		struct ulma_time_split self, total;
		ulma_summary_times(s, &p->funcs[i], &self, &total);
		key[i] = self.wall_ns;
	}
	uint32_t *order = ulma_profile_sorted_by_key(p, key);
	free(key);
	return order;
}

int ulma_summary_text(FILE *out, const struct ulma_summary *s, uint32_t limit)
{
	const struct ulma_profile *p = s->profile;
	uint32_t *order = sorted_by_shown_self(s);
	char pbuf[48], bbuf[32], fbuf[1024];
	if (!order)
		return -ENOMEM;
	bool split = p->split != ULMA_PROFILE_SPLIT_NONE, gil = p->has_gil;
	if (split)
		fprintf(out, "\n%12s %12s %12s %11s %5s %5s %5s%s %5s  %-36s %s\n", "calls", "total ms", "self ms",
			"us/call", "cpu%", "run%", "blk%", gil ? "  gil%" : "", "nat%", "function", "file:line");
	else
		fprintf(out, "\n%12s %12s %12s %11s %5s  %-36s %s\n", "calls", "total ms", "self ms", "us/call",
			"nat%", "function", "file:line");
	uint32_t shown = 0;
	for (uint32_t k = 0; k < p->nfuncs && shown < limit; k++) {
		const struct ulma_func_row *f = &p->funcs[order[k]];
		if (f->calls == 0)
			continue;
		shown++;
		struct ulma_time_split self, total;
		ulma_summary_times(s, f, &self, &total);
		const char *file = or_unknown(f->file);
		fprintf(out, "%12llu %12.3f %12.3f %11.3f ", (unsigned long long)f->calls, (double)total.wall_ns / 1e6,
			(double)self.wall_ns / 1e6, (double)total.wall_ns / 1e3 / (double)f->calls);
		if (split) {
			double d = self.wall_ns ? (double)self.wall_ns / 100.0 : 1.0;
			fprintf(out, "%5.0f %5.0f %5.0f ", (double)self.on_cpu_ns / d, (double)self.runnable_ns / d,
				(double)self.blocked_ns / d);
			if (gil)
				fprintf(out, "%5.0f ", (double)self.gil_ns / d);
		}
		fprintf(out, "%5.0f ",
			total.wall_ns ? 100.0 * (double)ulma_summary_native_ns(s, f, &total) / (double)total.wall_ns : 0.0);
		fputc(' ', out);
		for (size_t n = ulma_summary_put_printable(out, or_unknown(f->name), 60); n < 36; n++)
			fputc(' ', out);
		fputc(' ', out);
		if (strcmp(file, "~") == 0) {
			fprintf(out, "~\n");
		} else {
			ulma_summary_put_printable(out, ulma_summary_short_path(file, pbuf, sizeof(pbuf)), sizeof(pbuf));
			fprintf(out, ":%u\n", f->line);
		}
	}
	free(order);
	ulma_summary_lines_text(out, s, limit);
	ulma_summary_memory_text(out, s, limit);
	ulma_summary_mpi_text(out, s);

	uint32_t procs = count_processes(p);
	char ending[64] = "";
	if (s->exit_status >= 0 && WIFEXITED(s->exit_status))
		snprintf(ending, sizeof(ending), ", exit status %d", WEXITSTATUS(s->exit_status));
	else if (s->exit_status >= 0 && WIFSIGNALED(s->exit_status))
		snprintf(ending, sizeof(ending), ", killed by signal %d (%s)", WTERMSIG(s->exit_status),
			 strsignal(WTERMSIG(s->exit_status)));
	fprintf(out, "\ntotals: %.3f s wall, %u thread%s, %u process%s%s\n", (double)s->duration_ns / 1e9,
		p->nthreads, p->nthreads == 1 ? "" : "s", procs, procs == 1 ? "" : "es", ending);
	if (procs > 1)
		print_processes(out, s);
	if (s->lanes)
		print_lanes(out, s);
	if (split)
		fprintf(out, "parallelism: %.2f threads on a CPU on average (cpu%% on a CPU, run%% waiting for one, "
			     "blk%% blocked%s; %s)\n",
			ulma_summary_parallelism(s), gil ? ", gil% of it waiting for the GIL" : "",
			p->split == ULMA_PROFILE_SPLIT_SWITCHES ? "from the scheduler's switch records"
								 : "sampled from schedstat");
	uint64_t nat, in_frames;
	native_split(s, &nat, &in_frames);
	if (in_frames) {
		double py = (double)(in_frames > nat ? in_frames - nat : 0);
		bool small = in_frames < 10000000; /* under 10 ms: in ms */
		fprintf(out, "native: %.3f %s in C functions and native code, %.3f %s interpreting Python (nat%% of "
			     "each function's total)\n",
			(double)nat / (small ? 1e6 : 1e9), small ? "ms" : "s", py / (small ? 1e6 : 1e9), small ? "ms" : "s");
	}
	if (s->resynced)
		fprintf(out, "resynchronised: %llu frames left without their exit or exits without an entry "
			     "(longjmp, C++ exceptions, lost records); the stacks were repaired\n",
			(unsigned long long)s->resynced);
	if (s->refused)
		fprintf(out, "refused: %llu malformed records or definitions in the program's shared memory were "
			     "dropped (a writer that broke the format: docs/design.md, \"Hostile writers\")\n",
			(unsigned long long)s->refused);
	uint64_t events = ulma_profile_events(p), all = events + p->lost;
	fprintf(out, "events: %llu captured, %llu lost (%.2f%%)\n", (unsigned long long)events,
		(unsigned long long)p->lost, all ? 100.0 * (double)p->lost / (double)all : 0.0);
	if (s->monitor_cpu_ns) {
		uint64_t program = ulma_summary_program_cpu_ns(s);
		fprintf(out, "monitor: %.3f s of CPU", (double)s->monitor_cpu_ns / 1e9);
		/* a share of a program of a few ms is the monitor's start-up, not its
		 * cost per event (a 6-event script read 6762%) */
		if (program >= MONITOR_SHARE_FROM_NS)
			fprintf(out, ", %.0f%% of the program's %.3f s", 100.0 * (double)s->monitor_cpu_ns / (double)program,
				(double)program / 1e9);
		fputc('\n', out);
	}
	if (s->overhead_ps)
		fprintf(out, "overhead: the hook costs about %.0f ns per event, %.3f s over this run; %s\n",
			(double)s->overhead_ps / 1e3, (double)s->overhead_ps * (double)events / 1e12,
			s->no_correction ? "not subtracted (--no-correction)"
					 : "subtracted from the times above (--no-correction shows them raw)");
	if (s->trace_bytes) {
		human_bytes(s->trace_bytes, bbuf, sizeof(bbuf));
		fprintf(out, "trace:  %s, %s, %.2f bytes/event%s\n", s->trace_path ? s->trace_path : "-", bbuf,
			events ? (double)s->trace_bytes / (double)events : 0.0,
			s->complete ? "" : " (incomplete: cut short before its end record)");
	}
	if (s->failures) {
		failure_text(s->failures, fbuf, sizeof(fbuf));
		fprintf(out, "warnings:%s\n", fbuf);
	}
	return ferror(out) ? -EIO : 0;
}

/* JSON string with escapes; invalid UTF-8 bytes become U+FFFD. */
void ulma_summary_json_string(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	fputc('"', out);
	while (*p) {
		unsigned c = *p;
		if (c == '"' || c == '\\') {
			fputc('\\', out);
			fputc((int)c, out);
			p++;
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(out, "\\u%04x", c);
			p++;
		} else if (c < 0x80) {
			fputc((int)c, out);
			p++;
		} else {
			int n = c >= 0xf0 && c <= 0xf4 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 && c < 0xe0 ? 1 : -1;
			int ok = n > 0;
			for (int i = 1; ok && i <= n; i++)
				ok = (p[i] & 0xc0) == 0x80;
			if (ok && n == 2 && c == 0xe0 && p[1] < 0xa0)
				ok = 0; /* overlong */
			if (ok && n == 2 && c == 0xed && p[1] >= 0xa0)
				ok = 0; /* surrogate */
			if (ok && n == 3 && ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] >= 0x90)))
				ok = 0;
			if (ok && ulma_is_terminal_control(ulma_utf8_code_point(p, (size_t)n + 1))) {
				/* C1, U+2028 ...: escaped, so JSON on a terminal does not act on them */
				fprintf(out, "\\u%04x", (unsigned)ulma_utf8_code_point(p, (size_t)n + 1));
				p += n + 1;
			} else if (ok) {
				fwrite(p, 1, (size_t)n + 1, out);
				p += n + 1;
			} else {
				fputs("\\ufffd", out);
				p++;
			}
		}
	}
	fputc('"', out);
}

/* Over the traced span, from the first event of any thread to the last:
 * the session's wall time also holds the interpreter's start-up and exit,
 * which made a short program's parallelism 0.00. */
double ulma_summary_parallelism(const struct ulma_summary *s)
{
	uint64_t first, last;
	ulma_profile_span(s->profile, &first, &last);
	uint64_t span = last > first ? ulma_summary_ns(s, last - first) : 0;
	uint64_t cpu = ulma_summary_program_cpu_ns(s);
	return span ? (double)cpu / (double)span : 0.0;
}

/* The JSON report's c_kind of a C function (docs/json.md). */
static const char *c_kind_name(uint8_t kind)
{
	switch (kind) {
	case ULMA_DEF_C_METHOD:
		return "method";
	case ULMA_DEF_C_CLASSMETHOD:
		return "classmethod";
	case ULMA_DEF_C_UNBOUND:
		return "unbound";
	default:
		return "function";
	}
}

/* The JSON `kind` of a function (docs/json.md). */
static const char *kind_name(uint8_t kind)
{
	if (ulma_def_is_c(kind))
		return "c";
	switch (kind) {
	case ULMA_DEF_NATIVE:
		return "native";
	case ULMA_DEF_ZONE:
		return "zone";
	case ULMA_DEF_MARK:
		return "mark";
	default:
		return "python";
	}
}

int ulma_summary_json(FILE *out, const struct ulma_summary *s)
{
	const struct ulma_profile *p = s->profile;
	uint32_t *order = sorted_by_shown_self(s);
	uint64_t events = ulma_profile_events(p);
	char fbuf[1024];
	if (!order)
		return -ENOMEM;
	struct ulma_obj_count *objects = NULL; /* (function, type) rows by function (--memory, 3.13+) */
	uint32_t nobjects = 0;
	if (ulma_profile_objects_by_func(p, &objects, &nobjects) < 0) {
		free(order);
		return -ENOMEM;
	}
	fputs("{\"functions\": [", out);
	int first = 1;
	for (uint32_t k = 0; k < p->nfuncs; k++) {
		const struct ulma_func_row *f = &p->funcs[order[k]];
		if (f->calls == 0)
			continue;
		fputs(first ? "\n  {\"name\": " : ",\n  {\"name\": ", out);
		first = 0;
		ulma_summary_json_string(out, or_unknown(f->name));
		fputs(", \"file\": ", out);
		ulma_summary_json_string(out, or_unknown(f->file));
		struct ulma_time_split self, total;
		ulma_summary_times(s, f, &self, &total);
		fprintf(out,
			", \"line\": %u, \"kind\": \"%s\", \"calls\": %llu, \"total_ns\": %llu, \"self_ns\": %llu, "
			"\"raw_total_ns\": %llu, \"raw_self_ns\": %llu",
			f->line, kind_name(f->kind), (unsigned long long)f->calls,
			(unsigned long long)total.wall_ns, (unsigned long long)self.wall_ns,
			(unsigned long long)ulma_summary_ns(s, f->total_ticks), (unsigned long long)ulma_summary_ns(s, f->self_ticks));
		fprintf(out, ", \"total_native_ns\": %llu", (unsigned long long)ulma_summary_native_ns(s, f, &total));
		if (ulma_def_is_c(f->kind))
			fprintf(out, ", \"c_kind\": \"%s\"", c_kind_name(f->kind));
		if (p->split != ULMA_PROFILE_SPLIT_NONE)
			fprintf(out,
				", \"on_cpu_ns\": %llu, \"runnable_ns\": %llu, \"blocked_ns\": %llu, "
				"\"total_on_cpu_ns\": %llu, \"total_runnable_ns\": %llu, \"total_blocked_ns\": %llu",
				(unsigned long long)self.on_cpu_ns, (unsigned long long)self.runnable_ns,
				(unsigned long long)self.blocked_ns, (unsigned long long)total.on_cpu_ns,
				(unsigned long long)total.runnable_ns, (unsigned long long)total.blocked_ns);
		if (p->split == ULMA_PROFILE_SPLIT_SWITCHES)
			fprintf(out,
				", \"voluntary_switches\": %llu, \"involuntary_switches\": %llu, "
				"\"total_voluntary_switches\": %llu, \"total_involuntary_switches\": %llu",
				(unsigned long long)f->voluntary, (unsigned long long)f->involuntary,
				(unsigned long long)f->total_voluntary, (unsigned long long)f->total_involuntary);
		if (p->has_gil)
			fprintf(out, ", \"gil_ns\": %llu, \"total_gil_ns\": %llu", (unsigned long long)self.gil_ns,
				(unsigned long long)total.gil_ns);
		ulma_summary_lines_json(out, s, order[k]);
		ulma_summary_memory_func_json(out, s, order[k], objects, nobjects);
		fputc('}', out);
	}
	free(order);
	free(objects);
	fputs("\n],\n\"thread_list\": [", out);
	for (uint32_t i = 0; i < p->nthreads; i++) {
		uint64_t wall, self;
		ulma_summary_thread_times(s, i, &wall, &self);
		const struct ulma_thread_row *t = &p->threads[i];
		fprintf(out,
			"%s\n  {\"serial\": %llu, \"pid\": %u, \"tid\": %u, \"events\": %llu, \"lost\": %llu, "
			"\"wall_ns\": %llu, \"self_ns\": %llu, \"on_cpu_ns\": %llu, \"runnable_ns\": %llu, "
			"\"cpu_ns\": %llu",
			i ? "," : "", (unsigned long long)t->serial, t->pid, t->tid, (unsigned long long)t->events,
			(unsigned long long)t->lost, (unsigned long long)wall, (unsigned long long)self,
			(unsigned long long)thread_self_cpu(s, t), (unsigned long long)t->self_runnable_ns,
			(unsigned long long)thread_cpu(s, t));
		if (p->split == ULMA_PROFILE_SPLIT_SWITCHES)
			fprintf(out, ", \"voluntary_switches\": %llu, \"involuntary_switches\": %llu",
				(unsigned long long)t->now.voluntary, (unsigned long long)t->now.involuntary);
		if (p->has_gil)
			fprintf(out, ", \"gil_ns\": %llu", (unsigned long long)t->self_gil_ns);
		if (t->name) {
			fputs(", \"name\": ", out);
			ulma_summary_json_string(out, t->name);
		}
		const char *command = ulma_pid_names_get(&p->names, t->pid);
		if (command) {
			fputs(", \"command\": ", out);
			ulma_summary_json_string(out, command);
		}
		if (s->lanes && s->lanes[i]) {
			fputs(", \"lane\": ", out);
			ulma_summary_json_string(out, s->lanes[i]);
		}
		fputc('}', out);
	}
	fputs("\n],\n", out);
	ulma_summary_mpi_json(out, s);
	if (ulma_summary_memory_json(out, s) < 0)
		return -ENOMEM;
	uint64_t nat, in_frames;
	native_split(s, &nat, &in_frames);
	failure_text(s->failures, fbuf, sizeof(fbuf));
	fprintf(out,
		"\"events\": %llu, \"lost\": %llu, \"threads\": %u, \"processes\": %u, \"duration_ns\": %llu, "
		"\"trace_bytes\": %llu, \"bytes_per_event\": %.3f, \"complete\": %s, \"exit_status\": %d, "
		"\"time_split\": %s, \"split_method\": \"%s\", \"gil_split\": %s, \"parallelism\": %.3f, "
		"\"monitor_cpu_ns\": %llu, \"switches_lost\": %llu, \"overhead_ns_per_event\": %.3f, "
		"\"overhead_ns\": %.0f, \"corrected\": %s, \"native_ns\": %llu, \"python_ns\": %llu, "
		"\"resynced\": %llu, \"refused\": %llu, \"warnings\": ",
		(unsigned long long)events, (unsigned long long)p->lost, p->nthreads, count_processes(p),
		(unsigned long long)s->duration_ns, (unsigned long long)s->trace_bytes,
		events ? (double)s->trace_bytes / (double)events : 0.0, s->complete ? "true" : "false",
		s->exit_status < 0 ? -1
		: WIFEXITED(s->exit_status) ? WEXITSTATUS(s->exit_status)
		: WIFSIGNALED(s->exit_status) ? 128 + WTERMSIG(s->exit_status)
					       : -1,
		p->split != ULMA_PROFILE_SPLIT_NONE ? "true" : "false", ulma_summary_split_method(s),
		p->has_gil ? "true" : "false", ulma_summary_parallelism(s), (unsigned long long)s->monitor_cpu_ns,
		(unsigned long long)s->switches_lost, (double)s->overhead_ps / 1e3,
		(double)s->overhead_ps * (double)events / 1e3,
		ulma_summary_cost_per_event(s) > 0 ? "true" : "false", (unsigned long long)nat,
		(unsigned long long)(in_frames > nat ? in_frames - nat : 0), (unsigned long long)s->resynced,
		(unsigned long long)s->refused);
	ulma_summary_json_string(out, fbuf[0] ? fbuf + 1 : "");
	fputs("}\n", out);
	return ferror(out) ? -EIO : 0;
}
