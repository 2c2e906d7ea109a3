/* recurse.c - known answers for native tracing (tests/py/test_native.py):
 * fib(N) makes 2*fib(N+1)-1 calls of fib; `deep D` recurses D frames
 * deep and back.  Built with -finstrument-functions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) long fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) long down(long d)
{
	if (d == 0)
		return 0;
	return 1 + down(d - 1);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "deep") == 0) {
		printf("depth %ld\n", down(atol(argv[2])));
		return 0;
	}
	int n = argc > 1 ? atoi(argv[1]) : 20;
	printf("fib %ld\n", fib(n));
	return 0;
}
