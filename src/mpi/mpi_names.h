/* mpi_names.h - how reports know a frame of libulma_mpi.so: a zone whose
 * file is ULMA_MPI_FILE (src/mpi/mpi_wrap.h, docs/mpi.md). */
#ifndef ULMA_MPI_NAMES_H
#define ULMA_MPI_NAMES_H

#define ULMA_MPI_FILE "<MPI>"

#endif
