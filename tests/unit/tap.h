/* tap.h - a tiny TAP-style harness for the C unit tests.
 *
 * CHECK(cond, fmt, ...) prints "ok N - msg" or "not ok N - msg" with the
 * failing expression and location, and evaluates to the condition so a test
 * can stop early: `if (!CHECK(p != NULL, "alloc")) return;`.
 * CHECK_EQ_U64 / CHECK_EQ_I64 also print both values on failure.
 * tap_done() prints the plan and a final "N passed, N failed" line and
 * returns the process exit status (non-zero if anything failed).
 */
#ifndef ULMA_TAP_H
#define ULMA_TAP_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

static struct {
	unsigned passed;
	unsigned failed;
	unsigned skipped;
} tap_state __attribute__((unused));

__attribute__((format(printf, 4, 5))) static inline int tap_ok(int ok, const char *file, int line,
							       const char *fmt, ...)
{
	unsigned n = tap_state.passed + tap_state.failed + tap_state.skipped + 1;
	va_list ap;
	printf("%s %u - ", ok ? "ok" : "not ok", n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (ok)
		tap_state.passed++;
	else {
		tap_state.failed++;
		printf("#   failed at %s:%d\n", file, line);
	}
	fflush(stdout);
	return ok;
}

/* A diagnostic line ("# ..."). */
__attribute__((format(printf, 1, 2))) static inline void tap_diag(const char *fmt, ...)
{
	va_list ap;
	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* A check that cannot run here (counted, neither passed nor failed). */
static inline void tap_skip(const char *why)
{
	unsigned n = tap_state.passed + tap_state.failed + tap_state.skipped + 1;
	printf("ok %u # SKIP %s\n", n, why);
	tap_state.skipped++;
	fflush(stdout);
}

static inline int tap_done(void)
{
	printf("1..%u\n", tap_state.passed + tap_state.failed + tap_state.skipped);
	printf("%u passed, %u failed\n", tap_state.passed, tap_state.failed);
	fflush(stdout);
	return tap_state.failed ? 1 : 0;
}

#define CHECK(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

static inline int tap_eq_u64(uint64_t a, uint64_t b, const char *ea, const char *eb, const char *file,
			     int line, const char *msg)
{
	int ok = tap_ok(a == b, file, line, "%s", msg);
	if (!ok)
		printf("#   %s = %llu (0x%llx), expected %s = %llu (0x%llx)\n", ea, (unsigned long long)a,
		       (unsigned long long)a, eb, (unsigned long long)b, (unsigned long long)b);
	return ok;
}

static inline int tap_eq_i64(int64_t a, int64_t b, const char *ea, const char *eb, const char *file,
			     int line, const char *msg)
{
	int ok = tap_ok(a == b, file, line, "%s", msg);
	if (!ok)
		printf("#   %s = %lld, expected %s = %lld\n", ea, (long long)a, eb, (long long)b);
	return ok;
}

#define CHECK_EQ_U64(a, b, msg) tap_eq_u64((uint64_t)(a), (uint64_t)(b), #a, #b, __FILE__, __LINE__, (msg))
#define CHECK_EQ_I64(a, b, msg) tap_eq_i64((int64_t)(a), (int64_t)(b), #a, #b, __FILE__, __LINE__, (msg))

#endif
