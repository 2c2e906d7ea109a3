/* merge_write.c - the last pass of `ulma merge` (merge.h): each rank's
 * trace read again beside its spill of the replay's results, its events
 * on the merged clock written into the one output trace, rank after rank.  Functions equal in kind, name, file and
 * line are one function of the output, whichever rank defined them.
 */
#include "merge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/array.h"
#include "../core/idmap.h"
#include "../core/trace_reader.h"
#include "commands.h"
#include "ulma/shm.h"

/* What the output holds so far, across ranks. */
struct output {
	struct ulma_trace_writer *w;
	struct ulma_idmap funcs; /* hash of (kind, line, name, file) -> merged id */
	struct ulma_idmap files; /* hash of path -> merged file id */
	uint32_t nfuncs, nfiles;
	uint64_t next_serial;
	uint64_t moved;  /* events the logical pass moved */
	int64_t max_move;
	const struct merge_rank *overhead_rank; /* whose hook costs the output carries: the first rank with one */
};

/* A reader of a spill's records (merge.h) from the front: each reader
 * its own position, so each thread of a rank reads the shifts at its pace. */
struct spill_cursor {
	FILE *f;  /* NULL: an empty spill */
	off_t pos;
	int64_t rec[64][2];
	unsigned n, i;
	int err;
};

/* The next record, not consumed; NULL at the end (or on a read error, kept in err). */
static const int64_t *spill_peek(struct spill_cursor *c)
{
	if (c->i < c->n)
		return c->rec[c->i];
	if (!c->f)
		return NULL;
	ssize_t got = pread(fileno(c->f), c->rec, sizeof(c->rec), c->pos);
	if (got < 0) {
		c->err = -errno;
		return NULL;
	}
	c->pos += got;
	c->n = (unsigned)((size_t)got / sizeof(c->rec[0]));
	c->i = 0;
	return c->n ? c->rec[0] : NULL;
}

/* The shift of an event at ns (pass-1 clock): ns must not decrease per cursor. */
static int64_t spill_shift_at(struct spill_cursor *c, int64_t *shift, int64_t ns)
{
	const int64_t *r;
	while ((r = spill_peek(c)) && r[0] <= ns) {
		*shift = r[1];
		c->i++;
	}
	return *shift;
}

/* One rank's last pass. */
struct pass2 {
	struct output *o;
	struct merge_rank *r;
	const struct ulma_merge_replay *replay;
	uint32_t *func;   /* dense index -> merged id */
	uint32_t nfunc;
	struct thread2 {
		struct ulma_trace_stream *stream;
		struct spill_cursor shifts;
		int64_t shift;
	} *threads;
	uint32_t nthreads;
	struct ulma_merge_numbering *numbering;
	struct spill_cursor unmatched_recvs;
	uint64_t nmpi; /* MPI events delivered so far */
	int error;
};

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * UINT64_C(0x100000001b3);
	return h;
}

static int file_id(struct output *o, const char *path, size_t len, uint32_t *out)
{
	uint64_t k = hash_bytes(UINT64_C(0xcbf29ce484222325), path, len) | 1;
	if (ulma_idmap_get(&o->files, k, out))
		return 0;
	uint32_t id = ++o->nfiles;
	int err = ulma_trace_define_file(o->w, id, path, len);
	if (!err)
		err = ulma_idmap_put(&o->files, k, id);
	*out = id;
	return err;
}

static int p2_func(void *ctx, const struct ulma_trace_func *f)
{
	struct pass2 *p = ctx;
	struct output *o = p->o;
	uint64_t k = UINT64_C(0xcbf29ce484222325);
	k = hash_bytes(k, &f->kind, sizeof(f->kind));
	k = hash_bytes(k, &f->line, sizeof(f->line));
	k = hash_bytes(k, f->name, f->name_len);
	k = hash_bytes(k, "\0", 1);
	k = hash_bytes(k, f->file, f->file_len);
	k |= 1;
	if (ulma_array_grow((void **)&p->func, &p->nfunc, f->index, sizeof(*p->func)) < 0)
		return -ENOMEM;
	uint32_t id;
	if (ulma_idmap_get(&o->funcs, k, &id)) {
		p->func[f->index] = id;
		return 0;
	}
	uint32_t fid;
	int err = file_id(o, f->file, f->file_len, &fid);
	if (err)
		return err;
	id = ++o->nfuncs;
	if ((err = ulma_trace_define_func(o->w, id, f->kind, fid, f->line, f->name, f->name_len)) ||
	    (err = ulma_idmap_put(&o->funcs, k, id)))
		return err;
	p->func[f->index] = id;
	return 0;
}

