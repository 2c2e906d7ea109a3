/* merge.c - `ulma merge`: find the ranks' traces, read each once for its
 * totals and clock offsets, check that they are one run's, align the
 * clocks, replay the MPI events of all side by side into each rank's
 * spill, and have merge_write.c write the result (merge.h). */
#include "merge.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/array.h"
#include "../core/safe_file.h"
#include "../core/trace_reader.h"
#include "commands.h"
#include "merge_feed.h"
#include "../mpi/mpi_names.h"
#include "ulma/shm.h"

static const char merge_usage[] = "usage: ulma merge DIR -o OUT.trace\n"
				  "  merge the traces of an MPI run's ranks (DIR/rank-NNNN.trace, written by\n"
				  "  `mpirun ... ulma run -o DIR ...`) into one trace: every rank a process, the\n"
				  "  clocks aligned to rank 0's, messages ordered (docs/mpi.md)\n";

/* What the first pass keeps while it reads one trace. */
struct pass1 {
	struct merge_rank *r;
	bool has_rank;
	uint8_t *is_mpi;  /* per function: a frame of libulma_mpi.so's */
	uint32_t nfuncs;
	struct thread1 {
		uint32_t depth;      /* MPI frames open */
		uint64_t since;      /* ticks the outermost opened at */
	} *threads;
	uint32_t nthreads;
	struct { uint64_t ticks; int64_t offset; } clock[2]; /* at init, at finalize */
	unsigned nclock;
	uint64_t mpi_ticks; /* inside MPI frames, every thread */
	int error;
};

static int p1_meta(void *ctx, const struct ulma_trace_meta *m)
{
	struct pass1 *p = ctx;
	p->r->start_ticks = m->start_ticks;
	p->r->start_ns = m->start_ns;
	p->r->meta_flags = m->flags;
	p->r->ns_per_tick = (m->flags & ULMA_META_TSC) && m->tick_hz ? 1e9 / (double)m->tick_hz : 1.0;
	return 0;
}

static int p1_func(void *ctx, const struct ulma_trace_func *f)
{
	struct pass1 *p = ctx;
	if (ulma_array_grow((void **)&p->is_mpi, &p->nfuncs, f->index, 1) < 0)
		return -ENOMEM;
	p->is_mpi[f->index] = f->kind == ULMA_DEF_ZONE && f->file_len == strlen(ULMA_MPI_FILE) &&
			      memcmp(f->file, ULMA_MPI_FILE, f->file_len) == 0;
	return 0;
}

static int p1_thread(void *ctx, const struct ulma_trace_thread *t)
{
	struct pass1 *p = ctx;
	return ulma_array_grow((void **)&p->threads, &p->nthreads, t->index, sizeof(*p->threads));
}

static int p1_events(void *ctx, uint32_t thread, const struct ulma_trace_event *ev, size_t n)
{
	struct pass1 *p = ctx;
	struct thread1 *t = &p->threads[thread];
	const uint8_t *is_mpi = p->is_mpi;
	for (size_t i = 0; i < n; i++) {
		const struct ulma_trace_event *e = &ev[i];
		if (e->kind == ULMA_EV_OFF)
			continue;
		p->r->events++;
		if (e->kind == ULMA_EV_ENTER && is_mpi[e->func]) {
			if (t->depth++ == 0)
				t->since = e->ticks;
		} else if (e->kind == ULMA_EV_EXIT && is_mpi[e->func] && t->depth && --t->depth == 0) {
			p->mpi_ticks += e->ticks - t->since;
		}
	}
	return 0;
}

static int p1_mpi(void *ctx, const struct ulma_trace_mpi *m)
{
	struct pass1 *p = ctx;
	struct merge_rank *r = p->r;
	if (m->op == ULMA_MPI_INIT && m->nargs >= 4) {
		r->run_id = m->args[2] | m->args[3] << 32;
		r->has_init = true;
	} else if (m->op == ULMA_MPI_CLOCK && m->nargs >= 2) {
		unsigned k = p->nclock < 2 ? p->nclock++ : 1; /* the first and the last */
		p->clock[k].ticks = m->ticks;
		int64_t off = ulma_unzigzag(m->args[0] | m->args[1] << 32);
		const int64_t lim = 1000000000000000000; /* as merge_rank_ns bounds times (a corrupt trace's) */
		p->clock[k].offset = off > lim ? lim : off < -lim ? -lim : off;
	}
	return 0;
}

