/* calibrate.h - the hook's own cost per event (see calibrate.c). */
#ifndef ULMA_CALIBRATE_H
#define ULMA_CALIBRATE_H

#include <stdbool.h>
#include <stdint.h>

#include "tracer.h"

/* The fastest of a few runs of the calibration loop, in ns, with the hook
 * off (traced false) or on (true: its records go to a scratch ring).  With
 * the GIL held.  Returns 0 if the loop could not run. */
uint64_t ulma_calibrate_loop_ns(bool traced);

/* Picoseconds per recorded event from the two loop times; 0 if unknown. */
uint64_t ulma_calibrate_ps_per_event(uint64_t untraced_ns, uint64_t traced_ns);

#endif
