/* native_target.c - `ulma run` on a native executable: recognise one, and
 * find and preload the runtime library (native_target.h).
 *
 * A target is native when it is an ELF file; it then runs as itself, with
 * libulma_rt.so first in LD_PRELOAD.  The library's constructor maps the
 * session and starts tracing (src/runtime/rt.c), and every process it
 * starts inherits the preload, so children are traced too.  A static
 * executable cannot preload anything, so ulma refuses it up front instead
 * of tracing nothing.
 */
#include "native_target.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Does the ELF file on fd ask for an interpreter (is it dynamically linked)? */
static bool has_interp(int fd, const unsigned char *ident)
{
	if (ident[EI_CLASS] != ELFCLASS64) /* a 32-bit program: call it dynamic, the loader decides */
		return true;
	Elf64_Ehdr eh;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || eh.e_phentsize != sizeof(Elf64_Phdr))
		return true;
	for (unsigned i = 0; i < eh.e_phnum && i < 4096; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) != (ssize_t)sizeof(ph))
			return true;
		if (ph.p_type == PT_INTERP)
			return true;
	}
	return false;
}

static enum ulma_target_kind classify_file(const char *file)
{
	struct stat st;
	if (stat(file, &st) != 0 || !S_ISREG(st.st_mode))
		return ULMA_TARGET_SCRIPT;
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ULMA_TARGET_SCRIPT;
	unsigned char ident[EI_NIDENT];
	enum ulma_target_kind kind = ULMA_TARGET_SCRIPT;
	if (read(fd, ident, sizeof(ident)) == (ssize_t)sizeof(ident) && memcmp(ident, ELFMAG, SELFMAG) == 0)
		kind = has_interp(fd, ident) ? ULMA_TARGET_NATIVE : ULMA_TARGET_STATIC;
	close(fd);
	return kind;
}

enum ulma_target_kind ulma_target_classify(const char *arg, char *path, size_t cap)
{
	if (strchr(arg, '/') || access(arg, F_OK) == 0) {
		enum ulma_target_kind k = classify_file(arg);
		if (k != ULMA_TARGET_SCRIPT)
			snprintf(path, cap, "%s", arg);
		return k;
	}
	const char *env = getenv("PATH");
	if (!env)
		return ULMA_TARGET_SCRIPT;
	char *dirs = strdup(env), *save = NULL;
	enum ulma_target_kind k = ULMA_TARGET_SCRIPT;
	for (char *d = dirs ? strtok_r(dirs, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
		char cand[PATH_MAX];
		if (snprintf(cand, sizeof(cand), "%s/%s", *d ? d : ".", arg) >= (int)sizeof(cand) ||
		    access(cand, X_OK) != 0)
			continue;
		k = classify_file(cand);
		if (k != ULMA_TARGET_SCRIPT) {
			snprintf(path, cap, "%s", cand);
			break;
		}
	}
	free(dirs);
	return k;
}

static bool usable(const char *p)
{
	return access(p, R_OK) == 0;
}

int ulma_runtime_find(char *buf, size_t cap)
{
	const char *env = getenv("ULMA_RUNTIME");
	if (env && *env) {
		snprintf(buf, cap, "%s", env);
		return usable(buf) ? 0 : -ENOENT;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -ENOENT;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	/* the build tree; a C install (bin/ and lib/); the package's _bin/ */
	static const char *const rel[] = {"libulma_rt.so", "../lib/libulma_rt.so", "../libulma_rt.so"};
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		if (snprintf(buf, cap, "%s/%s", exe, rel[i]) < (int)cap && usable(buf))
			return 0;
	}
	/* a virtual environment's bin/: its site-packages */
	char pattern[PATH_MAX + 64];
	if (snprintf(pattern, sizeof(pattern), "%s/../lib/python3*/site-packages/ulma/libulma_rt.so", exe) >=
	    (int)sizeof(pattern))
		return -ENOENT;
	glob_t g;
	int rc = -ENOENT;
	if (glob(pattern, 0, NULL, &g) == 0) {
		if (g.gl_pathc > 0 && strlen(g.gl_pathv[0]) < cap) {
			snprintf(buf, cap, "%s", g.gl_pathv[0]);
			rc = 0;
		}
		globfree(&g);
	}
	return rc;
}

int ulma_runtime_preload(const char *rt)
{
	const char *old = getenv("LD_PRELOAD");
	if (!old || !*old)
		return setenv("LD_PRELOAD", rt, 1) == 0 ? 0 : -ENOMEM;
	size_t n = strlen(rt) + strlen(old) + 2;
	char *v = malloc(n);
	if (!v)
		return -ENOMEM;
	snprintf(v, n, "%s:%s", rt, old);
	int rc = setenv("LD_PRELOAD", v, 1) == 0 ? 0 : -ENOMEM;
	free(v);
	return rc;
}
