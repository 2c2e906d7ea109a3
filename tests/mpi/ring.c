/* ring.c - MPI test program with known answers (tests/py/test_mpi.py):
 * LAPS times (argv[1], default 5), each rank passes a token of
 * rank * 100 + 8 bytes to its right neighbour with tag 3 (Isend, Irecv,
 * Waitall), then all ranks bcast 4 ints from rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int rank, size, laps = argc > 1 ? atoi(argv[1]) : 5;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	char *out = calloc(1, (size_t)size * 100 + 8), *in = calloc(1, (size_t)size * 100 + 8);
	for (int lap = 0; lap < laps; lap++) {
		MPI_Request req[2];
		MPI_Irecv(in, size * 100 + 8, MPI_CHAR, left, 3, MPI_COMM_WORLD, &req[0]);
		MPI_Isend(out, rank * 100 + 8, MPI_CHAR, right, 3, MPI_COMM_WORLD, &req[1]);
		MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
	}
	int v[4] = {rank, rank, rank, rank};
	MPI_Bcast(v, 4, MPI_INT, 0, MPI_COMM_WORLD);
	free(out);
	free(in);
	MPI_Finalize();
	return 0;
}