static int p1_rank(void *ctx, const struct ulma_trace_rank *rk)
{
	struct pass1 *p = ctx;
	if (rk->merged) {
		p->error = 1;
		return -EINVAL; /* a merged trace among the ranks' */
	}
	free(p->r->host);
	if (!(p->r->host = ulma_strndup(rk->host, rk->host_len)))
		return -ENOMEM;
	p->r->rank = rk->rank;
	p->r->size = rk->size;
	p->r->pid = rk->pid;
	p->has_rank = true;
	return 0;
}

static int p1_end(void *ctx, const struct ulma_trace_end *e)
{
	struct pass1 *p = ctx;
	p->r->end = *e;
	return 0;
}

/* The rank's clock, to its own ns and to rank 0's. */
static void place_clock(struct merge_rank *r, const struct pass1 *p)
{
	if (p->r->complete && r->end.end_ticks > r->start_ticks && r->end.end_ns > r->start_ns)
		r->ns_per_tick = (double)(r->end.end_ns - r->start_ns) / (double)(r->end.end_ticks - r->start_ticks);
	r->off0 = r->off1 = 0;
	r->at0 = merge_rank_local_ns(r, r->start_ticks);
	r->slope = 0;
	if (p->nclock) {
		r->has_offset = true;
		r->off0 = r->off1 = p->clock[0].offset;
		r->at0 = merge_rank_local_ns(r, p->clock[0].ticks);
		if (p->nclock == 2 && p->clock[1].ticks > p->clock[0].ticks) {
			int64_t at1 = merge_rank_local_ns(r, p->clock[1].ticks);
			r->off1 = p->clock[1].offset;
			if (at1 > r->at0)
				r->slope = (double)(r->off1 - r->off0) / (double)(at1 - r->at0);
		}
	}
	r->mpi_ns = (uint64_t)((double)p->mpi_ticks * r->ns_per_tick); /* at the rate END gives */
}

/* First pass over one rank's trace.  Returns 0 or -1 after saying why. */
static int read_rank(struct merge_rank *r)
{
	struct pass1 p = {.r = r};
	struct ulma_trace_visitor v = {.ctx = &p,
				       .on_meta = p1_meta,
				       .on_func = p1_func,
				       .on_thread = p1_thread,
				       .on_events = p1_events,
				       .on_mpi = p1_mpi,
				       .on_mpi_rank = p1_rank,
				       .on_end = p1_end};
	struct ulma_trace_status st;
	int err = ulma_trace_read_path(r->path, &v, &st);
	r->complete = st.complete;
	int rc = 0;
	if (err == -EINVAL && p.error) {
		ulma_die_msg("%s is a merged trace, not a rank's", r->path);
		rc = -1;
	} else if (err == -EPROTO) {
		ulma_die_msg("%s: %s", r->path, st.error);
		rc = -1;
	} else if (err) {
		ulma_die_msg("cannot read %s: %s", r->path, strerror(-err));
		rc = -1;
	} else if (!p.has_rank) {
		ulma_die_msg("%s is not an MPI rank's trace (it names no rank: record with `mpirun ... ulma run`)",
			     r->path);
		rc = -1;
	} else {
		place_clock(r, &p);
		if (!r->complete)
			ulma_die_msg("warning: %s is cut short (its monitor did not finish: killed, or out of disk); "
				     "rank %u is merged up to byte %llu",
				     r->path, r->rank, (unsigned long long)st.bytes);
	}
	free(p.is_mpi);
	free(p.threads);
	return rc;
}

