/* test_proc_name.c - naming processes in the live view
 * (src/monitor/proc_name.h): the interpreter is left out, arguments are
 * joined by spaces, an empty or unreadable command line is "?", a long one
 * is cut, and the name of a pid is read once and then cached (this test's
 * own process, then a pid that does not exist). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/proc_name.h"
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
	CHECK(formats_as(RAW("python3\0-B\0-c\0from multiprocessing.spawn import spawn_main\0"),
			 "-c from multiprocessing.spawn import spawn_main"),
	      "the interpreter's options before -c are left out");
	CHECK(formats_as(RAW("python3\0-u\0-X\0dev\0-W\0error\0/srv/app.py\0-x\0"), "app.py -x"),
	      "-X and -W with their values too, not the script's options");
	CHECK(formats_as(RAW("python3\0-I\0"), "-I"), "an option as the last argument stays");
	CHECK(formats_as(RAW("python3\0-X\0"), "-X"), "-X without its value stays");
	CHECK(formats_as(RAW("./server\0--port\0008080\0"), "server --port 8080"), "not Python: all of it");
	CHECK(formats_as(RAW("python3\0/srv/app/work.py\0/tmp/in\0"), "work.py /tmp/in"),
	      "the script by its file name, its arguments as they are");
	CHECK(formats_as(RAW("python3\0/srv/app/\0"), "/srv/app/"), "a path ending in / stays");
	CHECK(formats_as("", 0, "?"), "empty (a process that ended): ?");
	char small[6];
	ulma_proc_name_format(RAW("python3\0abcdefghij\0"), small, sizeof(small));
	CHECK(strcmp(small, "abcde") == 0, "cut to the buffer, NUL-terminated: %s", small);

	char mine[ULMA_PROC_NAME_MAX];
	CHECK(ulma_proc_name_read((uint32_t)getpid(), mine, sizeof(mine)) && strstr(mine, "test_proc_name"),
	      "this process: %s", mine);
	char none[ULMA_PROC_NAME_MAX];
	CHECK(!ulma_proc_name_read(0x7ffffffe, none, sizeof(none)) && strcmp(none, "?") == 0, "no such pid: ?");
	return tap_done();
}
