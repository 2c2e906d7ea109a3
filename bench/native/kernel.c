/* kernel.c - a native workload of many small functions for bench/native.py:
 * `calls N` makes N calls of a two-instruction function (the hook's cost
 * with nothing else around it), `tree D` a binary recursion of 2^D - 1
 * calls that does a little arithmetic in each.  Prints its result, then
 * the wall and thread CPU nanoseconds of the workload alone (start-up,
 * tracing's set-up and the drain at exit excluded). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__attribute__((noipa)) long step(long x)
{
	return x * 3 + 1;
}

__attribute__((noipa)) long tree(int d, long x)
{
	if (d == 0)
		return x & 1023;
	return tree(d - 1, x * 7 + 1) + tree(d - 1, x * 5 + 3) + (x & 7);
}

static long long ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	long n = atol(argv[2]), acc = 0;
	long long wall = ns(CLOCK_MONOTONIC), cpu = ns(CLOCK_THREAD_CPUTIME_ID);
	if (strcmp(argv[1], "calls") == 0)
		for (long i = 0; i < n; i++)
			acc += step(i);
	else
		acc = tree((int)n, 1);
	cpu = ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
	wall = ns(CLOCK_MONOTONIC) - wall;
	printf("%ld %lld %lld\n", acc, wall, cpu);
	return 0;
}
