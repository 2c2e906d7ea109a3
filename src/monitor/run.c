/* run.c - `ulma run`: trace a Python program from start to finish.
 *
 * The monitor (this process) creates the session, starts the program as a
 * child with the session fd, and drains the rings until the child exits.
 * The child gets the signal dispositions, argv, stdio and environment it
 * would have had untraced (see python/ulma/_boot.py for the Python side).
 * When the child exits, the monitor finishes the trace, prints the summary
 * on stderr and exits the way the child did: same code, or same signal.
 * When stderr is the terminal, the monitor also shows the live table while
 * the program runs (live_view.h; --no-live turns it off).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../analysis/summary.h"
#include "../core/clock.h"
#include "../core/safe_file.h"
#include "../core/session.h"
#include "../core/trace_writer.h"
#include "collector.h"
#include "collector_lines.h"
#include "commands.h"
#include "live_view.h"
#include "mpi_rank.h"
#include "native_target.h"
#include "pace.h"
#include "record_options.h"
#include "ulma/trace_format.h"

/* The Python side: drop the cwd entry -c puts first, then hand over.  An
 * interpreter that cannot import ulma exits with BOOT_NO_ULMA before any of
 * the program runs, and the monitor explains. */
#define BOOT_NO_ULMA 126
static const char boot_code[] =
	"import sys; del sys.path[0]\n"
	"try:\n"
	"    import ulma._boot as b\n"
	"except ImportError as e:\n"
	"    sys.stderr.write('ulma: %s\\n' % e); sys.stderr.flush()\n"
	"    import os; os._exit(126)\n"
	"b.main()\n";

#define FLUSH_EVERY_NS UINT64_C(250000000)
#define REAP_EVERY_NS UINT64_C(10000000) /* how soon a dead child's frames close */

struct run_options {
	struct ulma_record_options rec; /* -o, --may-drop, --split, --no-c-calls, --lines, --no-correction, --summary,
					 * --limit */
	const char *python;
	long ring_records;
	bool no_follow;
	bool no_live;
	bool attachable;
	bool module; /* -m */
	int nargs;   /* target and its arguments */
	char **args;
	bool native;               /* the target is a native executable (native_target.h) */
	char native_path[PATH_MAX]; /* ... found here */
	char runtime[PATH_MAX];     /* libulma_rt.so to preload, "" if none was found */
	bool mpi;                   /* an MPI rank (mpi_rank.h) */
	struct ulma_mpi_env mpi_env;
	char mpi_lib[PATH_MAX];     /* libulma_mpi.so to preload, "" if ulma was built without MPI */
	char mpi_output[PATH_MAX];  /* DIR/rank-NNNN.trace */
	const char *mpi_dir;        /* DIR */
};

static const char run_usage[] =
	"usage: ulma run [options] script.py [args...]\n"
	"       ulma run [options] -m module [args...]\n"
	"       ulma run [options] ./program [args...]   (native code: docs/native.md)\n"
	"  -o, --output FILE      trace file to write (default ulma.trace: an earlier one there is kept\n"
	"                         as ulma.trace.old); under mpirun, the directory\n"
	"                         of one trace per rank, DIR/rank-NNNN.trace (default ulma-traces, docs/mpi.md),\n"
	"                         and no summary unless --summary asks for one\n"
ULMA_RECORD_USAGE_SPLIT
	"  --no-c-calls           record Python functions only, not builtins (less overhead, see docs/hooks.md)\n"
ULMA_RECORD_USAGE_LINES
	"  --no-follow            do not trace Python processes the program starts (subprocess, multiprocessing\n"
	"                         spawn); leaves the environment untouched.  Forked children are always followed\n"
	"  --ring-records N       records per thread ring, a power of two (default 262144 = 4 MiB)\n"
	"  --summary F            text (default), json or none, printed on stderr at the end\n"
	"  --no-correction        show times as measured, the hook's own cost included (docs/overhead.md)\n"
	"  --limit N              rows in the text summary (default 25)\n"
	"  --no-live              no live table, even when stderr is a terminal (see docs/live.md)\n"
	"  --attachable           run untraced, but let `ulma top PID` or `ulma record PID` attach later\n"
	"  --python PATH          interpreter to run (default: $ULMA_PYTHON, else the python3\n"
	"                         installed beside ulma, else python3 on PATH)\n";

static volatile sig_atomic_t child_pid;
static volatile sig_atomic_t pending_signal; /* arrived before the child existed */

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
	else
		pending_signal = sig; /* spawn delivers it once the child exists */
}

