/* messages.c - bench/mpi.py's message-heavy MPI program: ranks 0 and 1
 * exchange ROUNDS small messages (MPI_Send / MPI_Recv, 8 bytes), and
 * every rank then joins CALLS_K thousand calls of a small recursive
 * function (built with -finstrument-functions: events for the merge
 * rate) and an allreduce.  argv[1] = ROUNDS, argv[2] = CALLS_K. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int leaf(int n)
{
	return n < 2 ? n : leaf(n - 1) + 1;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, rounds = argc > 1 ? atoi(argv[1]) : 100000, calls_k = argc > 2 ? atoi(argv[2]) : 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	long buf = 0;
	for (int i = 0; i < rounds; i++) {
		if (rank == 0) {
			MPI_Send(&buf, 1, MPI_LONG, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(&buf, 1, MPI_LONG, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			MPI_Recv(&buf, 1, MPI_LONG, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			buf++;
			MPI_Send(&buf, 1, MPI_LONG, 0, 2, MPI_COMM_WORLD);
		}
	}
	long sum = 0;
	for (int i = 0; i < calls_k * 1000 / 4; i++)
		sum += leaf(3);
	long total = 0;
	MPI_Allreduce(&sum, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%ld %ld\n", buf, total);
	MPI_Finalize();
	return 0;
}
