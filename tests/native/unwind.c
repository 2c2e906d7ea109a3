/* unwind.c - native frames left without their exit (tests/py/test_native.py):
 * longjmp out of three instrumented frames, and an exit hook called for a
 * function that was never entered.  ulma repairs the stack and says so. */
#include <setjmp.h>
#include <stdio.h>

void __cyg_profile_func_exit(void *fn, void *site);

static jmp_buf back;

__attribute__((noinline)) void thrower(int d)
{
	if (d == 0)
		longjmp(back, 1);
	thrower(d - 1);
}

__attribute__((noinline)) void catcher(void)
{
	if (setjmp(back) == 0)
		thrower(2); /* thrower x3: none of their exits run */
}

__attribute__((noinline)) void after(void)
{
	puts("after");
}

int main(void)
{
	catcher();
	__cyg_profile_func_exit((void *)after, 0); /* an exit with no entry */
	after();
	return 0;
}
