/* kernel.c - a native workload of many small functions for bench/native.py:
 * `calls N` makes N calls of a two-instruction function (the hook's cost
 * with nothing else around it), `tree D` a binary recursion of 2^D - 1
 * calls that does a little arithmetic in each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	long n = atol(argv[2]), acc = 0;
	if (strcmp(argv[1], "calls") == 0)
		for (long i = 0; i < n; i++)
			acc += step(i);
	else
		acc = tree((int)n, 1);
	printf("%ld\n", acc);
	return 0;
}
