/* setprofile_return.h - on Python 3.12+, a profile function the program sets
 * is not told of the return of the sys.setprofile() call that set it
 * (see setprofile_return.c). */
#ifndef ULMA_SETPROFILE_RETURN_H
#define ULMA_SETPROFILE_RETURN_H

#include <Python.h>

#if PY_VERSION_HEX >= 0x030C0000
/* While ulma's sys.monitoring tool is on (hook_monitoring.c installs and
 * removes it with the tool): sys.setprofile routed through ulma.  With
 * the GIL held; neither fails (a sys.setprofile that is not the one
 * expected is left alone). */
void ulma_setprofile_return_install(void);
void ulma_setprofile_return_remove(void);
#endif

#endif
