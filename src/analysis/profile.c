/* profile.c - shadow stacks and per-function totals (see profile.h); the
 * per-event paths are inline in profile.h, the rare ones are here. */
#include "profile.h"
#include "profile_lines.h"
#include "profile_memory.h"

#include "../core/array.h"
#include "ulma/shm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void ulma_profile_init(struct ulma_profile *p)
{
	memset(p, 0, sizeof(*p));
}

void ulma_profile_free(struct ulma_profile *p)
{
	ulma_pid_names_free(&p->names);
	for (uint32_t i = 0; i < p->nfuncs; i++) {
		free(p->funcs[i].name);
		free(p->funcs[i].file);
		free(p->funcs[i].line_row_of);
	}
	free(p->funcs);
	for (uint32_t i = 0; i < p->nthreads; i++) {
		free(p->threads[i].stack);
		free(p->threads[i].active);
		free(p->threads[i].name);
		free(p->threads[i].lines);
		if (p->threads[i].mem) {
			free(p->threads[i].mem->acc);
			free(p->threads[i].mem->node);
			free(p->threads[i].mem);
		}
	}
	ulma_profile_lines_free(p->lines);
	ulma_profile_memory_free(p->memory);
	free(p->threads);
	memset(p, 0, sizeof(*p));
}

int ulma_profile_add_func(struct ulma_profile *p, uint32_t index, uint8_t kind, const char *name,
			  size_t name_len, const char *file, size_t file_len, uint32_t line)
{
	if (ulma_array_grow((void **)&p->funcs, &p->cap_funcs, index, sizeof(*p->funcs)))
		return -ENOMEM;
	struct ulma_func_row *f = &p->funcs[index];
	char *n = ulma_strndup(name, name_len), *fl = ulma_strndup(file, file_len);
	if (!n || !fl) {
		free(n);
		free(fl);
		return -ENOMEM;
	}
	free(f->name);
	free(f->file);
	f->name = n;
	f->file = fl;
	f->line = line;
	f->kind = kind;
	f->native = ulma_def_is_c(kind) || kind == ULMA_DEF_NATIVE ? 1 : kind == ULMA_DEF_ZONE ? 2 : 0;
	if (index >= p->nfuncs)
		p->nfuncs = index + 1;
	return 0;
}

int ulma_profile_thread_name(struct ulma_profile *p, uint32_t thread, const char *name)
{
	char *n = ulma_strndup(name, strlen(name));
	if (!n)
		return -ENOMEM;
	free(p->threads[thread].name);
	p->threads[thread].name = n;
	return 0;
}

int ulma_profile_add_thread(struct ulma_profile *p, uint32_t index, uint64_t serial, uint32_t pid,
			    uint32_t tid)
{
	if (ulma_array_grow((void **)&p->threads, &p->cap_threads, index, sizeof(*p->threads)))
		return -ENOMEM;
	struct ulma_thread_row *t = &p->threads[index];
	t->top = ULMA_PROFILE_NO_FRAME;
	t->serial = serial;
	t->pid = pid;
	t->tid = tid;
	if (index >= p->nthreads)
		p->nthreads = index + 1;
	return 0;
}

int ulma_profile_grow(struct ulma_thread_row *t, uint32_t func)
{
	if (t->depth == t->cap && ulma_array_grow((void **)&t->stack, &t->cap, t->depth, sizeof(*t->stack)))
		return -ENOMEM;
	if (func >= t->nactive && ulma_array_grow((void **)&t->active, &t->nactive, func, sizeof(*t->active)))
		return -ENOMEM;
	return 0;
}

