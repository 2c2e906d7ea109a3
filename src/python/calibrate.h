/* calibrate.h - the hook's own cost per event (see calibrate.c). */
#ifndef ULMA_CALIBRATE_H
#define ULMA_CALIBRATE_H

#include <stdbool.h>
#include <stdint.h>

#include "tracer.h"

/* Measure the hook's cost per event in ps (0 if it could not be
 * measured).  With the GIL held and the hook installed; it is removed and
 * installed again for each round, and installed on return.  Returns 0, or
 * -1 with a Python exception set when it could not be installed again. */
int ulma_calibrate(PyObject *module, uint64_t *ps_per_event);

#endif
