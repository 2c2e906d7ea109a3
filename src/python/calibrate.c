/* calibrate.c - the hook's own cost per event, measured at start-up.
 *
 * As profile.py's calibrate() does: time a loop that calls an empty Python
 * function n times, untraced and then traced, and divide the difference by
 * the 2n events the traced loop records.  The figure includes everything
 * tracing adds to a call: the interpreter's dispatch to our callbacks
 * (with C calls recorded, also the CALL callback that looks at every
 * call), the clock and the ring write.  Each run keeps the fastest of a few
 * rounds, which drops the time other processes took.
 *
 * The traced rounds write into a private scratch ring, so neither the
 * monitor nor the trace ever sees them.  start() calls this with the GIL
 * held, once with the hook off and once with it on; the first process of a
 * session to finish publishes the figure in the session header, and the
 * monitor subtracts it per event from self times (docs/overhead.md).
 */
#include "calibrate.h"

#include <stdlib.h>
#include <string.h>

#define CALIB_CALLS 4000
#define CALIB_ROUNDS 5
#define SCRATCH_RECORDS 16384u /* > 2 * CALIB_CALLS + a few: never full */

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

/* The fastest of CALIB_ROUNDS timed loops, in ns; 0 on error. */
static uint64_t fastest_loop(struct ulma_thread_writer *scratch, struct ulma_shm_slot *scratch_slot,
			     struct ulma_record *records)
{
	uint64_t best = UINT64_MAX;
	struct ulma_thread_writer *saved = ulma_tls_writer;
	for (int round = 0; round < CALIB_ROUNDS; round++) {
		if (scratch) {
			memset(scratch_slot, 0, sizeof(*scratch_slot));
			ulma_ring_writer_init(&scratch->ring, ulma_tracer.session.hdr, scratch_slot, records,
					      SCRATCH_RECORDS, ulma_tracer.use_tsc);
			scratch->ring.lossless = false;
			scratch->generation = ulma_tracer.writer_generation;
			ulma_tls_writer = scratch;
		}
		uint64_t t0 = ulma_clock_monotonic_ns();
		PyObject *r = PyObject_CallFunction(calib_loop, "iO", CALIB_CALLS, calib_leaf);
		uint64_t t1 = ulma_clock_monotonic_ns();
		ulma_tls_writer = saved;
		if (!r) {
			PyErr_Clear();
			return 0;
		}
		Py_DECREF(r);
		if (t1 - t0 < best)
			best = t1 - t0;
	}
	return best;
}

uint64_t ulma_calibrate_loop_ns(bool traced)
{
	if (load() < 0) {
		PyErr_Clear();
		return 0;
	}
	if (!traced)
		return fastest_loop(NULL, NULL, NULL);
	struct ulma_record *records = calloc(SCRATCH_RECORDS, sizeof(*records));
	struct ulma_thread_writer *scratch = calloc(1, sizeof(*scratch));
	struct ulma_shm_slot *slot = calloc(1, sizeof(*slot));
	uint64_t ns = records && scratch && slot ? fastest_loop(scratch, slot, records) : 0;
	free(records);
	free(scratch);
	free(slot);
	return ns;
}

uint64_t ulma_calibrate_ps_per_event(uint64_t untraced_ns, uint64_t traced_ns)
{
	if (untraced_ns == 0 || traced_ns <= untraced_ns)
		return 0;
	return (traced_ns - untraced_ns) * 1000 / (2 * CALIB_CALLS);
}
