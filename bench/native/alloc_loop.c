/* alloc_loop.c - bench/native_alloc.py's program: N times malloc(64) and
 * free, in one native frame; prints the loop's CPU time per iteration in
 * ns (its thread's CPU clock: a loaded machine's waits left out). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((noinline)) static double loop(long n)
{
	double t = cpu_ns();
	for (long i = 0; i < n; i++) {
		char *volatile p = malloc(64);
		free(p);
	}
	return (cpu_ns() - t) / (double)n;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	loop(n / 10); /* warm */
	printf("%.2f\n", loop(n));
	return 0;
}
