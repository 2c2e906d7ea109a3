/* mpi_view.h - what a merged MPI trace says about its ranks and messages
 * (docs/mpi.md): per rank its time computing and waiting in MPI, and in
 * which functions the waiting happened; the messages matched send to
 * receive; the sends and receives left without a partner; what the merge
 * moved.  Built from the reader's callbacks (the caller forwards them:
 * `ulma report` does), rendered by summary_mpi.c.  A trace with no rank
 * records leaves the view empty and costs one branch per callback.
 * Single-threaded; functions returning int give 0 or -ENOMEM.
 */
#ifndef ULMA_MPI_VIEW_H
#define ULMA_MPI_VIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/idmap.h"
#include "../core/trace_reader.h"

#define ULMA_MPI_VIEW_CALLERS 3 /* functions named per rank, by time waited in MPI under them */

struct ulma_mpi_caller {
	uint32_t func;   /* dense index of the function that called MPI */
	uint32_t mpi;    /* dense index of the MPI call it spent most in */
	uint64_t ticks;  /* in MPI calls it made */
};

struct ulma_mpi_rank_row {
	uint32_t rank, pid;
	char *host;
	uint64_t events;      /* events of its process */
	uint64_t mpi_ticks;   /* in MPI calls (outermost), every thread */
	uint64_t first_ticks, last_ticks; /* its first and last event */
	int64_t offset_init_ns, offset_final_ns;
	uint64_t unmatched;
	struct ulma_mpi_caller top[ULMA_MPI_VIEW_CALLERS];
};

struct ulma_mpi_message {
	uint32_t src, dst;
	int64_t tag;
	uint64_t comm, bytes, seq;
	uint64_t send_ticks, recv_ticks;
	uint8_t have; /* bit 0 the send was seen, bit 1 the receive */
};

struct ulma_mpi_view {
	bool is_rank;                 /* a rank's own trace: the three below say which */
	uint32_t own_rank, own_size;
	char *own_host;
	bool merged;                  /* the trace has rank records of a merge */
	struct ulma_trace_merge merge; /* what the merge did */
	struct ulma_mpi_rank_row *ranks;
	uint32_t nranks, cap_ranks;
	struct ulma_mpi_message *messages;
	uint64_t nmessages, cap_messages;
	struct ulma_idmap message_of; /* key of (src, dst, tag, comm, seq) -> index */
	/* internal */
	uint8_t *is_mpi;  /* per function */
	uint32_t nfuncs;
	struct ulma_mpi_view_thread *threads;
	uint32_t nthreads;
	struct ulma_idmap rank_of_pid;   /* pid -> rank row index + 1 */
	struct ulma_idmap caller_sum;    /* key of (row, caller, call) -> index into sums */
	struct { uint32_t row, func, mpi; uint64_t ticks; } *sums;
	uint32_t nsums, cap_sums;
};

void ulma_mpi_view_init(struct ulma_mpi_view *v);
void ulma_mpi_view_free(struct ulma_mpi_view *v);

int ulma_mpi_view_rank(struct ulma_mpi_view *v, const struct ulma_trace_rank *rank);
int ulma_mpi_view_merge(struct ulma_mpi_view *v, const struct ulma_trace_merge *merge);
int ulma_mpi_view_func(struct ulma_mpi_view *v, const struct ulma_trace_func *func);
int ulma_mpi_view_thread(struct ulma_mpi_view *v, const struct ulma_trace_thread *thread);
int ulma_mpi_view_events(struct ulma_mpi_view *v, uint32_t thread, const struct ulma_trace_event *ev, size_t n);
int ulma_mpi_view_mpi(struct ulma_mpi_view *v, const struct ulma_trace_mpi *mpi);
/* After the last callback: rank the callers. */
void ulma_mpi_view_finish(struct ulma_mpi_view *v);

#endif
