/* pingpong.c - MPI test program with known answers (tests/py/test_mpi.py):
 * ranks 0 and 1 exchange ROUNDS messages each way, rank 0 sending BYTES
 * bytes with tag 7 and rank 1 answering with BYTES / 2 bytes and tag 8;
 * every rank then joins one barrier and one allreduce.  With argument
 * "crash", rank 1 dies (SIGKILL) after answering half the rounds. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 10
#define BYTES 1024

static void work(int n)
{
	volatile double x = 0;
	for (int i = 0; i < n * 1000; i++)
		x += i * 0.5;
}

int main(int argc, char **argv)
{
	int rank, size;
	char buf[BYTES];
	memset(buf, 1, sizeof(buf));
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int crash = argc > 1 && strcmp(argv[1], "crash") == 0;
	for (int i = 0; i < ROUNDS; i++) {
		if (rank == 0) {
			work(50);
			MPI_Send(buf, BYTES, MPI_CHAR, 1, 7, MPI_COMM_WORLD);
			MPI_Recv(buf, BYTES, MPI_CHAR, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			MPI_Recv(buf, BYTES, MPI_CHAR, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			work(20);
			MPI_Send(buf, BYTES / 2, MPI_CHAR, 0, 8, MPI_COMM_WORLD);
			if (crash && i == ROUNDS / 2 - 1) {
				fflush(stdout);
				kill(getpid(), SIGKILL);
			}
		}
	}
	MPI_Barrier(MPI_COMM_WORLD);
	int one = 1, sum = 0;
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("ranks %d\n", sum);
	MPI_Finalize();
	return 0;
}
