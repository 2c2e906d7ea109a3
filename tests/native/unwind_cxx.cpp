// unwind_cxx.cpp - a C++ exception thrown through instrumented frames
// (tests/py/test_native.py): the frames it unwinds never call their exit
// hook... with GCC they do (cleanup calls __cyg_profile_func_exit), either
// way the stack must come out right, and ULMA_TS zones end with the scope.
#include <cstdio>
#include <stdexcept>
#include <ulma/ulma.h>

namespace work {
__attribute__((noinline)) int inner(int d)
{
	ULMA_TS("inner-zone");
	if (d == 0)
		throw std::runtime_error("bottom");
	return inner(d - 1) + 1;
}
} // namespace work

int main()
{
	int caught = 0;
	for (int i = 0; i < 5; i++) {
		try {
			work::inner(3);
		} catch (const std::exception &) {
			caught++;
		}
	}
	std::printf("caught %d\n", caught);
	return 0;
}
