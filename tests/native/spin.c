/* spin.c - a native program that calls work() for SECONDS seconds (the
 * live view's test, tests/py/test_native.py). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile long sink;

__attribute__((noinline)) void work(long i)
{
	for (int k = 0; k < 200; k++)
		sink += i ^ k;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long i = 0;
	do {
		work(i++);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	printf("SPIN-DONE %ld\n", i);
	return 0;
}
