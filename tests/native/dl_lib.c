/* dl_lib.c - a library the test program loads with dlopen after tracing
 * started (tests/py/test_native.py); built plain and stripped to .dynsym. */
__attribute__((noinline)) int dl_square(int x)
{
	return x * x;
}

int dl_work(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += dl_square(i);
	return s;
}
