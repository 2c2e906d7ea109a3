/* profile.c - shadow stacks and per-function totals (see profile.h). */
#include "profile.h"

#include "../core/array.h"

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
	}
	free(p->funcs);
	for (uint32_t i = 0; i < p->nthreads; i++) {
		free(p->threads[i].stack);
		free(p->threads[i].active);
	}
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
	if (index >= p->nfuncs)
		p->nfuncs = index + 1;
	return 0;
}

int ulma_profile_add_thread(struct ulma_profile *p, uint32_t index, uint64_t serial, uint32_t pid,
			    uint32_t tid)
{
	if (ulma_array_grow((void **)&p->threads, &p->cap_threads, index, sizeof(*p->threads)))
		return -ENOMEM;
	struct ulma_thread_row *t = &p->threads[index];
	t->serial = serial;
	t->pid = pid;
	t->tid = tid;
	if (index >= p->nthreads)
		p->nthreads = index + 1;
	return 0;
}

static void touch(struct ulma_profile *p, struct ulma_thread_row *t, uint64_t ticks)
{
	if (!t->seen) {
		t->seen = 1;
		t->first_ticks = ticks;
	}
	if (ticks > t->last_ticks)
		t->last_ticks = ticks;
	if (p->events == 0 || ticks < p->first_ticks)
		p->first_ticks = ticks;
	if (ticks > p->last_ticks)
		p->last_ticks = ticks;
	t->events++;
	p->events++;
}

int ulma_profile_enter(struct ulma_profile *p, uint32_t thread, uint32_t func, uint64_t ticks)
{
	struct ulma_thread_row *t = &p->threads[thread];
	struct ulma_sched_clocks at = {t->last_cpu, t->last_wait, t->last_gil};
	return ulma_profile_enter_at(p, thread, func, ticks, &at);
}

int ulma_profile_enter_at(struct ulma_profile *p, uint32_t thread, uint32_t func, uint64_t ticks,
			  const struct ulma_sched_clocks *at)
{
	struct ulma_thread_row *t = &p->threads[thread];
	if (t->depth == t->cap && ulma_array_grow((void **)&t->stack, &t->cap, t->depth, sizeof(*t->stack)))
		return -ENOMEM;
	if (func >= t->nactive && ulma_array_grow((void **)&t->active, &t->nactive, func, sizeof(*t->active)))
		return -ENOMEM;
	touch(p, t, ticks);
	t->last_cpu = at->cpu_ns;
	t->last_wait = at->wait_ns;
	t->last_gil = at->gil_ns;
	t->stack[t->depth++] = (struct ulma_frame){.func = func,
						   .start = ticks,
						   .cpu0 = at->cpu_ns,
						   .wait0 = at->wait_ns,
						   .gil0 = at->gil_ns};
	t->active[func]++;
	p->funcs[func].calls++;
	return 0;
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static void pop(struct ulma_profile *p, struct ulma_thread_row *t, uint64_t ticks,
		const struct ulma_sched_clocks *at)
{
	struct ulma_frame *f = &t->stack[--t->depth];
	uint64_t elapsed = sub0(ticks, f->start), self = sub0(elapsed, f->child);
	uint64_t ecpu = sub0(at->cpu_ns, f->cpu0), scpu = sub0(ecpu, f->child_cpu);
	uint64_t ewait = sub0(at->wait_ns, f->wait0), swait = sub0(ewait, f->child_wait);
	uint64_t egil = sub0(at->gil_ns, f->gil0), sgil = sub0(egil, f->child_gil);
	struct ulma_func_row *row = &p->funcs[f->func];
	row->self_ticks += self;
	row->self_cpu_ns += scpu;
	row->self_wait_ns += swait;
	row->self_gil_ns += sgil;
	row->self_events += 1 + f->child_calls;
	t->self_ticks += self;
	t->cpu_ns += scpu;
	t->wait_ns += swait;
	t->gil_ns += sgil;
	if (--t->active[f->func] == 0) {
		row->total_ticks += elapsed;
		row->total_cpu_ns += ecpu;
		row->total_wait_ns += ewait;
		row->total_gil_ns += egil;
		row->total_events += 1 + 2 * f->descendants;
	}
	if (t->depth) {
		struct ulma_frame *parent = &t->stack[t->depth - 1];
		parent->child += elapsed;
		parent->child_cpu += ecpu;
		parent->child_wait += ewait;
		parent->child_gil += egil;
		parent->child_calls++;
		parent->descendants += 1 + f->descendants;
	}
}

void ulma_profile_exit(struct ulma_profile *p, uint32_t thread, uint64_t ticks)
{
	struct ulma_thread_row *t = &p->threads[thread];
	struct ulma_sched_clocks at = {t->last_cpu, t->last_wait, t->last_gil};
	ulma_profile_exit_at(p, thread, ticks, &at);
}

void ulma_profile_exit_at(struct ulma_profile *p, uint32_t thread, uint64_t ticks,
			  const struct ulma_sched_clocks *at)
{
	struct ulma_thread_row *t = &p->threads[thread];
	if (t->depth == 0)
		return;
	touch(p, t, ticks);
	t->last_cpu = at->cpu_ns;
	t->last_wait = at->wait_ns;
	t->last_gil = at->gil_ns;
	pop(p, t, ticks, at);
}

void ulma_profile_lost(struct ulma_profile *p, uint32_t thread, uint64_t ticks, uint64_t count)
{
	struct ulma_thread_row *t = &p->threads[thread];
	touch(p, t, ticks);
	t->lost += count;
	p->lost += count;
}

void ulma_profile_sample(struct ulma_profile *p, uint32_t thread, uint64_t cpu_ns, int gil_known)
{
	struct ulma_thread_row *t = &p->threads[thread];
	p->has_sched = 1;
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
		struct ulma_sched_clocks last = {t->last_cpu, t->last_wait, t->last_gil};
		while (t->depth)
			pop(p, t, end, &last);
		t->last_ticks = end;
		if (end > p->last_ticks)
			p->last_ticks = end;
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
