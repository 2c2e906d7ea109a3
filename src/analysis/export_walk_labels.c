/* export_walk_labels.c - what the walk says of what it read, for exporters
 * to print: a process's name, a thread's label, the note on which times an
 * output holds, the id shared by an MPI message's two ends, and the parsing
 * of the time options (--from, --to, --min-duration) the filters take.
 * Declared in export_walk.h, where each states its errors.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export_walk.h"

int ulma_walk_parse_ns(const char *s, uint64_t *out)
{
	char *end;
	size_t digits = s ? strspn(s, "0123456789.") : 0;
	if (digits == 0 || s[0] == '.')
		return -EINVAL;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end != s + digits || !isfinite(v) || v < 0)
		return -EINVAL;
	double scale;
	if (*end == 0 || strcmp(end, "ns") == 0)
		scale = 1;
	else if (strcmp(end, "us") == 0)
		scale = 1e3;
	else if (strcmp(end, "ms") == 0)
		scale = 1e6;
	else if (strcmp(end, "s") == 0)
		scale = 1e9;
	else
		return -EINVAL;
	double ns = v * scale;
	if (ns >= 1.8e19)
		return -EINVAL;
	*out = (uint64_t)(ns + 0.5);
	return 0;
}

const char *ulma_walk_process_name(const struct ulma_walk *w, uint32_t pid)
{
	const char *name = ulma_pid_names_get(&w->names, pid);
	if (!name && w->pid && pid == w->pid && w->command && *w->command)
		name = w->command;
	return name;
}

uint32_t ulma_walk_parent_pid(const struct ulma_walk *w, uint32_t pid)
{
	uint32_t ppid = 0;
	ulma_idmap_get(&w->parent_of_pid, (uint64_t)pid + 1, &ppid);
	return ppid;
}

/* Per pid with a passing, seen thread: its earliest such thread (+ 1), and
 * the one a flow leaves from (its main thread, else its earliest). */
static int process_threads(const struct ulma_walk *w, struct ulma_idmap *earliest, struct ulma_idmap *anchor)
{
	int err = 0;
	for (uint32_t i = 0; i < w->nthreads && !err; i++) {
		const struct ulma_walk_thread *t = &w->threads[i];
		uint32_t e;
		if (!t->pass || !t->seen)
			continue;
		uint64_t key = (uint64_t)t->pid + 1;
		if (!ulma_idmap_get(earliest, key, &e) || t->first_ns < w->threads[e - 1].first_ns)
			err = ulma_idmap_put(earliest, key, i + 1);
		uint32_t a;
		bool have = ulma_idmap_get(anchor, key, &a);
		if (!err && (t->tid == t->pid || !have ||
			     (w->threads[a - 1].tid != t->pid && t->first_ns < w->threads[a - 1].first_ns)))
			err = ulma_idmap_put(anchor, key, i + 1);
	}
	return err;
}

static int by_time(const void *a, const void *b)
{
	const struct ulma_walk_spawn *x = a, *y = b;
	return x->at_ns < y->at_ns ? -1 : x->at_ns > y->at_ns ? 1 : (x->pid > y->pid) - (x->pid < y->pid);
}

int ulma_walk_spawns(const struct ulma_walk *w, struct ulma_walk_spawn **out, uint32_t *n)
{
	struct ulma_idmap earliest = {0}, anchor = {0};
	*out = NULL;
	*n = 0;
	int err = w->parent_of_pid.count ? process_threads(w, &earliest, &anchor) : 0;
	for (size_t b = 0; !err && earliest.keys && b <= earliest.mask; b++) {
		uint32_t child = earliest.values[b], parent, ppid;
		if (!earliest.keys[b])
			continue;
		uint32_t pid = (uint32_t)(earliest.keys[b] - 1);
		if (!ulma_idmap_get(&w->parent_of_pid, (uint64_t)pid + 1, &ppid) || ppid == pid ||
		    !ulma_idmap_get(&anchor, (uint64_t)ppid + 1, &parent))
			continue;
		struct ulma_walk_spawn *p = realloc(*out, (size_t)(*n + 1) * sizeof(*p));
		if (!p) {
			err = -ENOMEM;
			break;
		}
		*out = p;
		p[(*n)++] = (struct ulma_walk_spawn){pid, ppid, child - 1, parent - 1, w->threads[child - 1].first_ns,
						 (UINT64_C(1) << 53) + 2 * (uint64_t)pid};
	}
	ulma_idmap_free(&earliest);
	ulma_idmap_free(&anchor);
	if (err) {
		free(*out);
		*out = NULL;
		*n = 0;
		return err;
	}
	if (*n > 1)
		qsort(*out, *n, sizeof(**out), by_time);
	return 0;
}

void ulma_walk_thread_label(const struct ulma_walk *w, const struct ulma_walk_thread *t, char *out, size_t cap)
{
	const char *name = ulma_walk_process_name(w, t->pid);
	char tail[ULMA_WALK_LABEL_MAX];
	if (t->name < w->nfuncs)
		snprintf(tail, sizeof(tail), "%.*s %u (pid %u)", ULMA_WALK_LABEL_MAX / 2, w->funcs[t->name].name, t->tid,
			 t->pid);
	else
		snprintf(tail, sizeof(tail), "%s %u (pid %u)", t->tid == t->pid ? "main thread" : "thread", t->tid,
			 t->pid);
	if (name)
		snprintf(out, cap, "%.*s: %s", (int)(cap > strlen(tail) + 3 ? cap - strlen(tail) - 3 : 0), name, tail);
	else
		snprintf(out, cap, "%s", tail);
}

void ulma_walk_times_note(const struct ulma_walk *w, char *out, size_t cap)
{
	if (w->cost_ps)
		snprintf(out, cap, "times less the hook's measured cost of %.1f ns per event, as in ulma's summary "
			 "(--no-correction for times as measured)", (double)w->cost_ps / 1000.0);
	else if (w->filter.no_correction)
		snprintf(out, cap, "times as measured, the hook's cost included (--no-correction)");
	else
		snprintf(out, cap, "times as measured: the trace holds no measured cost of the hook");
}

bool ulma_walk_mpi_message_id(const struct ulma_walk_mpi *m, uint64_t *id)
{
	const struct ulma_trace_mpi *e = m->ev;
	if ((e->op != ULMA_MPI_SEND && e->op != ULMA_MPI_RECV) || e->nargs < 5 || m->rank == UINT32_MAX ||
	    e->args[4] == ULMA_MPI_SEQ_NONE)
		return false;
	bool send = e->op == ULMA_MPI_SEND;
	uint64_t parts[5] = {send ? m->rank : e->args[0], send ? e->args[0] : m->rank, e->args[1], e->args[2],
			     e->args[4]};
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	for (int k = 0; k < 5; k++)
		h = (h ^ parts[k]) * UINT64_C(0x100000001b3) ^ (h >> 31);
	*id = h & ((UINT64_C(1) << 53) - 1);
	return true;
}
