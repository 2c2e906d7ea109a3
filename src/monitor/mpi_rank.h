/* mpi_rank.h - `ulma run` under mpirun (docs/mpi.md): which rank this is,
 * where its trace goes, and the PMPI library to preload.
 *
 * The rank comes from the launcher's environment: Open MPI's
 * OMPI_COMM_WORLD_RANK / _SIZE, else PMIx's PMIX_RANK, else PMI_RANK /
 * PMI_SIZE (MPICH, Intel MPI, Slurm).  Each rank's monitor writes
 * DIR/rank-NNNN.trace on its own host, DIR being -o's value (default
 * ulma-traces); nothing crosses the network.  The program's own MPI
 * library is left as it is.
 */
#ifndef ULMA_MPI_RANK_H
#define ULMA_MPI_RANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ulma_trace_writer;

struct ulma_mpi_env {
	uint32_t rank;
	uint32_t size; /* 0 when the launcher does not say */
};

/* True, with *env filled, when this process is an MPI rank. */
bool ulma_mpi_env_detect(struct ulma_mpi_env *env);

/* The trace path of `rank` under dir (made if missing, as mkdir -p) into
 * buf.  Returns 0, or -errno with nothing made beyond what mkdir made. */
int ulma_mpi_trace_path(const char *dir, uint32_t rank, char *buf, size_t cap);

/* libulma_mpi.so beside the runtime library `runtime`, into buf.
 * Returns 0 or -ENOENT (ulma was built without MPI). */
int ulma_mpi_lib_find(const char *runtime, char *buf, size_t cap);

/* The shift a test asks for in ULMA_TEST_CLOCK_SKEW_NS (signed ns, 0 if
 * unset): this rank's trace and its ping-pong (libulma_mpi.so reads the
 * same variable) see a clock that far from the host's, as a rank on
 * another host would.  For tests only. */
int64_t ulma_mpi_test_skew_ns(void);

/* Write the rank's chunk (rank, size, this host's name) for process pid. */
int ulma_mpi_write_rank(struct ulma_trace_writer *w, const struct ulma_mpi_env *env, uint32_t pid);

#endif
