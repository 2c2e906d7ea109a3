/* gil.c - where this interpreter's GIL lives, so the monitor can tell a
 * thread waiting for the GIL from one blocked on anything else.
 *
 * A thread that waits for the GIL sleeps in a futex on a word inside the
 * interpreter's `struct _gil_runtime_state` (its condition variable or its
 * mutex, or, with forced switching, the switch condition and mutex).  The
 * monitor reads /proc/PID/task/TID/syscall of a blocked thread: a futex
 * wait whose address falls in [addr, addr + len) is a GIL wait
 * (docs/time-split.md).  The struct is private to CPython, so this one
 * file is built as core code (Py_BUILD_CORE_MODULE) against the internal
 * headers every CPython install ships: the GIL is in _PyRuntime.ceval up
 * to 3.11 and per interpreter from 3.12.  A build without a GIL (the
 * free-threaded 3.13t) reports none.  Call with the GIL held.
 */
#define Py_BUILD_CORE_MODULE 1
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if PY_VERSION_HEX >= 0x030C0000
#include "internal/pycore_interp.h"
#else
#include "internal/pycore_runtime.h"
#endif

#include "gil.h"

void ulma_gil_range(uint64_t *addr, uint32_t *len)
{
#if defined(Py_GIL_DISABLED)
	*addr = 0;
	*len = 0;
#elif PY_VERSION_HEX >= 0x030C0000
	struct _gil_runtime_state *gil = PyInterpreterState_Get()->ceval.gil;
	*addr = (uint64_t)(uintptr_t)gil;
	*len = gil ? (uint32_t)sizeof(*gil) : 0;
#else
	*addr = (uint64_t)(uintptr_t)&_PyRuntime.ceval.gil;
	*len = (uint32_t)sizeof(_PyRuntime.ceval.gil);
#endif
}
