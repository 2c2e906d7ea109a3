/* fuzz_trace_reader.c - libFuzzer target for the trace reader.
 *
 * Each input is decoded twice: as given, and with every whole chunk's
 * CRC-32C recomputed, so that mutations get past the checksum and reach the
 * chunk parsers.  A visitor exercises every callback and feeds a
 * struct ulma_profile the way `ulma report` does.  Besides the sanitizers,
 * the harness aborts when the reader breaks its own contract: dense indices
 * out of order, an event naming an unknown thread or function, a result
 * other than 0 / -EPROTO, -EPROTO without a reason, or a status that
 * disagrees with what was visited. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/overhead.h"
#include "analysis/profile.h"
#include "analysis/profile_memory.h"
#include "analysis/profile_lines.h"
#include "analysis/schedline.h"
#include "core/trace_reader.h"
#include "ulma/trace_format.h"
#include "fix_checksums.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_ctx {
	struct ulma_profile prof;
	struct ulma_schedline sched; /* all samples of the latest sampled thread */
	uint32_t sched_thread;
	uint32_t nfuncs;
	uint32_t nthreads;
	uint64_t events;
	uint64_t last_ticks;
	int metas;
	int ends;
};

#define REQUIRE(cond)                                                                              \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_trace_reader: contract broken: %s (line %d)\n", #cond, \
				__LINE__);                                                         \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static int on_meta(void *c, const struct ulma_trace_meta *m)
{
	struct fuzz_ctx *x = c;
	REQUIRE(x->metas == 0 && x->nfuncs == 0 && x->nthreads == 0 && x->events == 0);
	REQUIRE(m->command != NULL);
	(void)strlen(m->command);
	x->metas++;
	return 0;
}

static int on_func(void *c, const struct ulma_trace_func *f)
{
	struct fuzz_ctx *x = c;
	REQUIRE(x->metas == 1 && x->ends == 0);
	REQUIRE(f->index == x->nfuncs);
	REQUIRE(f->id != 0);
	REQUIRE(f->name != NULL || f->name_len == 0);
	REQUIRE(f->file != NULL);
	x->nfuncs++;
	return ulma_profile_add_func(&x->prof, f->index, f->kind, f->name ? f->name : "", f->name_len, f->file,
				     f->file_len, f->line) ? -ENOMEM : 0;
}

static int on_sched(void *c, uint32_t thread, const struct ulma_trace_sched *s)
{
	struct fuzz_ctx *x = c;
	REQUIRE(x->metas == 1 && thread < x->nthreads);
	if (thread != x->sched_thread) {
		ulma_schedline_free(&x->sched);
		x->sched_thread = thread;
	}
	REQUIRE(s->gil_known || s->gil_ns == 0);
	if (ulma_schedline_add(&x->sched, s))
		return -ENOMEM;
	struct ulma_sched_clocks at;
	ulma_schedline_at(&x->sched, s->ticks, &at);
	REQUIRE((at.cpu_ns <= s->cpu_ns && at.gil_ns <= s->gil_ns) ||
		ulma_schedline_last_ticks(&x->sched) != s->ticks);
	return 0;
}

static int on_thread(void *c, const struct ulma_trace_thread *t)
{
	struct fuzz_ctx *x = c;
	REQUIRE(x->metas == 1 && x->ends == 0);
	REQUIRE(t->index == x->nthreads);
	x->nthreads++;
	return ulma_profile_add_thread(&x->prof, t->index, t->serial, t->pid, t->tid) ? -ENOMEM : 0;
}