static uint64_t grown(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

void ulma_profile_total_off(struct ulma_func_row *r, const struct ulma_thread_row *t, const struct ulma_frame *f)
{
	r->total_blocked_ns += grown(t->now.blocked_ns, f->at.blocked_ns);
	r->total_runnable_ns += grown(t->now.runnable_ns, f->at.runnable_ns);
	r->total_gil_ns += grown(t->now.gil_ns, f->at.gil_ns);
	r->total_voluntary += grown(t->now.voluntary, f->at.voluntary);
	r->total_involuntary += grown(t->now.involuntary, f->at.involuntary);
}

void ulma_profile_off(struct ulma_profile *p, uint32_t thread, uint64_t blocked_ns, uint64_t runnable_ns,
		      uint64_t gil_ns, uint32_t voluntary, uint32_t involuntary)
{
	struct ulma_thread_row *t = &p->threads[thread];
	t->now.offs++;
	t->now.blocked_ns += blocked_ns;
	t->now.runnable_ns += runnable_ns;
	t->now.gil_ns += gil_ns;
	t->now.voluntary += voluntary;
	t->now.involuntary += involuntary;
	if (gil_ns)
		p->has_gil = 1;
	if (t->depth == 0)
		return; /* between frames: the thread's, no function's */
	struct ulma_func_row *r = &p->funcs[t->top];
	r->self_blocked_ns += blocked_ns;
	r->self_runnable_ns += runnable_ns;
	r->self_gil_ns += gil_ns;
	r->voluntary += voluntary;
	r->involuntary += involuntary;
	t->self_blocked_ns += blocked_ns;
	t->self_runnable_ns += runnable_ns;
	t->self_gil_ns += gil_ns;
}

void ulma_profile_lost(struct ulma_profile *p, uint32_t thread, uint64_t ticks, uint64_t count)
{
	struct ulma_thread_row *t = &p->threads[thread];
	ulma_profile_charge(p, t, ticks);
	if (t->depth) /* the charge counted an event that was not one */
		p->funcs[t->top].self_events--;
	t->lost += count;
	p->lost += count;
}

void ulma_profile_sample(struct ulma_profile *p, uint32_t thread, uint64_t cpu_ns, int gil_known)
{
	struct ulma_thread_row *t = &p->threads[thread];
	if (p->split == ULMA_PROFILE_SPLIT_NONE)
		p->split = ULMA_PROFILE_SPLIT_SCHEDSTAT;
	if (gil_known)
		p->has_gil = 1;
	if (!t->sampled) {
		t->sampled = 1;
		t->sample_cpu0 = cpu_ns;
	}
	if (cpu_ns > t->sample_cpu1)
		t->sample_cpu1 = cpu_ns;
}

void ulma_profile_finish(struct ulma_profile *p, uint64_t ticks)
{
	for (uint32_t i = 0; i < p->nthreads; i++) {
		struct ulma_thread_row *t = &p->threads[i];
		if (!t->depth)
			continue;
		uint64_t end = ticks > t->last_ticks ? ticks : t->last_ticks;
		ulma_profile_charge(p, t, end);
		p->funcs[t->top].self_events--; /* no event: the frames end with the session */
		while (t->depth)
			ulma_profile_pop(p, t);
	}
}

uint64_t ulma_profile_events(const struct ulma_profile *p)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < p->nthreads; i++)
		n += p->threads[i].events;
	return n;
}

void ulma_profile_span(const struct ulma_profile *p, uint64_t *first, uint64_t *last)
{
	int any = 0;
	*first = *last = 0;
	for (uint32_t i = 0; i < p->nthreads; i++) {
		const struct ulma_thread_row *t = &p->threads[i];
		if (!t->seen)
			continue;
		if (!any || t->first_ticks < *first)
			*first = t->first_ticks;
		if (t->last_ticks > *last)
			*last = t->last_ticks;
		any = 1;
	}
}

static const struct ulma_profile *sort_profile;
static const uint64_t *sort_keys;

static int by_key_desc(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	const struct ulma_func_row *x = &sort_profile->funcs[i], *y = &sort_profile->funcs[j];
	if (sort_keys[i] != sort_keys[j])
		return sort_keys[i] < sort_keys[j] ? 1 : -1;
	if (x->calls != y->calls)
		return x->calls < y->calls ? 1 : -1;
	return i < j ? -1 : 1;
}

uint32_t *ulma_profile_sorted_by_key(const struct ulma_profile *p, const uint64_t *key)
{
	uint32_t *idx = malloc((p->nfuncs ? p->nfuncs : 1) * sizeof(*idx));
	if (!idx)
		return NULL;
	for (uint32_t i = 0; i < p->nfuncs; i++)
		idx[i] = i;
	sort_profile = p;
	sort_keys = key;
	qsort(idx, p->nfuncs, sizeof(*idx), by_key_desc);
	sort_profile = NULL;
	sort_keys = NULL;
	return idx;
}
