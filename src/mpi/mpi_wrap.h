/* mpi_wrap.h - what the PMPI wrappers of libulma_mpi.so share (src/mpi/,
 * docs/mpi.md): the frame every wrapped call opens, the arguments its
 * events carry, and the table of receives still in flight.
 *
 * Each wrapped MPI function is a zone (a frame named for the function,
 * file "<MPI>") around the PMPI call, so the profile shows the time in
 * MPI under the functions that called it, and MPI events (mpi_event.h)
 * recorded through libulma_rt into the calling thread's own ring.
 * Internal to the library; every function is thread-safe.
 */
#ifndef ULMA_MPI_WRAP_H
#define ULMA_MPI_WRAP_H

#include <mpi.h>
#include <stdint.h>

#include "core/mpi_event.h"
#include "ulma/ulma.h"

#include "mpi_names.h" /* ULMA_MPI_FILE, the file of every MPI frame: how reports know them */

#define MPI_SITE(fn) static struct ulma_zone_site site_##fn = {#fn, ULMA_MPI_FILE, 0, 0, 0}
#define MPI_ENTER(fn) (ulma_enabled ? ulma_zone_begin(&site_##fn) : (void)0)
#define MPI_LEAVE(fn) (ulma_enabled ? ulma_zone_end(&site_##fn) : (void)0)

/* The number of a communicator in events: 0 for MPI_COMM_WORLD, else a
 * hash of its members' world ranks. */
uint32_t ulma_mpi_comm_id(MPI_Comm comm);

/* Rank r of comm as a rank of MPI_COMM_WORLD (r itself if negative:
 * MPI_ANY_SOURCE, MPI_PROC_NULL). */
int ulma_mpi_world_rank(MPI_Comm comm, int r);

/* Record a message sent to dest of comm (at the call's start). */
void ulma_mpi_sent(MPI_Comm comm, int dest, int tag, int count, MPI_Datatype type);

/* Record a message received, as status says (at its completion). */
void ulma_mpi_received(MPI_Comm comm, MPI_Datatype type, const MPI_Status *status);

/* A collective of comm starts or ends. */
void ulma_mpi_coll(enum ulma_mpi_op op, enum ulma_mpi_coll which, MPI_Comm comm, int root, int count,
		   MPI_Datatype type);

/* An MPI_Irecv in flight: remember its communicator and datatype until a
 * Wait or Test completes it. */
void ulma_mpi_request_add(MPI_Request req, MPI_Comm comm, MPI_Datatype type);

/* Request `req` (its handle before the call that completed it) is
 * complete with status: record its receive if it was one of ours. */
void ulma_mpi_request_done(MPI_Request req, const MPI_Status *status);

/* Measure and record this rank's clock offset to rank 0 (ping-pong, the
 * minimum round trip of several), and at MPI_Init the run's identity.
 * Collective over MPI_COMM_WORLD: every rank calls it at the same point. */
void ulma_mpi_clock_sync(int at_init);

#endif
