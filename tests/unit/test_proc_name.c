/* test_proc_name.c - naming processes in the live view
 * (src/monitor/proc_name.h): the interpreter is left out, arguments are
 * joined by spaces, an empty or unreadable command line is "?", a long one
 * is cut, and the name of a pid is read once and then cached (this test's
 * own process, then a pid that does not exist). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "monitor/proc_name.h"
#include "tap.h"

static int formats_as(const char *raw, size_t len, const char *expected)
{
	char out[ULMA_PROC_NAME_MAX];
	ulma_proc_name_format(raw, len, out, sizeof(out));
	if (strcmp(out, expected) != 0) {
		tap_diag("got \"%s\", expected \"%s\"", out, expected);
		return 0;
	}
	return 1;
}

#define RAW(s) s, sizeof(s) - 1 /* with its embedded NULs, without the literal's own */

int main(void)
{
	CHECK(formats_as(RAW("python3\0work.py\0--n\0003\0"), "work.py --n 3"), "python3 work.py --n 3");
	CHECK(formats_as(RAW("/usr/bin/python3.12\0-m\0pkg.tool\0"), "-m pkg.tool"), "a full interpreter path");
	CHECK(formats_as(RAW("python3\0"), "python3"), "the interpreter alone keeps its name");
	CHECK(formats_as(RAW("python3\0-c\0import sys\nimport ulma._boot as b\0work.py\0-v\0"), "work.py -v"),
	      "ulma run's boot code is left out");
	CHECK(formats_as(RAW("python3\0-c\0import ulma._boot\0"), "-c import ulma._boot"),
	      "boot code with nothing after it stays");
	CHECK(formats_as(RAW("python3\0-c\0from multiprocessing.spawn import spawn_main\0--multiprocessing-fork\0"),
			 "-c from multiprocessing.spawn import spawn_main --multiprocessing-fork"),
	      "other -c code stays");
	CHECK(formats_as(RAW("./server\0--port\0008080\0"), "server --port 8080"), "not Python: all of it");
	CHECK(formats_as(RAW("python3\0/srv/app/work.py\0/tmp/in\0"), "work.py /tmp/in"),
	      "the script by its file name, its arguments as they are");
	CHECK(formats_as(RAW("python3\0/srv/app/\0"), "/srv/app/"), "a path ending in / stays");
	CHECK(formats_as("", 0, "?"), "empty (a process that ended): ?");
	char small[6];
	ulma_proc_name_format(RAW("python3\0abcdefghij\0"), small, sizeof(small));
	CHECK(strcmp(small, "abcde") == 0, "cut to the buffer, NUL-terminated: %s", small);

	static struct ulma_proc_names names;
	const char *mine = ulma_proc_name(&names, (uint32_t)getpid());
	CHECK(strstr(mine, "test_proc_name") != NULL, "this process: %s", mine);
	CHECK(ulma_proc_name(&names, (uint32_t)getpid()) == mine && names.count == 1, "asked again: cached");
	CHECK(strcmp(ulma_proc_name(&names, 0x7ffffffe), "?") == 0, "no such pid: ?");
	for (uint32_t pid = 1; pid <= ULMA_PROC_NAMES + 3; pid++)
		ulma_proc_name(&names, 0x70000000 + pid);
	CHECK(names.count == ULMA_PROC_NAMES, "the cache stays at %u entries", ULMA_PROC_NAMES);
	return tap_done();
}