/* DIR's rank-*.trace files.  Returns their count, or -1 after saying why. */
static int find_traces(const char *dir, struct merge_rank **out)
{
	DIR *d = opendir(dir);
	if (!d) {
		ulma_die_msg("cannot read the directory '%s': %s", dir, strerror(errno));
		return -1;
	}
	struct merge_rank *ranks = NULL;
	uint32_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (strncmp(de->d_name, "rank-", 5) != 0 || len < 11 || strcmp(de->d_name + len - 6, ".trace") != 0)
			continue;
		if (ulma_array_grow((void **)&ranks, &cap, n, sizeof(*ranks)) < 0)
			goto nomem;
		size_t plen = strlen(dir) + len + 2;
		if (!(ranks[n].path = malloc(plen)))
			goto nomem;
		snprintf(ranks[n].path, plen, "%s/%s", dir, de->d_name);
		n++;
	}
	closedir(d);
	if (n == 0) {
		ulma_die_msg("no rank traces (rank-NNNN.trace) in '%s'", dir);
		free(ranks);
		return -1;
	}
	*out = ranks;
	return (int)n;
nomem:
	closedir(d);
	ulma_die_msg("out of memory");
	*out = ranks;
	return -(int)n - 2;
}

static int by_rank(const void *a, const void *b)
{
	const struct merge_rank *x = a, *y = b;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* The traces are one run's, every rank once.  Returns 0 or -1 after saying why. */
static int check_ranks(struct merge_rank *ranks, uint32_t n, const char *dir)
{
	qsort(ranks, n, sizeof(*ranks), by_rank);
	uint32_t size = ranks[0].size;
	const struct merge_rank *with_id = NULL;
	for (uint32_t i = 0; i < n; i++) {
		const struct merge_rank *r = &ranks[i];
		if (r->size != size) {
			ulma_die_msg("%s is from a run of %u ranks, %s from one of %u: traces of different runs",
				     r->path, r->size, ranks[0].path, size);
			return -1;
		}
		if (i && r->rank == ranks[i - 1].rank) {
			ulma_die_msg("%s and %s are both rank %u: traces of different runs", ranks[i - 1].path,
				     r->path, r->rank);
			return -1;
		}
		if (r->has_init) {
			if (with_id && with_id->run_id != r->run_id) {
				ulma_die_msg("%s and %s are traces of different runs (their MPI_Init run ids "
					     "differ): merge one run's traces at a time",
					     with_id->path, r->path);
				return -1;
			}
			with_id = r;
		}
	}
	for (uint32_t k = 0, i = 0; k < size; k++) {
		if (i < n && ranks[i].rank == k) {
			i++;
			continue;
		}
		ulma_die_msg("rank %u of the run's %u has no trace: %s/rank-%04u.trace is missing", k, size, dir, k);
		return -1;
	}
	/* pids must tell the ranks apart: on several hosts they may repeat */
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < i; j++)
			if (ranks[j].pid == ranks[i].pid)
				ranks[i].merged_pid_base = (ranks[i].rank + 1) << 22;
	return 0;
}

/* The replay's callbacks: events from the feed, results to the spills. */
struct replay_io {
	struct merge_rank *ranks;
	struct merge_feed *feed;
};

static int io_next(void *ctx, uint32_t ri, struct ulma_merge_mpi *out)
{
	struct replay_io *io = ctx;
	return merge_feed_next(io->feed, ri, out);
}

static int spill(FILE **f, int64_t a, int64_t b)
{
	int64_t rec[2] = {a, b};
	if (!*f && !(*f = tmpfile()))
		return -errno;
	return fwrite(rec, sizeof(rec), 1, *f) == 1 ? 0 : -EIO;
}

static int io_shift(void *ctx, uint32_t ri, int64_t at_ns, int64_t shift_ns)
{
	struct replay_io *io = ctx;
	io->ranks[ri].last_shift = shift_ns;
	return spill(&io->ranks[ri].shifts, at_ns, shift_ns);
}

static int io_unmatched_recv(void *ctx, uint32_t ri, uint64_t index)
{
	struct replay_io *io = ctx;
	return spill(&io->ranks[ri].unmatched_recvs, (int64_t)index, 0);
}

