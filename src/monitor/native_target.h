/* native_target.h - `ulma run ./prog`: telling a native executable from a
 * Python script, and finding the runtime library (libulma_rt.so) that the
 * traced processes preload (native_target.c).
 *
 * Functions return 0 or -errno and print nothing; the caller explains.
 */
#ifndef ULMA_NATIVE_TARGET_H
#define ULMA_NATIVE_TARGET_H

#include <stdbool.h>
#include <stddef.h>

/* What `ulma run TARGET` runs. */
enum ulma_target_kind {
	ULMA_TARGET_SCRIPT = 0, /* a Python script (or not found: the script check explains) */
	ULMA_TARGET_NATIVE,     /* a dynamically linked ELF executable */
	ULMA_TARGET_STATIC,     /* a statically linked ELF executable: nothing can be preloaded */
};

/* Classify `arg`: a path, or a bare name found on PATH when no file of that
 * name is in the current directory.  For an executable, its path is put
 * into path (cap bytes). */
enum ulma_target_kind ulma_target_classify(const char *arg, char *path, size_t cap);

/* The runtime library to preload: $ULMA_RUNTIME, else beside the `ulma`
 * program (the build tree, ../lib, the Python package's ulma/, or a
 * virtual environment's site-packages).  Returns 0 with the path in buf,
 * or -ENOENT. */
int ulma_runtime_find(char *buf, size_t cap);

/* In the child about to exec: put rt in front of LD_PRELOAD (keeping what
 * was there).  Returns 0 or -ENOMEM. */
int ulma_runtime_preload(const char *rt);

#endif
