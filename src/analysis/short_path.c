/* short_path.c - source paths shortened for frame labels (see short_path.h). */
#include "short_path.h"

#include <stdbool.h>
#include <string.h>

#include "ulma/shm.h"

/* The tail after the last "/site-packages/" or "/dist-packages/", or NULL. */
static const char *site_tail(const char *path)
{
	const char *tail = NULL;
	static const char *const marks[] = {"/site-packages/", "/dist-packages/"};
	for (int i = 0; i < 2; i++)
		for (const char *p = strstr(path, marks[i]); p; p = strstr(p + 1, marks[i]))
			if (!tail || p + strlen(marks[i]) > tail)
				tail = p + strlen(marks[i]);
	return tail;
}

/* The tail after ".../lib/pythonX.Y/" (or /lib/python3/), or NULL. */
static const char *stdlib_tail(const char *path)
{
	for (const char *p = strstr(path, "/lib/python"); p; p = strstr(p + 1, "/lib/python")) {
		const char *q = p + strlen("/lib/python");
		while ((*q >= '0' && *q <= '9') || *q == '.')
			q++;
		if (q > p + strlen("/lib/python") && *q == '/')
			return q + 1;
	}
	return NULL;
}

const char *ulma_short_path(const char *program_dir, const char *path, const char **prefix)
{
	*prefix = "";
	size_t n = program_dir ? strlen(program_dir) : 0;
	if (n && strncmp(path, program_dir, n) == 0 && path[n] == '/' && path[n + 1])
		return path + n + 1;
	const char *tail = site_tail(path);
	if (tail && *tail) {
		*prefix = "<site>/";
		return tail;
	}
	tail = stdlib_tail(path);
	if (tail && *tail) {
		*prefix = "<stdlib>/";
		return tail;
	}
	return path;
}

void ulma_short_path_program(const struct ulma_walk *w, char *buf, size_t cap)
{
	buf[0] = 0;
	for (uint32_t k = 0; k < w->nfuncs; k++) {
		const struct ulma_walk_func *f = &w->funcs[k];
		if (f->kind != ULMA_DEF_PY || !f->name || strcmp(f->name, "<module>") != 0 || f->file[0] != '/' ||
		    site_tail(f->file) || stdlib_tail(f->file))
			continue;
		const char *slash = strrchr(f->file, '/');
		size_t len = (size_t)(slash - f->file);
		if (len > 0 && len < cap) {
			memcpy(buf, f->file, len);
			buf[len] = 0;
		}
		return;
	}
}