static int p2_source(void *ctx, const struct ulma_trace_source *s)
{
	struct pass2 *p = ctx;
	uint32_t fid;
	int err = file_id(p->o, s->path, s->path_len, &fid);
	return err ? err : ulma_trace_define_source(p->o->w, fid, s->flags, s->text, s->text_len);
}

static uint32_t merged_pid(const struct merge_rank *r, uint32_t pid)
{
	return r->merged_pid_base ? r->merged_pid_base | (pid & ((1u << 22) - 1)) : pid;
}

static int p2_thread(void *ctx, const struct ulma_trace_thread *t)
{
	struct pass2 *p = ctx;
	if (ulma_array_grow((void **)&p->threads, &p->nthreads, t->index, sizeof(*p->threads)) < 0)
		return -ENOMEM;
	p->threads[t->index].shifts.f = p->r->shifts;
	return ulma_trace_stream_open(p->o->w, p->o->next_serial++, merged_pid(p->r, t->pid), t->tid,
				      &p->threads[t->index].stream);
}

static int p2_process(void *ctx, const struct ulma_trace_process *proc)
{
	struct pass2 *p = ctx;
	char name[ULMA_TRACE_MAX_NAME];
	int n = snprintf(name, sizeof(name), "rank %u: %.*s", p->r->rank, (int)proc->name_len, proc->name);
	if (n < 0)
		return 0;
	/* a parent in the rank's own trace keeps pointing at it; one outside
	 * it (the launcher) points at nothing the merged trace has */
	return ulma_trace_process(p->o->w, merged_pid(p->r, proc->pid), proc->ppid ? merged_pid(p->r, proc->ppid) : 0,
				  name, (size_t)n < sizeof(name) ? (size_t)n : sizeof(name) - 1);
}

static int p2_overhead(void *ctx, uint64_t ps)
{
	struct pass2 *p = ctx;
	/* the first rank's figures, each (the program measures again at its stop, and a
	 * reader keeps the last): one cost for every rank, as before */
	if (p->o->overhead_rank && p->o->overhead_rank != p->r)
		return 0;
	p->o->overhead_rank = p->r;
	return ulma_trace_overhead(p->o->w, ps);
}

/* The output time of one of the rank's ticks on thread t. */
static inline uint64_t out_ticks(struct pass2 *p, struct thread2 *t, uint64_t ticks)
{
	int64_t ns = merge_rank_ns(p->r, ticks);
	int64_t s = spill_shift_at(&t->shifts, &t->shift, ns);
	if (s) {
		p->o->moved++;
		if (s > p->o->max_move)
			p->o->max_move = s;
	}
	ns += s;
	return ns > 0 ? (uint64_t)ns : 0;
}

static int p2_events(void *ctx, uint32_t thread, const struct ulma_trace_event *ev, size_t n)
{
	struct pass2 *p = ctx;
	struct thread2 *t = &p->threads[thread];
	struct ulma_trace_stream *s = t->stream;
	for (size_t i = 0; i < n; i++) {
		const struct ulma_trace_event *e = &ev[i];
		uint64_t at = out_ticks(p, t, e->ticks);
		switch (e->kind) {
		case ULMA_EV_ENTER: {
			struct ulma_trace_cursor c;
			ulma_trace_cursor_get(s, &c);
			ulma_trace_cursor_enter(s, &c, at, e->cpu, p->func[e->func], false);
			ulma_trace_cursor_put(s, &c);
			break;
		}
		case ULMA_EV_EXIT: {
			struct ulma_trace_cursor c;
			ulma_trace_cursor_get(s, &c);
			ulma_trace_cursor_exit(s, &c, at, e->cpu);
			ulma_trace_cursor_put(s, &c);
			break;
		}
		case ULMA_EV_LOST:
			ulma_trace_lost(s, at, e->count);
			break;
		case ULMA_EV_OFF:
			ulma_trace_off(s, at, e->cpu, e->off, e->count);
			break;
		case ULMA_EV_LINE:
			ulma_trace_line(s, at, (uint32_t)e->count, e->resumed);
			break;
		default:
			break;
		}
	}
	return 0;
}

