/* attach.c - an untraced process that a monitor can attach to later.
 *
 * attachable() creates this process's control file (include/ulma/attach.h)
 * and starts a watcher: a plain pthread, with every signal blocked, that
 * never touches Python while nothing is asked of it.  Twenty times a second
 * it reads the control words.  When a monitor wants it attached, it takes
 * the GIL (which is only handed over between bytecodes or inside calls that
 * released it, so this is a safe point, and it works even while the main
 * thread is blocked in C), opens the monitor's session and calls start() on
 * this module, the same start `ulma run` uses.  Detaching calls stop().  A
 * monitor that dies is noticed by its heartbeat and detached from.
 *
 * The watcher never takes the GIL once the interpreter is finalizing: the
 * atexit hook (_attach_shutdown) stops and joins it first.  A child made by
 * os.fork() is not attachable and stops any tracing it inherited
 * (_attach_forked).  Errors are Python exceptions in the calls, and a
 * reason string in the control file for the monitor.
 */
#include "tracer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ulma/attach.h"

#define MONITOR_DEAD_NS UINT64_C(2000000000) /* as ring.c */

#if PY_VERSION_HEX >= 0x030D0000
#define ULMA_FINALIZING() Py_IsFinalizing()
#else
#define ULMA_FINALIZING() _Py_IsFinalizing()
#endif

static struct {
	struct ulma_attach_ctl *ctl;
	char path[320];
	pthread_t thread;
	bool running;
	_Atomic bool stop;
	bool we_started; /* tracing was started by the watcher, not by `ulma run` */
	PyObject *module;
	PyObject *skip; /* code objects start() never records (`ulma run`'s bootstrap), or NULL */
} att;

/* Our directory must be ours alone: mode 0700, owned by us, not a link. */
static int make_dir(const char *dir)
{
	struct stat st;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st) != 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077))
		return -EPERM;
	return 0;
}

static void set_error(const char *fmt, const char *detail)
{
	snprintf(att.ctl->error, sizeof(att.ctl->error), fmt, detail);
}

/* The message of the pending Python exception, which is cleared. */
static void error_from_exception(void)
{
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	PyObject *s = value ? PyObject_Str(value) : NULL;
	const char *msg = s ? PyUnicode_AsUTF8(s) : NULL;
	set_error("%s", msg ? msg : "start failed");
	Py_XDECREF(s);
	Py_XDECREF(type);
	Py_XDECREF(value);
	Py_XDECREF(tb);
	PyErr_Clear();
}

static bool monitor_alive(pid_t mpid)
{
	struct ulma_shm_header *hdr = ulma_rt.session.hdr;
	if (mpid <= 0 || (kill(mpid, 0) != 0 && errno == ESRCH))
		return false;
	uint64_t beat = hdr ? atomic_load_explicit(&hdr->heartbeat_ns, memory_order_relaxed) : 0;
	return beat != 0 && ulma_clock_monotonic_ns() < beat + MONITOR_DEAD_NS;
}

/* In the watcher: open the monitor's session and start tracing. */
static void do_attach(void)
{
	struct ulma_attach_ctl *c = att.ctl;
	uint32_t mpid = atomic_load(&c->monitor_pid), sfd = atomic_load(&c->session_fd);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%u/fd/%u", mpid, sfd);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		set_error("cannot open the monitor's session: %s", strerror(errno));
		atomic_store(&c->state, ULMA_STATE_FAILED);
		return;
	}
	if (ULMA_FINALIZING() || atomic_load(&att.stop)) {
		close(fd);
		return;
	}
	PyGILState_STATE g = PyGILState_Ensure();
	if (ulma_rt.active) {
		close(fd);
		set_error("%s", "the process is already traced (by `ulma run`?)");
		atomic_store(&c->state, ULMA_STATE_FAILED);
	} else {
		/* start closes fd */
		PyObject *r = att.skip ? PyObject_CallMethod(att.module, "start", "iO", fd, att.skip)
				       : PyObject_CallMethod(att.module, "start", "i", fd);
		if (r) {
			att.we_started = true;
			atomic_fetch_add(&c->attaches, 1);
			atomic_store(&c->state, ULMA_STATE_ATTACHED);
		} else {
			error_from_exception();
			atomic_store(&c->state, ULMA_STATE_FAILED);
		}
		Py_XDECREF(r);
	}
	PyGILState_Release(g);
}

/* Stop tracing if we started it.  With the GIL held. */
static void stop_locked(void)
{
	if (!att.we_started)
		return;
	att.we_started = false;
	PyObject *r = PyObject_CallMethod(att.module, "stop", NULL);
	if (!r)
		PyErr_Clear();
	Py_XDECREF(r);
}

static void do_detach(void)
{
	if (ULMA_FINALIZING() || atomic_load(&att.stop))
		return;
	PyGILState_STATE g = PyGILState_Ensure();
	stop_locked();
	PyGILState_Release(g);
	atomic_store(&att.ctl->state, ULMA_STATE_DETACHED);
}

