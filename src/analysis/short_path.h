/* short_path.h - a source file's path as the exports show it in a frame:
 * relative to the program's directory when inside it, the standard
 * library's and installed packages' abbreviated (`<stdlib>/json/decoder.py`,
 * `<site>/black/linegen.py`), anything else as it is.
 *
 * The program's directory is the directory of the first module the
 * program ran (ulma_short_path_program).  Pure functions of their
 * arguments: no allocation, no locale, any thread.
 */
#ifndef ULMA_SHORT_PATH_H
#define ULMA_SHORT_PATH_H

#include <stddef.h>

#include "export_walk.h"

/* The short form of path is *prefix ("", "<stdlib>/" or "<site>/")
 * followed by the returned tail of path.  program_dir may be NULL or "". */
const char *ulma_short_path(const char *program_dir, const char *path, const char **prefix);

/* The program's directory, in buf (cap bytes; "" when not found or too
 * long): that of the first `<module>` the trace defines (the first run)
 * at an absolute path outside the standard library and the installed
 * packages, whatever the export's filters keep. */
void ulma_short_path_program(const struct ulma_walk *w, char *buf, size_t cap);

#endif