static int p2_mark(void *ctx, const struct ulma_trace_mark *m)
{
	struct pass2 *p = ctx;
	struct thread2 *t = &p->threads[m->thread];
	ulma_trace_mark(t->stream, out_ticks(p, t, m->ticks), m->kind, p->func[m->name], m->value);
	return 0;
}

static int p2_memory(void *ctx, const struct ulma_trace_memory *m)
{
	struct pass2 *p = ctx;
	struct thread2 *t = &p->threads[m->thread];
	uint64_t at = out_ticks(p, t, m->ticks);
	if (m->kind == ULMA_EXT_ALLOC)
		ulma_trace_alloc(t->stream, at, m->addr, m->size, m->domain);
	else
		ulma_trace_free(t->stream, at, m->addr);
	return 0;
}

static int p2_mpi(void *ctx, const struct ulma_trace_mpi *m)
{
	struct pass2 *p = ctx;
	struct thread2 *t = &p->threads[m->thread];
	uint64_t index = p->nmpi++;
	const int64_t *unmatched = spill_peek(&p->unmatched_recvs);
	bool recv_matched = true;
	if (unmatched && (uint64_t)unmatched[0] == index) {
		recv_matched = false;
		p->unmatched_recvs.i++;
	}
	uint64_t seq;
	if (ulma_merge_number(p->numbering, p->replay, p->r->rank, m->op, m->nargs, m->args, recv_matched, &seq) < 0)
		return -ENOMEM;
	uint64_t args[ULMA_MPI_ARGS_MAX];
	unsigned n = m->nargs;
	memcpy(args, m->args, sizeof(args));
	if ((m->op == ULMA_MPI_SEND || m->op == ULMA_MPI_RECV) && n == 4) /* its message's number */
		args[n++] = seq == ULMA_MERGE_NO_SEQ ? ULMA_MPI_SEQ_NONE : seq;
	ulma_trace_mpi(t->stream, out_ticks(p, t, m->ticks), m->op, args, n);
	return 0;
}

/* Rank r's events into the output.  Returns 0 or -1 after saying why. */
static int copy_rank(struct output *o, struct merge_rank *r, const struct ulma_merge_replay *replay,
		     struct ulma_merge_numbering *numbering)
{
	struct pass2 p = {.o = o, .r = r, .replay = replay, .numbering = numbering};
	p.unmatched_recvs.f = r->unmatched_recvs;
	struct ulma_trace_visitor v = {.ctx = &p,
				       .on_func = p2_func,
				       .on_thread = p2_thread,
				       .on_events = p2_events,
				       .on_mark = p2_mark,
				       .on_memory = p2_memory,
				       .on_mpi = p2_mpi,
				       .on_source = p2_source,
				       .on_process = p2_process,
				       .on_overhead = p2_overhead};
	struct ulma_trace_status st;
	int err = ulma_trace_read_path(r->path, &v, &st);
	for (uint32_t i = 0; i < p.nthreads && !err; i++)
		err = p.threads[i].shifts.err;
	if (!err)
		err = p.unmatched_recvs.err;
	free(p.func);
	free(p.threads);
	if (err == -EPROTO) {
		ulma_die_msg("%s: %s", r->path, st.error[0] ? st.error : "changed while it was merged");
		return -1;
	}
	if (err) {
		ulma_die_msg("cannot merge %s: %s", r->path, strerror(-err));
		return -1;
	}
	return 0;
}