/* The logical-clock pass over ranks[0..n) (checked, clocks known), its
 * results in each rank's spills and *out.  Returns 0 or -1 after saying why. */
static int replay_ranks(struct merge_rank *ranks, uint32_t n, struct ulma_merge_replay **out,
			struct ulma_merge_order_stats *order)
{
	uint32_t *rank_of = malloc((n ? n : 1) * sizeof(*rank_of));
	struct replay_io ctx = {.ranks = ranks};
	int err = rank_of ? merge_feed_start(ranks, n, &ctx.feed) : -ENOMEM;
	if (!err) {
		for (uint32_t i = 0; i < n; i++)
			rank_of[i] = ranks[i].rank;
		struct ulma_merge_replay_io io = {.ctx = &ctx, .next = io_next, .on_shift = io_shift,
						  .on_unmatched_recv = io_unmatched_recv};
		err = ulma_merge_replay_run(rank_of, n, ULMA_MERGE_MAX_IN_FLIGHT, &io, order, out);
	}
	merge_feed_stop(ctx.feed);
	free(rank_of);
	for (uint32_t i = 0; i < n && !err; i++) {
		ranks[i].unmatched = ulma_merge_replay_unmatched(*out, i);
		if ((ranks[i].shifts && fflush(ranks[i].shifts)) ||
		    (ranks[i].unmatched_recvs && fflush(ranks[i].unmatched_recvs)))
			err = -errno;
	}
	if (err == -EPROTO)
		ulma_die_msg("a rank's trace changed while it was merged");
	else if (err)
		ulma_die_msg("cannot replay the ranks' MPI events: %s", strerror(-err));
	if (!err && order->dropped)
		ulma_die_msg("warning: more than %u messages were in flight at once: %llu sends past that are "
			     "reported unmatched",
			     ULMA_MERGE_MAX_IN_FLIGHT, (unsigned long long)order->dropped);
	return err ? -1 : 0;
}

static void free_ranks(struct merge_rank *ranks, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		free(ranks[i].path);
		free(ranks[i].host);
		if (ranks[i].shifts)
			fclose(ranks[i].shifts);
		if (ranks[i].unmatched_recvs)
			fclose(ranks[i].unmatched_recvs);
	}
	free(ranks);
}

int ulma_cmd_merge(int argc, char **argv)
{
	static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
					     {"help", no_argument, NULL, 'h'},
					     {NULL, 0, NULL, 0}};
	const char *out = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc + 1, argv - 1, "o:h", opts, NULL)) != -1) {
		if (c == 'o') {
			out = optarg;
		} else if (c == 'h') {
			fputs(merge_usage, stdout);
			return 0;
		} else {
			fputs(merge_usage, stderr);
			return ULMA_EXIT_USAGE;
		}
	}
	if (optind != argc || !out) {
		ulma_die_msg(out ? "merge takes one directory" : "merge needs -o OUT.trace");
		fputs(merge_usage, stderr);
		return ULMA_EXIT_USAGE;
	}
	const char *dir = argv[optind - 1];
	struct merge_rank *ranks;
	int found = find_traces(dir, &ranks);
	if (found < 0) {
		if (found < -1)
			free_ranks(ranks, (uint32_t)(-found - 2));
		return 1;
	}
	uint32_t n = (uint32_t)found;
	int rc = 1;
	for (uint32_t i = 0; i < n; i++) {
		if (ulma_same_file(out, ranks[i].path)) {
			ulma_die_msg("the merged trace '%s' would replace the input '%s': choose another -o", out,
				     ranks[i].path);
			rc = ULMA_EXIT_USAGE;
			goto done;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		if (read_rank(&ranks[i]) < 0)
			goto done;
	if (check_ranks(ranks, n, dir) < 0)
		goto done;
	struct ulma_merge_order_stats order;
	struct ulma_merge_replay *replay = NULL;
	if (replay_ranks(ranks, n, &replay, &order) == 0)
		rc = ulma_merge_write(ranks, n, dir, out, replay, &order) < 0 ? 1 : 0;
	ulma_merge_replay_free(replay);
done:
	free_ranks(ranks, n);
	return rc;
}
