/* collector_lines.c - line records, source copies and --lines patterns
 * (see collector_lines.h). */
#include "collector_lines.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../analysis/profile_lines.h"
#include "../core/array.h"
#include "collector_defs.h"
#include "ulma/shm.h"
#include "ulma/trace_format.h"

struct lines_pattern {
	char *text;
	uint64_t matched; /* code objects chosen, over the processes that reported */
};

struct ulma_collector_lines {
	uint8_t *copied; /* per trace file id: 1 once its source was looked for */
	uint32_t ncopied;
	struct lines_pattern *patterns;
	uint32_t npatterns;
	uint32_t cap_patterns;
	struct timespec started; /* CLOCK_REALTIME at the first line: a file modified after the
				  * program started may not be what ran */
};

static int set_error(struct ulma_collector *c, int err)
{
	if (err && !c->error)
		c->error = err;
	return err;
}

static struct ulma_collector_lines *lines_of(struct ulma_collector *c)
{
	if (!c->lines && (c->lines = calloc(1, sizeof(*c->lines))))
		clock_gettime(CLOCK_REALTIME, &c->lines->started);
	return c->lines;
}

/* Read path (relative paths from process pid's cwd) into a new buffer of
 * at most ULMA_TRACE_MAX_SOURCE bytes.  NULL if it cannot be read. */
static char *read_source(const char *path, uint32_t pid, size_t *len, unsigned *flags,
			 const struct timespec *started)
{
	char where[4096 + 64];
	if (path[0] == '/')
		snprintf(where, sizeof(where), "%s", path);
	else
		snprintf(where, sizeof(where), "/proc/%u/cwd/%s", pid, path);
	int fd = open(where, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return NULL;
	struct stat st;
	char *text = NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		size_t want = (uint64_t)st.st_size > ULMA_TRACE_MAX_SOURCE ? ULMA_TRACE_MAX_SOURCE : (size_t)st.st_size;
		text = malloc(want + 1);
		size_t got = 0;
		while (text && got < want) {
			ssize_t n = read(fd, text + got, want - got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			got += (size_t)n;
		}
		*len = got;
		*flags = ((uint64_t)st.st_size > got ? ULMA_SOURCE_CUT : 0) |
			 (st.st_mtim.tv_sec > started->tv_sec ||
					  (st.st_mtim.tv_sec == started->tv_sec && st.st_mtim.tv_nsec > started->tv_nsec)
				  ? ULMA_SOURCE_CHANGED
				  : 0);
	}
	close(fd);
	return text;
}

/* Function func has its first line: copy its file, if not done yet. */
static int copy_source(struct ulma_collector *c, struct ulma_collector_lines *l, uint32_t func, uint32_t pid)
{
	const char *path = c->profile.funcs[func].file;
	size_t plen = strlen(path);
	uint32_t fid;
	int err = ulma_collector_file_id(c, path, plen, &fid);
	if (err)
		return err;
	if (fid < l->ncopied && l->copied[fid])
		return 0;
	if (ulma_array_grow((void **)&l->copied, &l->ncopied, fid, sizeof(*l->copied)))
		return -ENOMEM;
	l->copied[fid] = 1;
	if (plen == 0 || path[0] == '<')
		return 0; /* <string>, <stdin>, frozen modules: no file to read */
	size_t len = 0;
	unsigned flags = 0;
	char *text = read_source(path, pid, &len, &flags, &l->started);
	if (!text)
		return 0;
	err = ulma_profile_add_source(&c->profile, path, plen, text, len, flags);
	if (!err && c->writer)
		err = ulma_trace_define_source(c->writer, fid, flags, text, len);
	free(text);
	return err;
}

int ulma_collector_line(struct ulma_collector *c, uint32_t thread, uint32_t pid, struct ulma_trace_stream *stream,
			uint64_t ticks, uint32_t line, bool resumed)
{
	struct ulma_collector_lines *l = lines_of(c);
	if (!l)
		return set_error(c, -ENOMEM);
	const struct ulma_thread_row *t = &c->profile.threads[thread];
	if (!t->depth) /* its frame was closed (a loss) or never opened: no line, as in the trace */
		return 0;
	uint32_t func = t->top;
	int err = 0;
	if (c->profile.funcs[func].line_rows == 0) /* before the line's event, so the trace has the source ahead of it */
		err = copy_source(c, l, func, pid);
	if (stream)
		ulma_trace_line(stream, ticks, line, resumed);
	if (!err)
		err = ulma_profile_line(&c->profile, thread, ticks, line, !resumed);
	return set_error(c, err);
}

int ulma_collector_take_lines_def(struct ulma_collector *c, const struct ulma_def_view *d)
{
	struct ulma_collector_lines *l = lines_of(c);
	if (!l)
		return set_error(c, -ENOMEM);
	struct lines_pattern *p = NULL;
	for (uint32_t i = 0; i < l->npatterns && !p; i++)
		if (strlen(l->patterns[i].text) == d->name_len && memcmp(l->patterns[i].text, d->name, d->name_len) == 0)
			p = &l->patterns[i];
	if (!p) {
		if (ulma_array_grow((void **)&l->patterns, &l->cap_patterns, l->npatterns, sizeof(*l->patterns)))
			return set_error(c, -ENOMEM);
		p = &l->patterns[l->npatterns];
		if (!(p->text = ulma_strndup(d->name, d->name_len)))
			return set_error(c, -ENOMEM);
		p->matched = 0;
		l->npatterns++;
	}
	if (d->kind == ULMA_DEF_LINES_MATCHED)
		p->matched += d->line;
	return 0;
}

int ulma_collector_lines_warn(const struct ulma_collector *c, FILE *err)
{
	int n = 0;
	for (uint32_t i = 0; c->lines && i < c->lines->npatterns; i++)
		if (c->lines->patterns[i].matched == 0) {
			fprintf(err, "ulma: warning: --lines '%s' matched no function that ran\n",
				c->lines->patterns[i].text);
			n++;
		}
	return n;
}

void ulma_collector_lines_free(struct ulma_collector *c)
{
	if (!c->lines)
		return;
	for (uint32_t i = 0; i < c->lines->npatterns; i++)
		free(c->lines->patterns[i].text);
	free(c->lines->patterns);
	free(c->lines->copied);
	free(c->lines);
	c->lines = NULL;
}