int ulma_merge_write(struct merge_rank *ranks, uint32_t n, const char *dir, const char *out,
		     const struct ulma_merge_replay *replay, const struct ulma_merge_order_stats *order)
{
	/* the output's clock: rank 0's ns, from the earliest start to the latest end */
	uint64_t start = UINT64_MAX, endns = 0, events = 0, lost = 0, resynced = 0, refused = 0, monitor_cpu = 0;
	uint32_t failures = 0, flags = 0;
	int32_t status = 0;
	int64_t max_offset = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct merge_rank *r = &ranks[i];
		int64_t s = merge_rank_ns(r, r->start_ticks);
		uint64_t last = r->complete ? r->end.end_ticks : r->start_ticks;
		int64_t e = merge_rank_ns(r, last);
		e += r->last_shift;
		if (s > 0 && (uint64_t)s < start)
			start = (uint64_t)s;
		if (e > 0 && (uint64_t)e > endns)
			endns = (uint64_t)e;
		events += r->events;
		lost += r->end.lost;
		resynced += r->end.resynced;
		refused += r->end.refused;
		monitor_cpu += r->end.monitor_cpu_ns;
		failures |= r->end.failures;
		flags |= r->meta_flags & (ULMA_META_MEMORY | ULMA_META_NO_C_CALLS);
		if (!status && r->complete)
			status = r->end.exit_status;
		int64_t off[2] = {r->off0, r->off1};
		for (int k = 0; k < 2; k++)
			if ((off[k] < 0 ? -off[k] : off[k]) > max_offset)
				max_offset = off[k] < 0 ? -off[k] : off[k];
	}
	if (start == UINT64_MAX)
		start = 0;
	char command[4200];
	snprintf(command, sizeof(command), "ulma merge %s (%u ranks)", dir, n);
	struct ulma_trace_meta meta = {.flags = flags, .pid = merged_pid(&ranks[0], ranks[0].pid),
				       .start_ticks = start, .start_ns = start, .tick_hz = 1000000000,
				       .command = command};
	struct output o = {0};
	int err = ulma_trace_writer_open(out, &meta, &o.w);
	if (err) {
		ulma_die_msg("cannot write the merged trace to '%s': %s", out, strerror(-err));
		return err;
	}
	for (uint32_t i = 0; i < n && !err; i++) {
		struct merge_rank *r = &ranks[i];
		struct ulma_trace_rank rk = {.pid = merged_pid(r, r->pid), .rank = r->rank, .size = r->size,
					     .host = r->host, .host_len = strlen(r->host), .merged = true,
					     .events = r->events, .mpi_ns = r->mpi_ns, .offset_init_ns = r->off0,
					     .offset_final_ns = r->off1, .unmatched = r->unmatched};
		err = ulma_trace_mpi_rank(o.w, &rk);
	}
	struct ulma_merge_numbering numbering = {0};
	for (uint32_t i = 0; i < n && !err; i++)
		if (copy_rank(&o, &ranks[i], replay, &numbering) < 0)
			err = -EPROTO;
	ulma_merge_numbering_free(&numbering);
	struct ulma_trace_merge mg = {.ranks = n, .moved = o.moved, .max_move_ns = (uint64_t)order->max_shift_ns,
				      .max_offset_ns = (uint64_t)max_offset, .messages = order->messages,
				      .unmatched = order->unmatched, .moves = order->moves};
	if (!err)
		err = ulma_trace_mpi_merge(o.w, &mg);
	struct ulma_trace_end end = {.end_ticks = endns > start ? endns : start, .end_ns = endns > start ? endns : start,
				     .events = events, .lost = lost, .failures = failures, .exit_status = status,
				     .split = ULMA_SPLIT_NONE, .monitor_cpu_ns = monitor_cpu, .resynced = resynced,
				     .refused = refused};
	if (err) {
		ulma_trace_writer_abandon(o.w);
	} else if ((err = ulma_trace_writer_close(o.w, &end))) {
		ulma_die_msg("error writing the merged trace '%s': %s", out, strerror(-err));
	}
	ulma_idmap_free(&o.funcs);
	ulma_idmap_free(&o.files);
	if (!err)
		fprintf(stderr,
			"ulma: merged %u ranks into %s: %llu messages matched, %llu unmatched; clocks %.3f ms apart "
			"at most; the logical-clock pass moved %llu events (%llu moves, the largest %.3f ms)\n",
			n, out, (unsigned long long)order->messages, (unsigned long long)order->unmatched,
			(double)max_offset / 1e6, (unsigned long long)o.moved, (unsigned long long)order->moves,
			(double)order->max_shift_ns / 1e6);
	return err;
}
