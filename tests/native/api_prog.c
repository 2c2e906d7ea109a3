/* api_prog.c - a C program using ulma's C API and -finstrument-functions
 * (tests/py/test_native.py builds and runs it under `ulma run`).
 * Known answers: leaf() runs 1000 times inside the zone "work", step()
 * 10 times; three instants, ten counter values, one thread name. */
#include <stdio.h>
#include <ulma/ulma.h>

static volatile int sink;

__attribute__((noinline)) int leaf(int i)
{
	return i * 3;
}

__attribute__((noinline)) void step(int k)
{
	ULMA_ZONE("work");
	for (int i = 0; i < 100; i++)
		sink += leaf(i);
	ulma_counter("queue", (double)k * 1.5);
}

int main(void)
{
	ulma_thread_name("main-loop");
	for (int k = 0; k < 10; k++) {
		step(k);
		if (k % 4 == 0)
			ulma_instant("checkpoint");
	}
	ULMA_ZONE_BEGIN(tail, "tail");
	sink += leaf(1);
	ULMA_ZONE_END(tail);
	printf("done %d\n", sink);
	return 0;
}
