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
 * and the fastest untraced round is taken from the fastest traced one.
 * A disturbance only ever adds time (caches, an interrupt, the monitor
 * starting on this core's hyperthread sibling): in one start in four
 * every other traced round took 260 us instead of 222, and the median of
 * the pairs' differences came out at 42 to 84 ns an event instead of 36,
 * which took more than a whole fib's time out of it.  The fastest rounds
 * of each kind are the undisturbed ones.
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
 */
#include "calibrate.h"
#include "chain.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CALIB_CALLS 2000
#define CALIB_ROUNDS 11 /* each kind's fastest of 11: at least one undisturbed */
#define SCRATCH_RECORDS 8192u /* > 2 * CALIB_CALLS + a few: never full */

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
	uint64_t fastest_untraced = UINT64_MAX, fastest_traced = UINT64_MAX;
	int pairs = 0, rc = 0;
	if (!records || !scratch || !slot)
		goto out;
	/* Everything this thread records meanwhile goes to the scratch ring:
	 * compiling the loop, running it, and removing and installing the hook. */
	struct ulma_thread_writer *saved = ulma_tls_writer;
#if PY_VERSION_HEX < 0x030C0000
	/* a profiler the program runs on this thread (chain.h) must not see the
	 * rounds, traced or not */
	PyObject *program_profiler = ulma_chain_set_aside();
#endif
	reset_scratch(scratch, slot, records);
	ulma_tls_writer = scratch;
	if (load() < 0) {
		PyErr_Clear();
		ulma_tls_writer = saved;
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
		if (u && t) {
			pairs++;
			fastest_untraced = u < fastest_untraced ? u : fastest_untraced;
			fastest_traced = t < fastest_traced ? t : fastest_traced;
		}
	}
	ulma_tls_writer = saved;
put_back:
#if PY_VERSION_HEX < 0x030C0000
	ulma_chain_put_back(program_profiler);
#endif
out:
	free(records);
	free(scratch);
	free(slot);
	if (rc == 0 && pairs == CALIB_ROUNDS && fastest_traced > fastest_untraced)
		*ps_per_event = (fastest_traced - fastest_untraced) * 1000 / (2 * CALIB_CALLS);
	return rc;
}
