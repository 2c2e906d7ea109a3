/* calibrate.c - the hook's own cost per event, measured at start-up.
 *
 * As profile.py's calibrate() does: time a loop that calls an empty Python
 * function n times, untraced and then traced, and divide the difference by
 * the 2n events the traced loop records.  The figure includes everything
 * tracing adds to a call: the interpreter's dispatch to our callbacks
 * (with C calls recorded, also the CALL callback that looks at every
 * call), the clock and the ring write.  Untraced and traced rounds take
 * turns (the hook is removed and installed again between them), so a slow
 * or fast spell of the machine weighs on both of a pair alike; rounds are
 * timed in this thread's CPU time, so that being preempted does not count;
 * and the lower quartile of the pairs' differences (traced less untraced)
 * is kept.  A slow spell of the machine doubles a pair's difference (this
 * VM has spells of tens of ms at half speed), and in one start in four
 * every other traced round was slow: the median came out at 42 to 84 ns
 * an event instead of 36, which once took more than all of fib's time out
 * of it.  The fastest rounds of each kind alone went wrong the other way
 * (2.9 ns on 3.11 in CI, a traced round as fast as an untraced one), so
 * the quartile: up to two pairs too fast and eight too slow do not move
 * it.
 *
 * The traced rounds write into a private scratch ring, so neither the
 * monitor nor the trace ever sees them.  start() calls this with the GIL
 * held, right after installing the hook, in the first process of a
 * session, before tracing is active: the process's other threads, if they
 * run meanwhile, record nothing, and the frames already running are
 * entered only after it (open_frames.c), so its few milliseconds are in no
 * function's time.  start() publishes the figure in the session header,
 * and the monitor subtracts it per event from self times
 * (docs/overhead.md).
 *
 * The program's own profilers and tracers do not see the rounds: this
 * thread's trace function is set aside, and its profile function (on
 * 3.9-3.11 the one chained behind ulma's, chain.h).  On 3.12+ the
 * program's sys.monitoring tools (cProfile, coverage, a debugger),
 * which watch every thread, have their events switched off for the rounds:
 * only when this is the process's one thread, since another taking the GIL
 * meanwhile would run unseen by them.  With such a tool and other threads,
 * the rounds are not run and nothing is measured (set_aside_watchers).
 *
 * One start in five to ten on this project's VM runs its first tens of
 * milliseconds in a state where Python code runs 1.5 times slower (a C
 * loop of multiplications does not: not the clock rate), the calibration
 * with it: 73-86 ns an event where the run then costs 43-50, which took
 * all of fib's time out of `make demo`.  So the process that measured
 * measures again at stop() (ulma_calibrate_again), past that state, and
 * the lower figure is the session's.
 */
#include "calibrate.h"
#include "chain.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CALIB_CALLS 2000
#define CALIB_ROUNDS 11 /* the lower quartile of 11 pairs is the third */
#define SCRATCH_RECORDS 8192u /* > 2 * CALIB_CALLS + a few: never full */

/* What the program watches this thread with, set aside for the rounds:
 * its trace function (sys.settrace: a debugger, coverage), and on 3.12+
 * its profile function and its sys.monitoring tools (on 3.9-3.11 its
 * profile function is chained behind ulma's: chain.h). */
struct watchers {
	Py_tracefunc trace, profile;
	PyObject *trace_arg, *profile_arg; /* strong references */
	long events[6];                    /* a sys.monitoring tool's global events, 0: none to restore */
	PyObject *set_events;              /* sys.monitoring.set_events, where some were switched off */
};

#if PY_VERSION_HEX >= 0x030C0000
/* The interpreter has threads besides the calling one. */
static bool other_threads(void)
{
	PyThreadState *self = PyThreadState_Get();
	for (PyThreadState *t = PyInterpreterState_ThreadHead(PyThreadState_GetInterpreter(self)); t;
	     t = PyThreadState_Next(t))
		if (t != self)
			return true;
	return false;
}

/* Switch off the global events of the program's sys.monitoring tools: 0;
 * 1 when one watches and other threads exist (nothing is changed); -1
 * with an exception. */
static int set_aside_tools(struct watchers *w)
{
	if (ulma_hook_other_tools_events(w->events) < 0)
		return -1;
	bool watched = false;
	for (int tool = 0; tool < 6; tool++)
		watched |= w->events[tool] != 0;
	if (!watched)
		return 0;
	if (other_threads()) {
		memset(w->events, 0, sizeof(w->events));
		return 1;
	}
	PyObject *mon = PySys_GetObject("monitoring"); /* borrowed */
	if (!mon || !(w->set_events = PyObject_GetAttrString(mon, "set_events"))) {
		memset(w->events, 0, sizeof(w->events));
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_RuntimeError, "ulma: sys.monitoring is missing");
		return -1;
	}
	for (int tool = 0; tool < 6; tool++) {
		if (!w->events[tool])
			continue;
		PyObject *r = PyObject_CallFunction(w->set_events, "ii", tool, 0);
		if (!r) { /* this one and those after it are as they were */
			memset(w->events + tool, 0, sizeof(w->events[0]) * (size_t)(6 - tool));
			return -1;
		}
		Py_DECREF(r);
	}
	return 0;
}
#endif

