/* attach.c - `ulma top PID` and `ulma record PID`: attach to a running
 * attachable process, watch it or record it, and detach; and `ulma __host
 * PID`, the monitor of an inline `with ulma.profile():` block.
 *
 * The process was started with `ulma run --attachable` or called
 * ulma.attachable(); it runs untraced until now.  This monitor takes it
 * (one monitor at a time), creates a session as `ulma run` does, asks the
 * process to trace into it (attach_ctl.h) and drains the rings.  `top`
 * shows the live table (live_view.h) until q, Ctrl-C or the process's end;
 * `top --once` prints one summary after about a second; `record` writes a
 * trace for -d seconds.  Then it asks the process to stop tracing, drains
 * what is left and gives the process back.  If this monitor is killed
 * instead, the process notices the silent heartbeat and detaches itself.
 *
 * __host is the same monitor started by the program itself
 * (python/ulma/__init__.py): instead of asking the process to attach, it
 * prints the session's /proc path on stdout, the program starts tracing
 * into it (and children join through ULMA_SESSION_PATH, as under `ulma
 * run`), and the end of its stdin (the block's end, or the program's)
 * ends the recording.  It runs in its own session, so the terminal's
 * Ctrl-C reaches only the program, which decides.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../analysis/summary.h"
#include "../core/clock.h"
#include "../core/session.h"
#include "../core/trace_writer.h"
#include "attach_ctl.h"
#include "collector.h"
#include "collector_lines.h"
#include "commands.h"
#include "live_view.h"
#include "pace.h"
#include "record_options.h"
#include "ulma/trace_format.h"

#define ATTACH_TIMEOUT_MS 5000
#define DETACH_TIMEOUT_MS 3000
#define ONCE_NS UINT64_C(1000000000)
#define FLUSH_EVERY_NS UINT64_C(250000000)
#define REAP_EVERY_NS UINT64_C(10000000)

enum mode { MODE_TOP, MODE_ONCE, MODE_RECORD, MODE_HOST };

struct attach_options {
	enum mode mode;
	pid_t pid;
	double seconds; /* record: how long */
	struct ulma_record_options rec; /* -o, --may-drop, --split, --summary: record and __host only;
					 * --no-c-calls, --lines, --memory, --no-correction, --limit: all */
};

static const char top_usage[] =
	"usage: ulma top PID [--once] [--limit N]\n"
	"  show the live table of a running attachable process (see docs/live.md); q detaches\n"
	"  --once                 print one summary after about a second and detach (no terminal needed)\n"
	"  --limit N              rows of that summary (default 25)\n"
	"  --no-c-calls           record Python functions only\n"
	"  --memory[=sample[:BYTES]]  also allocations: mem and peak columns per function and process\n"
	"                         (docs/memory.md)\n"
ULMA_RECORD_USAGE_LINES
	"  --no-correction        show times as measured, the hook's own cost included (docs/overhead.md)\n";

static const char record_usage[] =
	"usage: ulma record PID -d SECONDS [-o FILE] [options]\n"
	"  trace a running attachable process for SECONDS, then detach (see docs/live.md)\n"
	"  -d, --duration S       how long to record (Ctrl-C stops early)\n"
	"  -o, --output FILE      trace file to write (default ulma.trace: an earlier one there is kept\n"
	"                         as ulma.trace.old)\n"
ULMA_RECORD_USAGE_SPLIT
	"  --no-c-calls           record Python functions only\n"
ULMA_RECORD_USAGE_LINES
	"  --summary F            text (default), json or none, printed on stderr at the end\n"
	"  --limit N              rows in the text summary (default 25)\n"
	"  --no-correction        show times as measured, the hook's own cost included (docs/overhead.md)\n";

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static const char host_usage[] =
	"usage: ulma __host PID [-o FILE] [record's options]\n"
	"  the monitor of `with ulma.profile():` in process PID (docs/inline.md); not for direct use\n";