/* Signals a terminal sends to the whole process group: the child gets them
 * itself, so the monitor ignores them.  Others are forwarded. */
static const int group_signals[] = {SIGINT, SIGQUIT, SIGPIPE};
static const int forwarded_signals[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
#define NSIG_SAVED (sizeof(group_signals) / sizeof(int) + sizeof(forwarded_signals) / sizeof(int))

struct saved_signals {
	int sig[NSIG_SAVED];
	struct sigaction act[NSIG_SAVED];
};

static void take_signals(struct saved_signals *saved)
{
	size_t k = 0;
	struct sigaction ign = {.sa_handler = SIG_IGN}, fwd = {.sa_handler = forward_signal,
							      .sa_flags = SA_RESTART};
	sigemptyset(&ign.sa_mask);
	sigemptyset(&fwd.sa_mask);
	for (size_t i = 0; i < sizeof(group_signals) / sizeof(int); i++, k++) {
		saved->sig[k] = group_signals[i];
		sigaction(group_signals[i], &ign, &saved->act[k]);
	}
	for (size_t i = 0; i < sizeof(forwarded_signals) / sizeof(int); i++, k++) {
		saved->sig[k] = forwarded_signals[i];
		sigaction(forwarded_signals[i], NULL, &saved->act[k]);
		if (saved->act[k].sa_handler != SIG_IGN)
			sigaction(forwarded_signals[i], &fwd, NULL);
	}
}

static void restore_signals(const struct saved_signals *saved)
{
	for (size_t k = 0; k < NSIG_SAVED; k++)
		sigaction(saved->sig[k], &saved->act[k], NULL);
}

/* The interpreter to run: --python, $ULMA_PYTHON, python3 beside us, or PATH. */
static const char *find_python(const char *opt, char *buf, size_t cap)
{
	const char *env = getenv("ULMA_PYTHON");
	if (opt)
		return opt;
	if (env && *env)
		return env;
	ssize_t n = readlink("/proc/self/exe", buf, cap - 16);
	if (n > 0) {
		buf[n] = 0;
		char *slash = strrchr(buf, '/');
		if (slash) {
			static const char *const names[] = {"python3", "python"};
			for (int i = 0; i < 2; i++) {
				strcpy(slash + 1, names[i]);
				if (access(buf, X_OK) == 0)
					return buf;
			}
		}
	}
	return "python3";
}

static int parse_run_options(int argc, char **argv, struct run_options *o)
{
	static const struct option opts[] = {
		ULMA_RECORD_LONG_OPTIONS,
		{"no-follow", no_argument, NULL, 'F'},
		{"no-live", no_argument, NULL, 'V'},
		{"attachable", no_argument, NULL, 'A'},
		{"ring-records", required_argument, NULL, 'r'},
		{"python", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	char *end;
	memset(o, 0, sizeof(*o));
	ulma_record_options_init(&o->rec);
	o->ring_records = 1 << 18;
	optind = 0;
	/* '+': stop at the script, whose own options are not ours */
	while ((c = getopt_long(argc + 1, argv - 1, "+o:m:h", opts, NULL)) != -1) {
		int shared = ulma_record_option(&o->rec, c, optarg);
		if (shared < 0)
			return -1;
		if (shared)
			continue;
		switch (c) {
		case 'F':
			o->no_follow = true;
			break;
		case 'V':
			o->no_live = true;
			break;
		case 'A':
			o->attachable = true;
			break;
		case 'r':
			o->ring_records = strtol(optarg, &end, 10);
			if (*end || o->ring_records < 64 || o->ring_records > (1L << 26) ||
			    (o->ring_records & (o->ring_records - 1))) {
				ulma_die_msg("--ring-records takes a power of two from 64 to 67108864, not '%s'", optarg);
				return -1;
			}
			break;
		case 'p':
			o->python = optarg;
			break;
		case 'm':
			o->module = true;
			optind--; /* the module name stays first among the target's arguments */
			(argv - 1)[optind] = optarg;
			goto done;
		case 'h':
			fputs(run_usage, stdout);
			exit(0);
		default:
			fputs(run_usage, stderr);
			return -1;
		}
	}
done:
	o->args = argv - 1 + optind;
	o->nargs = argc + 1 - optind;
	if (o->nargs < 1) {
		ulma_die_msg("run needs a script to run");
		fputs(run_usage, stderr);
		return -1;
	}
	return 0;
}

static int check_script(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		ulma_die_msg("cannot run '%s': %s", path, strerror(errno));
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		ulma_die_msg("cannot run '%s': it is a directory", path);
		return -1;
	}
	if (access(path, R_OK) != 0) {
		ulma_die_msg("cannot read '%s': %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Join the target's argv for the trace header. */
static char *command_line(const struct run_options *o)
{
	size_t n = 4;
	for (int i = 0; i < o->nargs; i++)
		n += strlen(o->args[i]) + 1;
	char *s = malloc(n);
	if (!s)
		return NULL;
	strcpy(s, o->module ? "-m " : "");
	for (int i = 0; i < o->nargs; i++) {
		strcat(s, o->args[i]);
		if (i + 1 < o->nargs)
			strcat(s, " ");
	}
	return s;
}

/* Replace this process with the interpreter running the boot code.
 * Returns only on failure, with errno set. */
static void exec_python(const struct run_options *o, const char *python)
{
	char **argv = calloc((size_t)o->nargs + 5, sizeof(char *));
	int k = 0;
	if (!argv)
		return;
	argv[k++] = (char *)python;
	argv[k++] = "-c";
	argv[k++] = (char *)boot_code;
	if (o->module)
		argv[k++] = "-m";
	for (int i = 0; i < o->nargs; i++)
		argv[k++] = o->args[i];
	argv[k] = NULL;
	if (strchr(python, '/'))
		execv(python, argv);
	else
		execvp(python, argv);
	int e = errno;
	free(argv);
	errno = e;
}

/* `ulma run --attachable`: no monitor at all.  The program becomes the
 * interpreter in this very process (same pid, parent, signals and stdio),
 * untraced, with a control file that `ulma top PID` uses to attach. */
static int run_attachable(const struct run_options *o, const char *python)
{
	setenv("ULMA_ATTACHABLE", "1", 1);
	exec_python(o, python);
	ulma_die_msg("cannot start the Python interpreter '%s': %s (use --python or ULMA_PYTHON)", python,
		     strerror(errno));
	return 1;
}

/* Fork the interpreter's process, with redirect[i] (if not -1) as its fd i.
 * It waits for spawn_go (the monitor follows its context switches from its
 * first instruction) before it execs.  Returns the pid, or -1 said. */
static pid_t spawn(const struct run_options *o, const char *python, int session_fd,
		   const struct saved_signals *saved, const int redirect[3], int *go_fd, int *exec_fd)
{
	int pipefd[2], gofd[2];
	sigset_t forwarded, old_mask;
	/* a forwarded signal that arrives before child_pid is known would be
	 * lost: hold them until it is set */
	sigemptyset(&forwarded);
	for (size_t i = 0; i < sizeof(forwarded_signals) / sizeof(int); i++)
		sigaddset(&forwarded, forwarded_signals[i]);
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		ulma_die_msg("pipe: %s", strerror(errno));
		return -1;
	}
	if (pipe2(gofd, O_CLOEXEC) < 0) {
		ulma_die_msg("pipe: %s", strerror(errno));
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	sigprocmask(SIG_BLOCK, &forwarded, &old_mask);
	pid_t pid = fork();
	if (pid < 0) {
		ulma_die_msg("fork: %s", strerror(errno));
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		close(pipefd[0]);
		close(pipefd[1]);
		close(gofd[0]);
		close(gofd[1]);
		return -1;
	}
	if (pid == 0) {
		char go = 0;
		close(gofd[1]);
		while (read(gofd[0], &go, 1) < 0 && errno == EINTR)
			;
		if (go != 'g') /* the monitor is gone before it was ready: do not run untraced */
			_exit(127);
		restore_signals(saved);
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		for (int i = 0; i < 3; i++)
			if (redirect[i] >= 0)
				dup2(redirect[i], i); /* the copy is not close-on-exec */
		int fd = fcntl(session_fd, F_DUPFD, 3); /* without close-on-exec */
		char fdbuf[16];
		snprintf(fdbuf, sizeof(fdbuf), "%d", fd);
		setenv("ULMA_SESSION_FD", fdbuf, 1);
		/* Python processes the program starts (subprocess, multiprocessing
		 * spawn) join the session through this path: see _autostart.py */
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)getppid(), session_fd);
		if (!o->no_follow)
			setenv("ULMA_SESSION_PATH", path, 1);
		/* a native program finds ulma's hooks, and so do the programs it
		 * starts.  A Python program gets them from `import ulma` (the
		 * extension makes them global), and its environment gains nothing
		 * but ULMA_SESSION_PATH (docs/native.md) */
		if (o->native)
			ulma_runtime_preload(o->runtime);
		/* an MPI rank's calls go through ulma's PMPI wrappers (docs/mpi.md) */
		if (o->mpi && o->mpi_lib[0])
			ulma_runtime_preload(o->mpi_lib);
		if (fd >= 0 && o->native)
			execv(o->native_path, o->args);
		else if (fd >= 0)
			exec_python(o, python);
		int e = errno;
		(void)!write(pipefd[1], &e, sizeof(e));
		_exit(127);
	}
	child_pid = pid;
	close(gofd[0]);
	*go_fd = gofd[1];
	if (pending_signal) /* sent to us between taking the signals and now */
		kill(pid, pending_signal);
	sigprocmask(SIG_SETMASK, &old_mask, NULL); /* a held signal is forwarded now */
	close(pipefd[1]);
	*exec_fd = pipefd[0];
	return pid;
}

/* Let the child exec, and learn whether it could.  exec_fd: spawn's
 * return.  Returns 0, or -1 with the exec error said. */
static int spawn_go(pid_t pid, int go_fd, int exec_fd, const char *python, const struct run_options *o)
{
	int pipefd[1] = {exec_fd};
	if (write(go_fd, "g", 1) != 1) {
		ulma_die_msg("cannot start the program: %s", strerror(errno));
		close(go_fd);
		close(exec_fd);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		child_pid = 0;
		return -1;
	}
	close(go_fd);
	int e = 0;
	ssize_t got;
	while ((got = read(pipefd[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(pipefd[0]);
	if (got == (ssize_t)sizeof(e)) {
		if (o->native)
			ulma_die_msg("cannot start '%s': %s", o->native_path, strerror(e));
		else
			ulma_die_msg("cannot start the Python interpreter '%s': %s (use --python or ULMA_PYTHON)",
				     python, strerror(e));
		waitpid(pid, NULL, 0);
		child_pid = 0;
		return -1;
	}
	return 0;
}

/* Exit the way the child did. */
static int pass_through(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		struct rlimit no_core = {0, 0};
		setrlimit(RLIMIT_CORE, &no_core); /* the child's core dump, if any, is the one that matters */
		signal(sig, SIG_DFL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		fflush(NULL);
		raise(sig);
		return 128 + sig;
	}
	return 1;
}

/* The child ended before ulma's bootstrap ran (run.c's boot_code, then
 * _boot.py announces itself): say why nothing was traced.  Returns the
 * exit status: the program's own, except when the interpreter could not
 * import ulma, whose status is the bootstrap's. */
static int say_never_started(const struct run_options *o, const char *python, int status, const char *output)
{
	if (o->native) {
		ulma_die_msg("'%s' recorded nothing: build it with -finstrument-functions or mark zones with ulma's "
			     "C API (docs/native.md); no trace kept at %s",
			     o->native_path, output);
		return pass_through(status);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == BOOT_NO_ULMA) {
		ulma_die_msg("the interpreter '%s' cannot load the ulma package; choose one that has it "
			     "with --python or ULMA_PYTHON",
			     python);
		return 1;
	}
	if (WIFSIGNALED(status))
		ulma_die_msg("the program never started tracing: '%s' was killed by signal %d (%s) before "
			     "ulma's bootstrap ran; no trace kept at %s",
			     python, WTERMSIG(status), strsignal(WTERMSIG(status)), output);
	else
		ulma_die_msg("the program never started tracing: '%s' exited with status %d without running "
			     "ulma's bootstrap (is it a Python interpreter? choose one with --python or "
			     "ULMA_PYTHON); no trace kept at %s",
			     python, WIFEXITED(status) ? WEXITSTATUS(status) : -1, output);
	return pass_through(status);
}

int ulma_cmd_run(int argc, char **argv)
{
	struct run_options o;
	char pybuf[PATH_MAX];
	struct saved_signals saved;
	struct ulma_session_config cfg;
	struct ulma_session session;
	struct ulma_trace_writer *writer = NULL;
	struct ulma_collector col;
	int err;

	if (parse_run_options(argc, argv, &o) < 0)
		return ULMA_EXIT_USAGE;
	if (!o.module) {
		enum ulma_target_kind kind = ulma_target_classify(o.args[0], o.native_path, sizeof(o.native_path));
		if (kind == ULMA_TARGET_STATIC) {
			ulma_die_msg("cannot trace '%s': it is statically linked, so it cannot load ulma's runtime; "
				     "link it dynamically (docs/native.md)",
				     o.args[0]);
			return ULMA_EXIT_USAGE;
		}
		o.native = kind == ULMA_TARGET_NATIVE;
	}
	if (!o.module && !o.native && check_script(o.args[0]) < 0)
		return ULMA_EXIT_USAGE;
	if (ulma_runtime_find(o.runtime, sizeof(o.runtime)) < 0) {
		o.runtime[0] = '\0';
		if (o.native) {
			ulma_die_msg("cannot trace '%s': ulma's runtime library libulma_rt.so was not found beside "
				     "the ulma program; set ULMA_RUNTIME to its path",
				     o.args[0]);
			return ULMA_EXIT_USAGE;
		}
	}
	if (o.native && o.attachable) {
		ulma_die_msg("--attachable takes a Python program; '%s' is a native one", o.args[0]);
		return ULMA_EXIT_USAGE;
	}
	if (o.attachable && o.rec.nlines) { /* no session here: the monitor that attaches has the patterns */
		ulma_die_msg("--lines goes to the monitor that attaches: `ulma record PID --lines ...`");
		return ULMA_EXIT_USAGE;
	}
	const char *python = find_python(o.python, pybuf, sizeof(pybuf));
	if (o.attachable)
		return run_attachable(&o, python);
	if ((o.mpi = ulma_mpi_env_detect(&o.mpi_env))) {
		const char *dir = o.mpi_dir = o.rec.output_set ? o.rec.output : "ulma-traces";
		err = ulma_mpi_trace_path(dir, o.mpi_env.rank, o.mpi_output, sizeof(o.mpi_output));
		if (err) {
			ulma_die_msg("cannot make the directory '%s' for rank %u's trace: %s", dir,
				     (unsigned)o.mpi_env.rank, strerror(-err));
			return ULMA_EXIT_USAGE;
		}
		o.rec.output = o.mpi_output;
		if (!o.rec.summary_set) /* one summary per rank would bury the program's output: merge, then report */
			o.rec.summary = "none";
		if (!o.runtime[0] || ulma_mpi_lib_find(o.runtime, o.mpi_lib, sizeof(o.mpi_lib)) < 0) {
			o.mpi_lib[0] = '\0';
			if (o.mpi_env.rank == 0)
				ulma_die_msg("libulma_mpi.so was not found beside libulma_rt.so (ulma was built "
					     "without MPI): MPI calls are not recorded");
		}
	}
	if (!o.module && ulma_same_file(o.rec.output, o.args[0])) {
		ulma_die_msg("the trace '%s' would replace the script '%s': choose another -o", o.rec.output,
			     o.args[0]);
		return ULMA_EXIT_USAGE;
	}

	ulma_session_config_default(&cfg);
	ulma_record_session_config(&o.rec, &cfg);
	cfg.ring_records = (uint32_t)o.ring_records;
	cfg.use_tsc = ulma_clock_tsc_usable();
	err = ulma_session_create(&cfg, &session);
	if (err) {
		ulma_die_msg("cannot create the shared-memory session: %s", strerror(-err));
		return 1;
	}
	if (ulma_record_define_lines(&o.rec, &session) < 0) {
		ulma_session_unmap(&session);
		return 1;
	}
	struct ulma_clock_pair start, endp;
	uint64_t hz = ulma_clock_measure_hz(cfg.use_tsc);
	ulma_clock_sample(cfg.use_tsc, &start);
	char *cmd = command_line(&o);
	int64_t skew = o.mpi ? ulma_mpi_test_skew_ns() : 0; /* the tests' other host (docs/mpi.md) */
	struct ulma_trace_meta meta = {
		.flags = ulma_record_meta_flags(&o.rec, cfg.use_tsc),
		.mem_sample_bytes = cfg.memory_sample_bytes,
		.start_ticks = start.ticks,
		.start_ns = start.ns + (uint64_t)skew,
		.tick_hz = hz,
		.command = cmd,
	};
	err = ulma_record_open_trace(&o.rec, &meta, &writer);
	free(cmd);
	if (err) {
		ulma_session_unmap(&session);
		return ULMA_EXIT_USAGE;
	}
	if (ulma_collector_init(&col, &session, writer)) {
		ulma_die_msg("out of memory");
		return 1;
	}
	atomic_store(&session.hdr->heartbeat_ns, ulma_clock_monotonic_ns());

	take_signals(&saved);
	struct ulma_live *live = NULL;
	if (!o.no_live) {
		struct ulma_live_source src = {&col, writer, cfg.use_tsc, hz, start, true, o.rec.no_correction};
		err = ulma_live_open(&src, &live);
		if (err && err != -ENOTTY)
			ulma_die_msg("no live view: %s", strerror(-err));
	}
	int redirect[3] = {-1, ulma_live_program_fd(live, 1), ulma_live_program_fd(live, 2)};
	int go_fd = -1, exec_fd = -1;
	struct ulma_switches *switches = NULL;
	pid_t pid = spawn(&o, python, session.fd, &saved, redirect, &go_fd, &exec_fd);
	if (pid > 0) {
		/* its context switches are followed from its first instruction */
		int split = ulma_record_open_switches(&o.rec, pid, true, &switches);
		ulma_collector_split(&col, split, switches, &start, hz);
		if (o.mpi)
			ulma_mpi_write_rank(writer, &o.mpi_env, (uint32_t)pid);
		if (spawn_go(pid, go_fd, exec_fd, python, &o) < 0)
			pid = -1;
	}
	ulma_live_started(live);
	if (pid < 0) {
		ulma_live_close(live);
		ulma_trace_writer_abandon(writer);
		ulma_switches_close(switches);
		ulma_record_discard_trace(&o.rec);
		return 1;
	}

	int status = 0;
	uint64_t last_flush = ulma_clock_monotonic_ns(), last_reap = last_flush;
	struct ulma_pace pace = {0};
	for (;;) {
		uint64_t began = ulma_clock_monotonic_ns();
		long n = ulma_collector_poll(&col, false);
		uint64_t now = ulma_clock_monotonic_ns();
		atomic_store_explicit(&session.hdr->heartbeat_ns, now, memory_order_relaxed);
		if (now - last_reap > REAP_EVERY_NS) {
			uint32_t cpu;
			/* forked children that left by os._exit or crashed */
			ulma_collector_reap(&col, ulma_clock_now(cfg.use_tsc, &cpu));
			last_reap = now;
		}
		if (now - last_flush > FLUSH_EVERY_NS) {
			ulma_trace_writer_flush(writer);
			last_flush = now;
		}
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			ulma_die_msg("waitpid: %s", strerror(errno));
			break;
		}
		if (ulma_live_tick(live) == ULMA_LIVE_CLOSED)
			ulma_die_msg("live view closed; tracing goes on into %s", o.rec.output);
		ulma_live_sleep(live, ulma_pace_nap_ns(&pace, n, col.peak, ulma_session_capacity(&session), began, now));
	}
	child_pid = 0;
	ulma_clock_sample(cfg.use_tsc, &endp);
	/* drain what the program published before it exited */
	while (ulma_collector_poll(&col, true) > 0)
		;
	ulma_collector_close_all(&col, endp.ticks);
	ulma_live_close(live); /* the program's held output comes before anything we print */

	if (atomic_load(&session.hdr->program_pid) == 0 && atomic_load(&session.hdr->started) == 0) {
		/* ulma's bootstrap never ran: there is nothing to keep */
		int code = say_never_started(&o, python, status, o.rec.output);
		ulma_trace_writer_abandon(writer);
		ulma_record_discard_trace(&o.rec);
		ulma_collector_free(&col);
		ulma_switches_close(switches);
		ulma_session_unmap(&session);
		return code;
	}
	uint64_t monitor_cpu = ulma_record_self_cpu_ns();
	struct ulma_clock_pair trace_end = endp;
	trace_end.ns += (uint64_t)skew;
	ulma_record_close_trace(&o.rec, &col, writer, &trace_end, status, monitor_cpu);
	struct ulma_summary s;
	ulma_record_summary(&s, &col, o.rec.output, cfg.use_tsc, hz, &start, &endp, status, monitor_cpu,
			    o.rec.no_correction);
	ulma_record_print_summary(stderr, &o.rec, &s);
	if (o.mpi && o.mpi_env.rank == 0 && !o.rec.summary_set)
		ulma_die_msg("rank 0's trace is %s; when every rank is done: ulma merge %s -o all.trace", o.rec.output,
			     o.mpi_dir);
	ulma_collector_lines_warn(&col, stderr);
	ulma_switches_close(switches);
	ulma_collector_free(&col);
	ulma_session_unmap(&session);
	return pass_through(status);
}