static void *watcher(void *arg)
{
	struct ulma_attach_ctl *c = att.ctl;
	const struct timespec nap = {0, ULMA_ATTACH_POLL_NS};
	(void)arg;
	while (!atomic_load(&att.stop)) {
		atomic_store_explicit(&c->watcher_ns, ulma_clock_monotonic_ns(), memory_order_relaxed);
		uint32_t want = atomic_load(&c->want), state = atomic_load(&c->state);
		uint32_t mpid = atomic_load(&c->monitor_pid);
		if (want == ULMA_WANT_ATTACHED && state == ULMA_STATE_DETACHED) {
			do_attach();
		} else if (want == ULMA_WANT_DETACHED && state == ULMA_STATE_ATTACHED) {
			do_detach();
		} else if (want == ULMA_WANT_DETACHED && state == ULMA_STATE_FAILED) {
			atomic_store(&c->state, ULMA_STATE_DETACHED);
		} else if (state == ULMA_STATE_ATTACHED && !monitor_alive((pid_t)mpid)) {
			/* the monitor died without detaching: stop, and free the claim */
			do_detach();
			uint32_t w = ULMA_WANT_ATTACHED;
			atomic_compare_exchange_strong(&c->want, &w, ULMA_WANT_DETACHED);
			atomic_compare_exchange_strong(&c->monitor_pid, &mpid, 0);
		}
		/* an action may have waited long for the GIL: say at once we are here */
		atomic_store_explicit(&c->watcher_ns, ulma_clock_monotonic_ns(), memory_order_relaxed);
		nanosleep(&nap, NULL);
	}
	return NULL;
}

static PyObject *path_result(void)
{
	return PyUnicode_DecodeFSDefault(att.path);
}

PyObject *ulma_attachable(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
	char dir[256];
	if (nargs > 1 || (nargs == 1 && !PyTuple_Check(args[0]))) {
		PyErr_SetString(PyExc_TypeError, "attachable(skip=()) takes a tuple of code objects");
		return NULL;
	}
	if (att.ctl)
		return path_result();
	if (ulma_attach_dir(getuid(), dir, sizeof(dir)) < 0)
		return PyErr_Format(PyExc_OSError, "ulma: no directory for the control file");
	int err = make_dir(dir);
	if (err)
		return PyErr_Format(PyExc_OSError, "ulma: cannot use %s for the control file: %s", dir,
				    err == -EPERM ? "it must be a directory of this user with mode 0700"
						  : strerror(-err));
	snprintf(att.path, sizeof(att.path), "%s/%d", dir, (int)getpid());
	/* a file with our pid is a dead process's: pids are unique among the living */
	unlink(att.path);
	int fd = open(att.path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return PyErr_SetFromErrnoWithFilename(PyExc_OSError, att.path);
	struct ulma_attach_ctl *c = MAP_FAILED;
	if (ftruncate(fd, sizeof(*c)) == 0)
		c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int e = errno;
	close(fd);
	if (c == MAP_FAILED) {
		unlink(att.path);
		errno = e;
		return PyErr_SetFromErrnoWithFilename(PyExc_OSError, att.path);
	}
	c->version = ULMA_ATTACH_VERSION;
	c->size = sizeof(*c);
	c->pid = (uint32_t)getpid();
	c->uid = (uint32_t)getuid();
	c->start_time = ulma_attach_start_time(getpid());
	c->python_hex = PY_VERSION_HEX;
	atomic_store(&c->watcher_ns, ulma_clock_monotonic_ns());
	/* release: a monitor that sees the magic sees the fields above */
	atomic_thread_fence(memory_order_release);
	c->magic = ULMA_ATTACH_MAGIC;
	att.ctl = c;
	Py_INCREF(module);
	att.module = module;
	att.skip = nargs == 1 ? args[0] : NULL;
	Py_XINCREF(att.skip);
	atomic_store(&att.stop, false);

	/* the watcher takes no signal: Python handles them in the main thread */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&att.thread, NULL, watcher, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		munmap(c, sizeof(*c));
		att.ctl = NULL;
		unlink(att.path);
		Py_CLEAR(att.module);
		Py_CLEAR(att.skip);
		errno = err;
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	att.running = true;
	return path_result();
}

/* Forget the control file: it belongs to the process that made it. */
static void forget(bool unlink_file)
{
	if (!att.ctl)
		return;
	if (unlink_file)
		unlink(att.path);
	munmap(att.ctl, sizeof(*att.ctl));
	att.ctl = NULL;
	att.running = false;
	Py_CLEAR(att.module);
	Py_CLEAR(att.skip);
}

PyObject *ulma_attach_shutdown(PyObject *module, PyObject *unused)
{
	(void)module;
	(void)unused;
	if (!att.ctl)
		Py_RETURN_NONE;
	atomic_store(&att.ctl->state, ULMA_STATE_EXITING);
	atomic_store(&att.stop, true);
	if (att.running) {
		/* the watcher may be waiting for the GIL we hold */
		Py_BEGIN_ALLOW_THREADS
		pthread_join(att.thread, NULL);
		Py_END_ALLOW_THREADS
	}
	stop_locked(); /* a monitor still attached sees the threads close */
	forget(true);
	Py_RETURN_NONE;
}

PyObject *ulma_attach_forked(PyObject *module, PyObject *unused)
{
	(void)module;
	(void)unused;
	/* no watcher here (fork copies one thread), and the file is the parent's */
	stop_locked();
	forget(false);
	Py_RETURN_NONE;
}