static int on_event(void *c, const struct ulma_trace_event *e)
{
	struct fuzz_ctx *x = c;
	REQUIRE(x->metas == 1 && x->ends == 0);
	REQUIRE(e->thread < x->nthreads);
	if (e->kind == ULMA_EV_OFF) { /* not an event: the reader does not count it */
		REQUIRE(e->off < ULMA_OFF_STATES);
		ulma_profile_off(&x->prof, e->thread, e->off == ULMA_OFF_RUNNABLE ? 0 : e->count,
				 e->off == ULMA_OFF_RUNNABLE ? e->count : 0, e->off == ULMA_OFF_GIL ? e->count : 0, 1, 0);
		return 0;
	}
	x->events++;
	if (e->ticks > x->last_ticks)
		x->last_ticks = e->ticks;
	switch (e->kind) {
	case ULMA_EV_ENTER:
		REQUIRE(e->func < x->nfuncs);
		return ulma_profile_enter(&x->prof, e->thread, e->func, e->ticks) ? -ENOMEM : 0;
	case ULMA_EV_EXIT:
		REQUIRE(e->func < x->nfuncs);
		REQUIRE(x->prof.threads[e->thread].depth > 0);
		REQUIRE(x->prof.threads[e->thread].stack[x->prof.threads[e->thread].depth - 1].func == e->func);
		ulma_profile_exit(&x->prof, e->thread, e->ticks);
		return 0;
	case ULMA_EV_LOST:
		ulma_profile_lost(&x->prof, e->thread, e->ticks, e->count);
		return 0;
	case ULMA_EV_LINE:
		REQUIRE(e->count <= UINT32_MAX && x->prof.threads[e->thread].depth > 0);
		REQUIRE(x->prof.threads[e->thread].stack[x->prof.threads[e->thread].depth - 1].func == e->func);
		return ulma_profile_line(&x->prof, e->thread, e->ticks, (uint32_t)e->count, !e->resumed) ? -ENOMEM : 0;
	default:
		REQUIRE(e->kind == ULMA_EV_ENTER || e->kind == ULMA_EV_EXIT || e->kind == ULMA_EV_LOST ||
			e->kind == ULMA_EV_OFF || e->kind == ULMA_EV_LINE);
		return 0;
	}
}

static int on_end(void *c, const struct ulma_trace_end *e)
{
	struct fuzz_ctx *x = c;
	REQUIRE(x->metas == 1 && x->ends == 0);
	(void)e;
	x->ends++;
	return 0;
}

static int on_process(void *c, const struct ulma_trace_process *p)
{
	struct fuzz_ctx *x = c;
	REQUIRE(x->metas == 1 && x->ends == 0);
	REQUIRE(p->pid != 0 && p->name_len <= ULMA_TRACE_MAX_NAME);
	volatile char sink = 0;
	for (size_t i = 0; i < p->name_len; i++) /* the bytes are readable (ASan checks) */
		sink ^= p->name[i];
	(void)sink;
	return 0;
}

static int on_mark(void *c, const struct ulma_trace_mark *m)
{
	struct fuzz_ctx *x = c;
	REQUIRE(x->metas == 1 && x->ends == 0);
	REQUIRE(m->thread < x->nthreads && m->name < x->nfuncs);
	REQUIRE(m->kind == ULMA_EXT_INSTANT || m->kind == ULMA_EXT_COUNTER || m->kind == ULMA_EXT_THREAD_NAME);
	return 0;
}

static int on_source(void *c, const struct ulma_trace_source *src)
{
	struct fuzz_ctx *x = c;
	REQUIRE(x->metas == 1 && x->ends == 0);
	REQUIRE((src->flags & ~(unsigned)(ULMA_SOURCE_CHANGED | ULMA_SOURCE_CUT)) == 0);
	return ulma_profile_add_source(&x->prof, src->path, src->path_len, src->text, src->text_len, src->flags);
}

/* An allocation or a free goes to the profile's memory half, which must
 * take any order, any address and any size. */
static int on_memory(void *c, const struct ulma_trace_memory *m)
{
	struct fuzz_ctx *x = c;
	REQUIRE(x->metas == 1 && x->ends == 0);
	REQUIRE(m->thread < x->nthreads);
	REQUIRE(m->addr < (UINT64_C(1) << 48));
	REQUIRE(m->kind == ULMA_EXT_ALLOC || (m->kind == ULMA_EXT_FREE && m->size == 0));
	if (ulma_profile_memory_enable(&x->prof) < 0)
		return -ENOMEM;
	if (m->kind == ULMA_EXT_ALLOC)
		return ulma_profile_mem_alloc(&x->prof, m->thread, m->addr, m->size, m->domain, m->ticks) ? -ENOMEM : 0;
	return ulma_profile_mem_free(&x->prof, m->thread, m->addr, m->ticks) ? -ENOMEM : 0;
}

/* An object goes to the profile's objects, any type index the reader gave. */
static int on_object(void *c, const struct ulma_trace_object *o)
{
	struct fuzz_ctx *x = c;
	REQUIRE(x->metas == 1 && x->ends == 0);
	REQUIRE(o->thread < x->nthreads);
	REQUIRE(o->kind == ULMA_EXT_OBJ_NEW || o->kind == ULMA_EXT_OBJ_FREE);
	if (ulma_profile_memory_enable(&x->prof) < 0)
		return -ENOMEM;
	return ulma_profile_object(&x->prof, o->thread, o->type, o->kind == ULMA_EXT_OBJ_NEW) ? -ENOMEM : 0;
}