/* Set the program's watchers aside: 0; 1 when the rounds must not run
 * (set_aside_tools), with nothing changed; -1 with an exception, with what
 * was set aside noted in w for put_back_watchers. */
static int set_aside_watchers(struct watchers *w)
{
	memset(w, 0, sizeof(*w));
#if PY_VERSION_HEX >= 0x030C0000
	int rc = set_aside_tools(w);
	if (rc != 0)
		return rc;
#endif
	PyThreadState *ts = PyThreadState_Get();
	if (ts->c_tracefunc) {
		w->trace = ts->c_tracefunc;
		w->trace_arg = ts->c_traceobj;
		Py_XINCREF(w->trace_arg);
		PyEval_SetTrace(NULL, NULL);
	}
#if PY_VERSION_HEX >= 0x030C0000
	if (ts->c_profilefunc) {
		w->profile = ts->c_profilefunc;
		w->profile_arg = Py_XNewRef(ts->c_profileobj);
		PyEval_SetProfile(NULL, NULL);
	}
#endif
	return 0;
}

/* Give the program its watchers back, as set_aside_watchers found them. */
static void put_back_watchers(struct watchers *w)
{
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	if (w->profile)
		PyEval_SetProfile(w->profile, w->profile_arg);
	if (w->trace)
		PyEval_SetTrace(w->trace, w->trace_arg);
	Py_CLEAR(w->trace_arg);
	Py_CLEAR(w->profile_arg);
	for (int tool = 0; tool < 6 && w->set_events; tool++) {
		if (!w->events[tool])
			continue;
		PyObject *r = PyObject_CallFunction(w->set_events, "il", tool, w->events[tool]);
		if (r)
			Py_DECREF(r);
		else
			PyErr_WriteUnraisable(w->set_events);
	}
	Py_CLEAR(w->set_events);
	PyErr_Restore(et, ev, tb);
}

static const char CALIB_SOURCE[] = "def _ulma_calibration_leaf():\n"
				   "    pass\n"
				   "def _ulma_calibration_loop(n, f):\n"
				   "    for _ in range(n):\n"
				   "        f()\n";

static PyObject *calib_loop, *calib_leaf;

static int load(void)
{
	if (calib_loop)
		return 0;
	PyObject *globals = PyDict_New();
	if (!globals)
		return -1;
	if (PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) < 0) {
		Py_DECREF(globals);
		return -1;
	}
	PyObject *code = Py_CompileString(CALIB_SOURCE, "<ulma calibration>", Py_file_input);
	PyObject *r = code ? PyEval_EvalCode(code, globals, globals) : NULL;
	Py_XDECREF(code);
	Py_XDECREF(r);
	if (r) {
		calib_loop = PyDict_GetItemString(globals, "_ulma_calibration_loop");
		calib_leaf = PyDict_GetItemString(globals, "_ulma_calibration_leaf");
		Py_XINCREF(calib_loop);
		Py_XINCREF(calib_leaf);
	}
	Py_DECREF(globals);
	return calib_loop && calib_leaf ? 0 : -1;
}

/* This thread's CPU time: a round the scheduler interrupts is not slower. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One timed run of the loop, in CPU ns; 0 on error.  A first untimed call of
 * one iteration lets the interpreter redo its instrumentation of the two
 * functions after the hook was installed or removed (3.12+), which would
 * otherwise weigh on the traced rounds. */
static uint64_t timed_loop(void)
{
	PyObject *warm = PyObject_CallFunction(calib_loop, "iO", 1, calib_leaf);
	if (!warm) {
		PyErr_Clear();
		return 0;
	}
	Py_DECREF(warm);
	uint64_t t0 = thread_cpu_ns();
	PyObject *r = PyObject_CallFunction(calib_loop, "iO", CALIB_CALLS, calib_leaf);
	uint64_t t1 = thread_cpu_ns();
	if (!r) {
		PyErr_Clear();
		return 0;
	}
	Py_DECREF(r);
	return t1 > t0 ? t1 - t0 : 1;
}

