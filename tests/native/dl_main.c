/* dl_main.c - dlopen LIB after the first traced call, then call dl_work(7)
 * (tests/py/test_native.py). */
#include <dlfcn.h>
#include <stdio.h>

__attribute__((noinline)) static int start(void)
{
	return 1;
}

int main(int argc, char **argv)
{
	start(); /* tracing is on from here */
	void *h = dlopen(argc > 1 ? argv[1] : "./libdl_lib.so", RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 2;
	}
	int (*work)(int) = (int (*)(int))dlsym(h, "dl_work");
	printf("work %d\n", work(7));
	return 0;
}