/* An MPI event: in order, of a known thread, with what the reader checks. */
static int on_mpi(void *ctx, const struct ulma_trace_mpi *m)
{
	struct fuzz_ctx *x = ctx;
	REQUIRE(x->metas == 1 && x->ends == 0);
	REQUIRE(m->thread < x->nthreads);
	REQUIRE(m->op != 0 && m->nargs <= ULMA_MPI_ARGS_MAX);
	for (unsigned k = m->nargs; k < ULMA_MPI_ARGS_MAX; k++)
		REQUIRE(m->args[k] == 0);
	return 0;
}

static int on_mpi_rank(void *ctx, const struct ulma_trace_rank *r)
{
	struct fuzz_ctx *x = ctx;
	REQUIRE(x->metas == 1);
	REQUIRE(r->rank < r->size && r->host_len <= ULMA_TRACE_MAX_NAME);
	volatile char sink = r->host_len ? r->host[r->host_len - 1] : 0; /* the bytes are there */
	(void)sink;
	return 0;
}

static void read_once(const uint8_t *data, size_t size)
{
	struct fuzz_ctx x;
	struct ulma_trace_status st;
	struct ulma_trace_visitor v = {&x, on_meta, on_func, on_thread, on_event, on_end, on_sched, on_process, NULL, NULL,
				       on_mark, on_source, on_memory, on_object, on_mpi, on_mpi_rank, NULL};
	memset(&x, 0, sizeof(x));
	ulma_profile_init(&x.prof);
	/* fmemopen refuses a zero size: an empty input reads from /dev/null */
	FILE *f = size ? fmemopen((void *)data, size, "rb") : fopen("/dev/null", "rb");
	if (!f) {
		ulma_profile_free(&x.prof);
		ulma_schedline_free(&x.sched);
		return;
	}
	int rc = ulma_trace_read(f, &v, &st);
	fclose(f);

	REQUIRE(rc == 0 || rc == -EPROTO || rc == -ENOMEM);
	if (rc == -EPROTO)
		REQUIRE(st.error[0] != 0 && memchr(st.error, 0, sizeof(st.error)) != NULL);
	if (rc == 0) {
		REQUIRE(x.metas == 1);
		REQUIRE(st.bytes >= ULMA_TRACE_FILE_HEADER && st.bytes <= size);
		REQUIRE(st.events == x.events);
		REQUIRE(st.last_ticks == x.last_ticks);
		REQUIRE(st.complete == (x.ends == 1));
	}
	ulma_profile_finish(&x.prof, x.last_ticks);
	for (uint32_t i = 0; i < x.prof.nthreads; i++)
		REQUIRE(x.prof.threads[i].depth == 0);
	uint64_t *key = calloc(x.prof.nfuncs ? x.prof.nfuncs : 1, sizeof(*key));
	if (key) {
		for (uint32_t i = 0; i < x.prof.nfuncs; i++) {
			const struct ulma_func_row *row = &x.prof.funcs[i];
			struct ulma_time_split split;
			uint64_t off = row->self_blocked_ns + row->self_runnable_ns;
			ulma_overhead_split(row->self_ticks, row->self_ticks > off ? row->self_ticks - off : 0,
					    row->self_runnable_ns, row->self_gil_ns,
					    ulma_overhead_cost(row->self_events, (double)(st.overhead_ps % 100000) / 1000.0),
					    &split);
			REQUIRE(split.on_cpu_ns + split.runnable_ns + split.blocked_ns == split.wall_ns);
			REQUIRE(split.gil_ns <= split.blocked_ns);
			key[i] = split.wall_ns;
		}
		free(ulma_profile_sorted_by_key(&x.prof, key));
		free(key);
	}
	ulma_profile_free(&x.prof);
	ulma_schedline_free(&x.sched);
}

/* A copy of the input with every complete chunk's checksum made right. */
static uint8_t *fix_checksums(const uint8_t *data, size_t size)
{
	uint8_t *d = malloc(size ? size : 1);
	if (!d)
		return NULL;
	memcpy(d, data, size);
	ulma_fuzz_fix_checksums(d, size);
	return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	read_once(data, size);
	uint8_t *fixed = fix_checksums(data, size);
	if (fixed) {
		if (size > ULMA_TRACE_FILE_HEADER && memcmp(fixed, data, size) != 0)
			read_once(fixed, size);
		free(fixed);
	}
	return 0;
}