static int by_value(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* Empty the scratch ring: each traced round writes into it from the start. */
static void reset_scratch(struct ulma_thread_writer *scratch, struct ulma_shm_slot *slot, struct ulma_record *records)
{
	memset(slot, 0, sizeof(*slot));
	ulma_ring_writer_init(&scratch->ring, ulma_rt.session.hdr, slot, records, SCRATCH_RECORDS,
			      ulma_rt.use_tsc);
	scratch->ring.lossless = false;
	scratch->generation = ulma_rt.writer_generation;
}

int ulma_calibrate(PyObject *module, uint64_t *ps_per_event)
{
	*ps_per_event = 0;
	struct ulma_record *records = calloc(SCRATCH_RECORDS, sizeof(*records));
	struct ulma_thread_writer *scratch = calloc(1, sizeof(*scratch));
	struct ulma_shm_slot *slot = calloc(1, sizeof(*slot));
	int64_t diff[CALIB_ROUNDS]; /* traced less untraced, per pair of rounds */
	int pairs = 0, rc = 0;
	if (!records || !scratch || !slot)
		goto out;
	/* Everything this thread records meanwhile goes to the scratch ring:
	 * compiling the loop, running it, and removing and installing the hook. */
	struct ulma_thread_writer *saved = ulma_tls_writer;
	reset_scratch(scratch, slot, records);
	ulma_tls_writer = scratch;
	/* the program's profilers and tracers must not see the rounds, traced or not */
	struct watchers watchers;
	int aside = set_aside_watchers(&watchers);
	if (aside != 0) { /* not measured now (-1: an error of sys.monitoring's, no reason to stop the program) */
		if (aside < 0)
			PyErr_Clear();
		put_back_watchers(&watchers);
		ulma_tls_writer = saved;
		rc = 1;
		goto out;
	}
#if PY_VERSION_HEX < 0x030C0000
	PyObject *program_profiler = ulma_chain_set_aside();
#endif
	if (load() < 0) {
		PyErr_Clear();
		goto put_back;
	}
	for (int round = 0; round < CALIB_ROUNDS; round++) {
		/* untraced and traced in turn, so a slower or faster spell of the
		 * machine weighs on both alike */
		uint64_t u = 0;
		if (ulma_hook_remove() < 0)
			PyErr_Clear();
		else
			u = timed_loop();
		if (ulma_hook_install(module) < 0) {
			rc = -1;
			break;
		}
		reset_scratch(scratch, slot, records);
		uint64_t t = timed_loop();
		if (u && t)
			diff[pairs++] = (int64_t)t - (int64_t)u;
	}
put_back:
#if PY_VERSION_HEX < 0x030C0000
	ulma_chain_put_back(program_profiler);
#endif
	put_back_watchers(&watchers); /* its calls recorded in the scratch ring, as the rounds' */
	ulma_tls_writer = saved;
out:
	free(records);
	free(scratch);
	free(slot);
	if (rc == 0 && pairs == CALIB_ROUNDS) {
		qsort(diff, (size_t)pairs, sizeof(diff[0]), by_value);
		int64_t quartile = diff[pairs / 4];
		if (quartile > 0)
			*ps_per_event = (uint64_t)quartile * 1000 / (2 * CALIB_CALLS);
	}
	return rc;
}

static pid_t published_by; /* the process whose start() published the session's figure */

void ulma_calibrate_publish(struct ulma_shm_header *hdr, uint64_t ps)
{
	uint64_t unset = 0;
	/* a test's stand-in for a start in the slow state: its figure times the scale */
	const char *scale = getenv("ULMA_TEST_CALIBRATION_SCALE");
	if (scale && atoi(scale) > 1)
		ps *= (uint64_t)atoi(scale);
	/* the process that measures again at its stop: also when nothing could be measured now */
	if (ps ? atomic_compare_exchange_strong(&hdr->overhead_ps, &unset, ps) : atomic_load(&hdr->overhead_ps) == 0)
		published_by = getpid();
}

void ulma_calibrate_again(PyObject *module, struct ulma_shm_header *hdr)
{
	if (!hdr || published_by != getpid())
		return;
	published_by = 0; /* once: a later start() in this process makes a new session */
	/* as at start-up: from the hook installed, so that a profiler the
	 * program runs is chained behind it and the rounds set it aside */
	if (ulma_hook_install(module) < 0) {
		PyErr_Clear();
		return;
	}
	uint64_t ps = 0;
	int rc = ulma_calibrate(module, &ps);
	if (rc < 0)
		PyErr_Clear(); /* the hook could not be installed: nothing measured, nothing to remove */
	else if (ulma_hook_remove() < 0)
		PyErr_Clear();
	uint64_t cur = atomic_load(&hdr->overhead_ps);
	while (ps && (!cur || ps < cur) && !atomic_compare_exchange_weak(&hdr->overhead_ps, &cur, ps))
		;
	if (!ps && !cur && rc == 1) /* neither at the start nor now: the times keep the hook's cost */
		atomic_fetch_or_explicit(&hdr->failures, ULMA_FAIL_NOT_CALIBRATED, memory_order_relaxed);
}