static int parse(int argc, char **argv, enum mode mode, struct attach_options *o)
{
	bool record = mode == MODE_RECORD || mode == MODE_HOST;
	static const struct option opts[] = {
		{"once", no_argument, NULL, '1'},
		{"duration", required_argument, NULL, 'd'},
		ULMA_RECORD_LONG_OPTIONS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *usage = mode == MODE_HOST ? host_usage : record ? record_usage : top_usage;
	char *end;
	int c;
	memset(o, 0, sizeof(*o));
	o->mode = mode;
	ulma_record_options_init(&o->rec);
	o->seconds = -1;
	optind = 0;
	while ((c = getopt_long(argc + 1, argv - 1, "d:o:h", opts, NULL)) != -1) {
		if (!record && (c == 'o' || c == 'L' || c == 's'))
			goto bad; /* top writes no trace and prints no summary */
		int shared = ulma_record_option(&o->rec, c, optarg);
		if (shared < 0)
			return -1;
		if (shared)
			continue;
		switch (c) {
		case '1':
			if (record)
				goto bad;
			o->mode = MODE_ONCE;
			break;
		case 'd':
			o->seconds = strtod(optarg, &end);
			if (mode != MODE_RECORD || *end || !(o->seconds > 0) || o->seconds > 1e7) {
				ulma_die_msg("-d takes a positive number of seconds, not '%s'", optarg);
				return -1;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		default:
			goto bad;
		}
	}
	if (optind != argc) {
		ulma_die_msg("%s", optind > argc ? "which process? give its PID" : "one PID only");
		goto bad;
	}
	long pid = strtol(argv[optind - 1], &end, 10);
	if (*end || pid <= 0 || pid > 0x7fffffff) {
		ulma_die_msg("'%s' is not a process id", argv[optind - 1]);
		goto bad;
	}
	o->pid = (pid_t)pid;
	if (mode == MODE_RECORD && o->seconds < 0) {
		ulma_die_msg("record needs -d SECONDS");
		goto bad;
	}
	return 0;
bad:
	fputs(usage, stderr);
	return -1;
}

static void catch_stop_signals(void)
{
	struct sigaction sa = {.sa_handler = on_stop};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* Everything one attachment holds, released by finish(). */
struct attachment {
	struct ulma_attach_target target;
	struct ulma_session session;
	struct ulma_trace_writer *writer;
	struct ulma_collector col;
	struct ulma_switches *switches;
	bool col_ready;
	bool use_tsc;
	uint64_t hz;
	struct ulma_clock_pair start, end;
};

static int begin(struct attach_options *o, struct attachment *a)
{
	char why[512];
	struct ulma_session_config cfg;
	int err = 0;
	a->target.pidfd = -1;
	if (o->mode != MODE_HOST) {
		err = ulma_attach_open(o->pid, &a->target, why, sizeof(why));
		if (!err)
			err = ulma_attach_claim(&a->target, why, sizeof(why));
	}
	if (err) {
		ulma_die_msg("%s", why);
		return -1;
	}
	ulma_session_config_default(&cfg);
	ulma_record_session_config(&o->rec, &cfg);
	cfg.use_tsc = a->use_tsc = ulma_clock_tsc_usable();
	err = ulma_session_create(&cfg, &a->session);
	if (err) {
		ulma_die_msg("cannot create the shared-memory session: %s", strerror(-err));
		return -1;
	}
	if (ulma_record_define_lines(&o->rec, &a->session) < 0)
		return -1;
	a->hz = ulma_clock_measure_hz(cfg.use_tsc);
	ulma_clock_sample(cfg.use_tsc, &a->start);
	if (o->mode == MODE_RECORD || o->mode == MODE_HOST) {
		char cmd[64];
		snprintf(cmd, sizeof(cmd), "%s %d", o->mode == MODE_HOST ? "ulma.profile() in" : "attach", (int)o->pid);
		struct ulma_trace_meta meta = {
			.flags = ulma_record_meta_flags(&o->rec, cfg.use_tsc),
			.mem_sample_bytes = cfg.memory_sample_bytes,
			.pid = (uint32_t)o->pid,
			.start_ticks = a->start.ticks,
			.start_ns = a->start.ns,
			.tick_hz = a->hz,
			.command = cmd,
		};
		if (ulma_record_open_trace(&o->rec, &meta, &a->writer) < 0)
			return -1;
	}
	if (ulma_collector_init(&a->col, &a->session, a->writer)) {
		ulma_die_msg("out of memory");
		return -1;
	}
	a->col_ready = true;
	/* before tracing starts, so that its first switches are seen */
	int split = ulma_record_open_switches(&o->rec, o->pid, false, &a->switches);
	ulma_collector_split(&a->col, split, a->switches, &a->start, a->hz);
	atomic_store(&a->session.hdr->heartbeat_ns, ulma_clock_monotonic_ns());
	if (o->mode == MODE_HOST) { /* the program opens the session itself */
		if (printf("/proc/%d/fd/%d\n", (int)getpid(), a->session.fd) < 0 || fflush(stdout) != 0) {
			ulma_die_msg("cannot tell the program where the session is: %s", strerror(errno));
			return -1;
		}
		return 0;
	}
	err = ulma_attach_request(&a->target, a->session.fd, ATTACH_TIMEOUT_MS, why, sizeof(why));
	if (err) {
		ulma_die_msg("%s", why);
		return -1;
	}
	return 0;
}

/* Drain until the end: detach, take the last records, close open frames. */
static void end_tracing(struct attachment *a, bool ended)
{
	if (!ended && ulma_attach_detach(&a->target, DETACH_TIMEOUT_MS) == -ETIMEDOUT)
		ulma_die_msg("process %d did not detach in time; it will when it sees this monitor gone",
			     (int)a->target.pid);
	ulma_clock_sample(a->use_tsc, &a->end);
	while (ulma_collector_poll(&a->col, true) > 0)
		;
	ulma_collector_reap(&a->col, a->end.ticks);
	ulma_collector_close_all(&a->col, a->end.ticks);
}

static void finish(struct attachment *a)
{
	if (a->writer)
		ulma_trace_writer_abandon(a->writer);
	if (a->col_ready)
		ulma_collector_free(&a->col);
	ulma_switches_close(a->switches);
	ulma_session_unmap(&a->session);
	ulma_attach_close(&a->target);
}

static int print_summary(const struct attach_options *o, struct attachment *a, FILE *out)
{
	uint64_t monitor_cpu = ulma_record_self_cpu_ns();
	bool wrote = a->writer != NULL;
	int err = ulma_record_close_trace(&o->rec, &a->col, a->writer, &a->end, -1, monitor_cpu);
	a->writer = NULL;
	struct ulma_summary s;
	ulma_record_summary(&s, &a->col, wrote ? o->rec.output : NULL, a->use_tsc, a->hz, &a->start, &a->end, -1,
			    monitor_cpu, o->rec.no_correction);
	ulma_record_print_summary(out, &o->rec, &s);
	ulma_collector_lines_warn(&a->col, stderr);
	return err ? 1 : 0;
}

/* __host: the program closed our stdin (or wrote to it, or died). */
static bool host_released(void)
{
	struct pollfd p = {0, POLLIN, 0};
	if (poll(&p, 1, 0) <= 0)
		return false;
	char buf[64];
	(void)read(0, buf, sizeof(buf));
	return true;
}

static int attach_main(struct attach_options *o)
{
	struct attachment a;
	struct ulma_live *live = NULL;
	memset(&a, 0, sizeof(a));
	a.session.fd = -1;
	catch_stop_signals();
	if (o->mode == MODE_TOP) {
		/* take the terminal before the process: a refusal then costs it nothing */
		struct ulma_live_source src = {&a.col, NULL, false, 0, {0, 0}, false, o->rec.no_correction};
		int err = ulma_live_open(&src, &live);
		if (err) {
			ulma_die_msg(err == -ENOTTY ? "top needs a terminal: use `ulma top PID --once`"
						    : "cannot open the live view: %s",
				     strerror(-err));
			return 1;
		}
	}
	if (begin(o, &a) < 0) {
		ulma_live_close(live);
		finish(&a);
		return 1;
	}
	if (live) {
		ulma_live_close(live); /* reopened with the session's clock */
		struct ulma_live_source src = {&a.col, NULL, a.use_tsc, a.hz, a.start, false, o->rec.no_correction};
		if (ulma_live_open(&src, &live) == 0)
			ulma_live_started(live);
	}
	uint64_t t0 = ulma_clock_monotonic_ns(), last_flush = t0, last_reap = t0;
	struct ulma_pace pace = {0};
	uint64_t stop_at = o->mode == MODE_ONCE     ? t0 + ONCE_NS
			   : o->mode == MODE_RECORD ? t0 + (uint64_t)(o->seconds * 1e9)
						    : UINT64_MAX;
	bool ended = false;
	while (!stop_requested) {
		uint64_t began = ulma_clock_monotonic_ns();
		long n = ulma_collector_poll(&a.col, false);
		uint64_t now = ulma_clock_monotonic_ns();
		atomic_store_explicit(&a.session.hdr->heartbeat_ns, now, memory_order_relaxed);
		if (now - last_reap > REAP_EVERY_NS) {
			uint32_t cpu;
			ulma_collector_reap(&a.col, ulma_clock_now(a.use_tsc, &cpu));
			last_reap = now;
			if (o->mode == MODE_HOST ? host_released() : (ended = ulma_attach_ended(&a.target)))
				break;
		}
		if (a.writer && now - last_flush > FLUSH_EVERY_NS) {
			ulma_trace_writer_flush(a.writer);
			last_flush = now;
		}
		if (now >= stop_at)
			break;
		if (live && ulma_live_tick(live) != ULMA_LIVE_ON)
			break; /* q, or the terminal went away */
		ulma_live_sleep(live, ulma_pace_nap_ns(&pace, n, a.col.peak, ulma_session_capacity(&a.session), began, now));
	}
	end_tracing(&a, ended || o->mode == MODE_HOST);
	ulma_live_close(live);
	int rc = 0;
	if (o->mode == MODE_ONCE)
		rc = print_summary(o, &a, stdout);
	else if (o->mode == MODE_RECORD || o->mode == MODE_HOST)
		rc = print_summary(o, &a, stderr);
	if (ended)
		ulma_die_msg("process %d ended", (int)o->pid);
	else if (o->mode == MODE_TOP)
		ulma_die_msg("detached from process %d", (int)o->pid);
	finish(&a);
	return rc;
}

int ulma_cmd_top(int argc, char **argv)
{
	struct attach_options o;
	if (parse(argc, argv, MODE_TOP, &o) < 0)
		return ULMA_EXIT_USAGE;
	return attach_main(&o);
}

int ulma_cmd_record(int argc, char **argv)
{
	struct attach_options o;
	if (parse(argc, argv, MODE_RECORD, &o) < 0)
		return ULMA_EXIT_USAGE;
	return attach_main(&o);
}

int ulma_cmd_host(int argc, char **argv)
{
	struct attach_options o;
	if (parse(argc, argv, MODE_HOST, &o) < 0)
		return ULMA_EXIT_USAGE;
	return attach_main(&o);
}
