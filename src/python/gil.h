/* gil.h - the address range of this interpreter's GIL (see gil.c). */
#ifndef ULMA_GIL_H
#define ULMA_GIL_H

#include <stdint.h>

/* The GIL's bytes: a futex wait inside them is a wait for the GIL.  Gives
 * 0, 0 where there is no GIL.  With the GIL held. */
void ulma_gil_range(uint64_t *addr, uint32_t *len);

#endif
