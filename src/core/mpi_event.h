/* mpi_event.h - what an MPI event says: the operations libulma_mpi.so
 * records (src/mpi/), and the arguments each carries, as they travel in a
 * ring (ULMA_REC_MPI_ARG / _EVENT, include/ulma/shm.h), in a trace
 * (ULMA_EXT_MPI) and to a reader (struct ulma_trace_mpi).  docs/mpi.md.
 *
 * Ranks are ranks of MPI_COMM_WORLD, whatever communicator the call used,
 * so that a message's two ends name the same processes.  A communicator is
 * a number: 0 for MPI_COMM_WORLD, else a hash of its members' world ranks
 * (communicators with the same members share one number).  Every argument
 * fits in 48 bits; signed values are zigzag-coded; 64-bit values take two
 * arguments, low half first.
 */
#ifndef ULMA_MPI_EVENT_H
#define ULMA_MPI_EVENT_H

#include <stdint.h>

#define ULMA_MPI_ARGS_MAX 6u
#define ULMA_MPI_SEQ_NONE ((UINT64_C(1) << 48) - 1) /* a merged RECV or SEND that matched none */

enum ulma_mpi_op {
	/* a message leaves: at the start of MPI_Send, _Isend, _Sendrecv.
	 * args: peer (destination), tag, comm, bytes; in a merged trace also
	 * the message's number among those of its (source, destination, tag,
	 * comm), which its RECV carries too */
	ULMA_MPI_SEND = 1,
	/* a message arrived: when MPI_Recv or _Sendrecv returns, or when
	 * MPI_Wait* / MPI_Test* completes an MPI_Irecv.  args: peer (source),
	 * tag, comm, bytes; in a merged trace also the number of the message
	 * it matched (none: it matched none) */
	ULMA_MPI_RECV = 2,
	/* a collective starts.  args: which (enum ulma_mpi_coll), comm, root + 1 (0: none), bytes
	 * this rank contributes, ranks in comm */
	ULMA_MPI_COLL_BEGIN = 3,
	/* the collective returns.  args: which, comm */
	ULMA_MPI_COLL_END = 4,
	/* MPI_Init returned.  args: rank, size, run id (two halves): rank 0's
	 * random number, the same in every rank of one run */
	ULMA_MPI_INIT = 5,
	/* this rank's clock minus rank 0's, by ping-pong at MPI_Init and
	 * MPI_Finalize.  args: offset in ns (zigzag, two halves), the
	 * round trip it was measured with (ns) */
	ULMA_MPI_CLOCK = 6,
	ULMA_MPI_OP_MAX = 6,
};

enum ulma_mpi_coll {
	ULMA_MPI_BARRIER = 1,
	ULMA_MPI_BCAST = 2,
	ULMA_MPI_REDUCE = 3,
	ULMA_MPI_ALLREDUCE = 4,
	ULMA_MPI_GATHER = 5,
	ULMA_MPI_SCATTER = 6,
	ULMA_MPI_ALLTOALL = 7,
	ULMA_MPI_ALLGATHER = 8,
	ULMA_MPI_COLL_MAX = 8,
};

static inline uint64_t ulma_zigzag(int64_t v)
{
	return (uint64_t)v << 1 ^ (uint64_t)(v >> 63);
}

static inline int64_t ulma_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

#endif
