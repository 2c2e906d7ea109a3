/* cmdline.c - what `ps` shows for a program `ulma run` started: the command
 * an untraced run would have, not ulma's bootstrap.
 *
 * `ulma run` execs `python -c CODE script.py args...` (or `-c CODE -m mod
 * args...`), so /proc/PID/cmdline, which ps, pgrep -f and top read, held
 * the bootstrap's code and hid the script.  The kernel reads that file from
 * the process's own memory: the argument strings the exec left at the top
 * of the stack, between arg_start and arg_end of /proc/self/stat.  CPython
 * copies its arguments at start-up and never reads those bytes again
 * (sys.argv and sys.orig_argv are its own copies), so they can be rewritten
 * in place, as setproctitle does.  Dropping the `-c CODE` pair leaves
 * `python script.py args...`; the freed bytes at the end become NUL, which
 * ps shows as nothing (a reader that splits the file at every NUL sees
 * empty arguments after the real ones).
 */
#include "tracer.h"

#include <stdio.h>
#include <string.h>

/* arg_start and arg_end (fields 48 and 49) of /proc/self/stat. */
static int argument_area(char **start, char **end)
{
	char buf[2048];
	FILE *f = fopen("/proc/self/stat", "re");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the command name may hold anything, but no ')' after it */
	unsigned long long value[2];
	int field = 2;
	if (!p)
		return -1;
	for (p++; *p && field < 49;) {
		while (*p == ' ')
			p++;
		field++;
		if (field >= 48 && sscanf(p, "%llu", &value[field - 48]) != 1)
			return -1;
		while (*p && *p != ' ')
			p++;
	}
	if (field != 49 || value[0] == 0 || value[1] <= value[0])
		return -1;
	*start = (char *)(uintptr_t)value[0];
	*end = (char *)(uintptr_t)value[1];
	return 0;
}

/* Drop the two arguments ("-c", CODE) that come right before the last
 * `after` ones.  Returns 1 if done, 0 if the area is not as ulma left it
 * (rewritten already, or another command line): then it is untouched. */
static int drop_bootstrap(char *start, char *end, size_t after)
{
	if (end[-1] != 0)
		return 0; /* someone rewrote it (setproctitle): not ours to touch */
	size_t count = 0;
	for (char *p = start; p < end; p++)
		count += *p == 0;
	if (count < after + 3) /* the interpreter, -c, CODE, then the rest */
		return 0;
	char *drop = start;
	for (size_t i = 0; i < count - after - 2; i++)
		drop += strlen(drop) + 1;
	if (strcmp(drop, "-c") != 0)
		return 0;
	char *rest = drop + 3;
	rest += strlen(rest) + 1; /* past CODE */
	size_t keep = (size_t)(end - rest);
	memmove(drop, rest, keep);
	memset(drop + keep, 0, (size_t)(rest - drop));
	return 1;
}

PyObject *ulma_show_untraced_command(PyObject *module, PyObject *after_obj)
{
	(void)module;
	Py_ssize_t after = PyLong_AsSsize_t(after_obj);
	if (after < 0) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_ValueError, "a count of arguments");
		return NULL;
	}
	char *start, *end;
	if (argument_area(&start, &end) < 0)
		Py_RETURN_FALSE;
	return PyBool_FromLong(drop_bootstrap(start, end, (size_t)after));
}
