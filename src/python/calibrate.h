/* calibrate.h - the hook's own cost per event (see calibrate.c). */
#ifndef ULMA_CALIBRATE_H
#define ULMA_CALIBRATE_H

#include <stdbool.h>
#include <stdint.h>

#include "tracer.h"

/* Measure the hook's cost per event in ps (0 if it could not be
 * measured).  With the GIL held and the hook installed; it is removed and
 * installed again for each round, and installed on return.  Returns 0; 1
 * when the rounds were not run, because a sys.monitoring tool of the
 * program's watches every thread and others exist (3.12+, calibrate.c);
 * or -1 with a Python exception set when the hook could not be installed
 * again. */
int ulma_calibrate(PyObject *module, uint64_t *ps_per_event);

/* start()'s measure, published in the session header, by the process
 * that measured it (it notes that it did, and so measures again at its
 * stop; also when it measured nothing, ps 0, and the header has no figure
 * yet). */
void ulma_calibrate_publish(struct ulma_shm_header *hdr, uint64_t ps);

/* At stop(), in the process that published the session's figure, after
 * the hook was removed and tracing stopped: measure again, and lower the
 * header's figure to this one if it is lower (docs/overhead.md: start-up
 * runs in a slow state often enough that the lower of the two is the
 * run's; the first figure, if start-up had none).  If neither could be
 * measured (ulma_calibrate's 1 both times), the header's failure bit
 * ULMA_FAIL_NOT_CALIBRATED says so.  The hook is installed for it, as at
 * start-up, and removed again on return.  Nothing else is done in another
 * process (a forked child) or when nothing was published. */
void ulma_calibrate_again(PyObject *module, struct ulma_shm_header *hdr);

#endif
