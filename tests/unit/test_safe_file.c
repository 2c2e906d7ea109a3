/* test_safe_file.c - ulma_safe_create (src/core/safe_file.h) and the trace
 * writer that uses it, on real files in a fresh directory: a symlink at the
 * path is replaced and its target keeps its bytes (also a dangling one,
 * which must not create its target); a hard link's other name keeps its
 * bytes; an existing file is replaced by an empty one; a directory is
 * refused; a FIFO the caller made is written into, not replaced; no
 * temporary file is left behind, on success or failure.  Discarding
 * removes a file it made, never the FIFO.  ulma_same_file
 * sees a file through its own name, a symlink and a hard link. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/safe_file.h"
#include "core/trace_writer.h"
#include "tap.h"

static char dir[4096];

static const char *at(const char *name)
{
	static char paths[4][4200];
	static int next;
	char *p = paths[next++ % 4];
	snprintf(p, sizeof(paths[0]), "%s/%s", dir, name);
	return p;
}

static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static int has_text(const char *path, const char *text)
{
	char buf[256] = "";
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return strcmp(buf, text) == 0;
}

/* Entries in the directory whose name marks them as ours and temporary. */
static int temp_files_left(void)
{
	int n = 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL)
		n += strstr(e->d_name, ".tmp") != NULL;
	if (d)
		closedir(d);
	return n;
}

static void test_symlink_replaced(void)
{
	put_file(at("victim"), "precious");
	CHECK(symlink(at("victim"), at("link.trace")) == 0, "plant a symlink");
	int fd = ulma_safe_create(at("link.trace"), 0644);
	if (!CHECK(fd >= 0, "create over a symlink: %s", fd < 0 ? strerror(-fd) : "ok"))
		return;
	CHECK(write(fd, "trace", 5) == 5, "write");
	close(fd);
	struct stat st;
	CHECK(lstat(at("link.trace"), &st) == 0 && S_ISREG(st.st_mode), "the symlink became a regular file");
	CHECK(has_text(at("link.trace"), "trace"), "the new file holds what was written");
	CHECK(has_text(at("victim"), "precious"), "the symlink's target is untouched");
}

static void test_dangling_symlink(void)
{
	CHECK(symlink(at("never-made"), at("dangling.trace")) == 0, "plant a dangling symlink");
	int fd = ulma_safe_create(at("dangling.trace"), 0644);
	CHECK(fd >= 0, "create over a dangling symlink");
	if (fd >= 0)
		close(fd);
	CHECK(access(at("never-made"), F_OK) != 0, "the dangling symlink's target was not created");
}

static void test_hard_link(void)
{
	put_file(at("original"), "keep me");
	CHECK(link(at("original"), at("hard.trace")) == 0, "plant a hard link");
	int fd = ulma_safe_create(at("hard.trace"), 0644);
	if (!CHECK(fd >= 0, "create over a hard link"))
		return;
	close(fd);
	CHECK(has_text(at("original"), "keep me"), "the hard link's other name keeps its bytes");
	CHECK(has_text(at("hard.trace"), ""), "the path is a new, empty file");
}

static void test_existing_file_and_mode(void)
{
	put_file(at("old.trace"), "old contents");
	mode_t mask = umask(022);
	int fd = ulma_safe_create(at("old.trace"), 0644);
	umask(mask);
	if (!CHECK(fd >= 0, "create over an existing file"))
		return;
	close(fd);
	struct stat st;
	CHECK(stat(at("old.trace"), &st) == 0 && st.st_size == 0, "the existing file was replaced by an empty one");
	CHECK((st.st_mode & 0777) == 0644, "mode 0644 under umask 022 (got %o)", (unsigned)(st.st_mode & 0777));
}

static void test_directory_refused(void)
{
	mkdir(at("adir"), 0755);
	CHECK_EQ_I64(ulma_safe_create(at("adir"), 0644), -EISDIR, "a directory is refused");
	CHECK_EQ_I64(ulma_safe_create(at("missing/file"), 0644), -ENOENT, "a missing directory is an error");
}

static void test_fifo_written_into(void)
{
	if (mkfifo(at("fifo"), 0600) != 0) {
		tap_skip("mkfifo");
		return;
	}
	int reader = open(at("fifo"), O_RDONLY | O_NONBLOCK);
	int fd = ulma_safe_create(at("fifo"), 0644);
	if (!CHECK(fd >= 0 && reader >= 0, "open a FIFO of our own for writing"))
		return;
	CHECK(write(fd, "x", 1) == 1, "write into the FIFO");
	char c = 0;
	CHECK(read(reader, &c, 1) == 1 && c == 'x', "the FIFO's reader got it");
	struct stat st;
	CHECK(lstat(at("fifo"), &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO was not replaced");
	close(fd);
	close(reader);
}

static void test_trace_writer_through_symlink(void)
{
	put_file(at("victim2"), "precious too");
	CHECK(symlink(at("victim2"), at("writer.trace")) == 0, "plant a symlink for the writer");
	struct ulma_trace_meta meta = {.tick_hz = 1000000000, .command = "prog.py"};
	struct ulma_trace_writer *w;
	int err = ulma_trace_writer_open(at("writer.trace"), &meta, &w);
	if (!CHECK(err == 0, "the trace writer opens over a symlink"))
		return;
	struct ulma_trace_end end = {.exit_status = 0};
	CHECK(ulma_trace_writer_close(w, &end) == 0, "and closes");
	CHECK(has_text(at("victim2"), "precious too"), "the symlink's target is untouched by the writer");
	struct stat st;
	CHECK(lstat(at("writer.trace"), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0,
	      "the trace is a regular file at the path");
}

static void test_discard(void)
{
	int fd = ulma_safe_create(at("given-up.trace"), 0644);
	if (fd >= 0)
		close(fd);
	ulma_safe_discard(at("given-up.trace"));
	CHECK(access(at("given-up.trace"), F_OK) != 0, "a file it made is discarded");
	ulma_safe_discard(at("fifo"));
	struct stat st;
	CHECK(lstat(at("fifo"), &st) == 0 && S_ISFIFO(st.st_mode), "a FIFO written into is not removed");
}

static void test_same_file(void)
{
	put_file(at("script.py"), "print(1)");
	CHECK(symlink("script.py", at("alias.py")) == 0, "a symlink to the script");
	CHECK(link(at("script.py"), at("other.py")) == 0, "a hard link to the script");
	CHECK(ulma_same_file(at("script.py"), at("script.py")), "a file is itself");
	CHECK(ulma_same_file(at("alias.py"), at("script.py")), "through a symlink");
	CHECK(ulma_same_file(at("script.py"), at("alias.py")), "the input named through a symlink");
	CHECK(ulma_same_file(at("other.py"), at("script.py")), "through a hard link");
	CHECK(!ulma_same_file(at("absent.trace"), at("script.py")), "a path not there is not the file");
	CHECK(!ulma_same_file(at("victim"), at("script.py")), "another file is not the file");
	CHECK(!ulma_same_file(at("fifo"), at("fifo")), "only regular files count");
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/ulma-test-safe-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_symlink_replaced();
	test_dangling_symlink();
	test_hard_link();
	test_existing_file_and_mode();
	test_directory_refused();
	test_fifo_written_into();
	test_trace_writer_through_symlink();
	test_discard();
	test_same_file();
	CHECK_EQ_I64(temp_files_left(), 0, "no temporary file is left behind");
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		tap_diag("could not remove %s", dir);
	return tap_done();
}
