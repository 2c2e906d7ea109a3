/* line_select.h - which code objects are traced line by line (docs/lines.md).
 *
 * The code chosen for line-level profiling comes from three places: the
 * session's --lines patterns (ULMA_DEF_LINES_WANTED definitions, which the
 * monitor writes before the program starts, so every traced process of the
 * session reads the same), function objects given inline to
 * ulma.profile(lines=...), and functions marked with @ulma.lines, which
 * stay chosen for every later session of the process.  A code object is
 * judged once per session, in the id slow path (intern.c), and a chosen
 * one brings every code object nested in it (its functions, lambdas,
 * comprehensions, class bodies).  The hooks then emit ULMA_REC_LINE for
 * chosen code only: on 3.12+ sys.monitoring fires LINE for the chosen code
 * objects alone (hook_monitoring.c); before, a trace function is installed
 * on a thread only while its innermost frame is chosen (line_trace.c).
 *
 * When no code can be chosen, `ulma_lines.on` is false and the hooks pay
 * one test of it.  Everything here runs with the GIL held and never lets
 * an exception escape the hook; failures become sticky bits.
 */
#ifndef ULMA_LINE_SELECT_H
#define ULMA_LINE_SELECT_H

#include "tracer.h"

struct ulma_lines {
	bool on;            /* code may be chosen in this session: the hooks test this first */
	uint32_t epoch;     /* bumped whenever `on` turns true: per-thread state of an older
			     * epoch is stale (line_trace.c) */
	uint64_t *chosen;   /* bitmap: bit `id` set for the id of each chosen code object */
	uint32_t id_limit;  /* ids below this have a bit in `chosen` */
};

extern struct ulma_lines ulma_lines;

/* Whether the code object with this id is traced line by line. */
static inline bool ulma_lines_chosen(uint32_t id)
{
	return id < ulma_lines.id_limit && (ulma_lines.chosen[id >> 6] >> (id & 63)) & 1;
}

/* start(), before the hook is installed: read the session's patterns,
 * `inline_codes` (a sequence of (name, code object) pairs) and what the
 * patterns are resolved against (the cwd, sys.path, the prefixes).  From
 * then on, the code objects that get an id are kept to be judged by
 * ulma_lines_start: while start() measures the hook, other threads run
 * and the code they run gets its id then.  0, or -1 with an exception
 * (bad arguments, out of memory). */
int ulma_lines_prepare(PyObject *inline_codes);

/* start(), once the hook is installed and measured, before tracing is
 * active: choose the inline code objects, those marked with @ulma.lines,
 * and those of the code seen so far that the patterns match.  0, or -1
 * with an exception (the hook could not watch a code object). */
int ulma_lines_start(void);

/* intern.c: code object `co` got `id` in this session: choose it if it is
 * nested in chosen code or matches a pattern.  Never raises. */
void ulma_lines_consider(PyCodeObject *co, uint32_t id);

/* stop(), while the hook is still installed: stop tracing lines (undo the
 * instrumentation of every chosen code object, or take ulma's trace
 * function off every thread), and write one ULMA_DEF_LINES_MATCHED
 * definition per pattern with how many code objects it chose.  Also
 * start()'s way out when it fails after ulma_lines_prepare (then nothing
 * is written). */
void ulma_lines_stop(void);

/* _ulma._lines_mark(code): @ulma.lines.  The code object is chosen in every
 * later session of this process, and at once if one is running. */
PyObject *ulma_lines_mark(PyObject *module, PyObject *code);

/* The hook's side (hook_monitoring.c on 3.12+, line_trace.c before).
 * ulma_hook_lines_watch: co was chosen; 0, or -1 with an exception.
 * ulma_hook_lines_end: the session's line tracing ends; `chosen` is the
 * list of the code objects chosen in it.  Never raises. */
int ulma_hook_lines_watch(PyCodeObject *co);
void ulma_hook_lines_end(PyObject *chosen);

#endif
