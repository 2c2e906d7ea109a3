/* test_gilwait.c - telling GIL waits from other blocking (src/monitor/gilwait.c):
 * parsing /proc/.../syscall lines, the share of an interval's blocked time
 * given to the GIL, and, on real threads of this process, a thread asleep
 * on a condition variable standing in for the GIL against one asleep on
 * another. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "monitor/gilwait.h"
#include "tap.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fake_gil = PTHREAD_COND_INITIALIZER, other = PTHREAD_COND_INITIALIZER;
static int release;

struct sleeper {
	pthread_cond_t *on;
	_Atomic long tid;
};

static void *sleep_on(void *arg)
{
	struct sleeper *s = arg;
	s->tid = (long)syscall(SYS_gettid);
	pthread_mutex_lock(&lock);
	while (!release)
		pthread_cond_wait(s->on, &lock);
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* Classify the thread until it is seen asleep (it may not have got there yet). */
static enum ulma_block settle(struct sleeper *s)
{
	struct ulma_gilwait g;
	while (!s->tid)
		usleep(1000);
	if (ulma_gilwait_open(&g, (uint32_t)getpid(), (uint32_t)s->tid, (uint64_t)(uintptr_t)&fake_gil,
			      sizeof(fake_gil)) != 0)
		return (enum ulma_block)-1;
	enum ulma_block b = ULMA_BLOCK_NONE;
	for (int i = 0; i < 2000 && b == ULMA_BLOCK_NONE; i++) {
		char buf[256];
		ssize_t n = pread(g.fd, buf, sizeof(buf) - 1, 0);
		if (n <= 0)
			break;
		buf[n] = 0;
		b = ulma_gilwait_classify(buf, g.gil_lo, g.gil_hi);
		if (b == ULMA_BLOCK_NONE)
			usleep(1000);
	}
	ulma_gilwait_close(&g);
	return b;
}

int main(void)
{
	char line[128];
	uint64_t lo = 0x7f0000001000, hi = lo + 0x100;
	CHECK(ulma_gilwait_classify("running\n", lo, hi) == ULMA_BLOCK_NONE, "running: not blocked");
	snprintf(line, sizeof(line), "%d 0x7f0000001010 0x189 0x0 0x0 0x7ffc 0x7ffd 0x7f00aaaa\n", (int)SYS_futex);
	CHECK(ulma_gilwait_classify(line, lo, hi) == ULMA_BLOCK_GIL, "a futex inside the GIL: the GIL");
	snprintf(line, sizeof(line), "%d 0x7f0000001100 0x189 0x0 0x0 0x7ffc 0x7ffd 0x7f00aaaa\n", (int)SYS_futex);
	CHECK(ulma_gilwait_classify(line, lo, hi) == ULMA_BLOCK_OTHER, "a futex just past it: something else");
	snprintf(line, sizeof(line), "%d 0x7f0000000fff 0x189\n", (int)SYS_futex);
	CHECK(ulma_gilwait_classify(line, lo, hi) == ULMA_BLOCK_OTHER, "a futex just before it: something else");
	CHECK(ulma_gilwait_classify("0 0x3 0x7ffd 0x400\n", lo, hi) == ULMA_BLOCK_OTHER, "read(): blocked, not GIL");
	CHECK(ulma_gilwait_classify("-1 0x7ffc 0x7f00\n", lo, hi) == ULMA_BLOCK_OTHER, "outside a syscall: other");
	CHECK(ulma_gilwait_classify("", lo, hi) == ULMA_BLOCK_NONE, "an empty line says nothing");

	CHECK(ulma_gilwait_share(ULMA_BLOCK_GIL, ULMA_BLOCK_GIL, ULMA_BLOCK_GIL) == 1.0, "GIL at both ends: all");
	CHECK(ulma_gilwait_share(ULMA_BLOCK_NONE, ULMA_BLOCK_GIL, ULMA_BLOCK_OTHER) == 1.0, "GIL and running: all");
	CHECK(ulma_gilwait_share(ULMA_BLOCK_GIL, ULMA_BLOCK_OTHER, ULMA_BLOCK_OTHER) == 0.5, "GIL and other: half");
	CHECK(ulma_gilwait_share(ULMA_BLOCK_OTHER, ULMA_BLOCK_NONE, ULMA_BLOCK_GIL) == 0.0, "other only: none");
	CHECK(ulma_gilwait_share(ULMA_BLOCK_NONE, ULMA_BLOCK_NONE, ULMA_BLOCK_GIL) == 1.0,
	      "running at both ends: the latest blocking seen decides (GIL)");
	CHECK(ulma_gilwait_share(ULMA_BLOCK_NONE, ULMA_BLOCK_NONE, ULMA_BLOCK_NONE) == 0.0,
	      "running at both ends, never seen blocked: none");

	struct ulma_gilwait none;
	CHECK(ulma_gilwait_open(&none, (uint32_t)getpid(), (uint32_t)getpid(), 0, 0) < 0 && none.fd == -1,
	      "no GIL address: refused");
	CHECK(!ulma_gilwait_step(&none, 1, 0, 0) && none.gil_ns == 0, "and a step gives nothing");

	/* real threads: one asleep on the stand-in GIL, one on another condition */
	struct sleeper on_gil = {&fake_gil, 0}, on_other = {&other, 0};
	pthread_t a, b;
	pthread_create(&a, NULL, sleep_on, &on_gil);
	pthread_create(&b, NULL, sleep_on, &on_other);
	enum ulma_block seen_gil = settle(&on_gil), seen_other = settle(&on_other);
	CHECK(seen_gil == ULMA_BLOCK_GIL, "a thread asleep on the GIL's condition is waiting for the GIL");
	CHECK(seen_other == ULMA_BLOCK_OTHER, "a thread asleep on another condition is blocked on something else");

	/* steps: 10 ms of wall between samples, 2 ms of it running: 8 ms blocked on the GIL */
	struct ulma_gilwait g;
	CHECK(ulma_gilwait_open(&g, (uint32_t)getpid(), (uint32_t)on_gil.tid, (uint64_t)(uintptr_t)&fake_gil,
				sizeof(fake_gil)) == 0,
	      "open the sleeper's syscall file");
	CHECK(ulma_gilwait_step(&g, 1000000000, 5000000, 0), "first step primes");
	CHECK_EQ_U64(g.gil_ns, 0, "nothing before a second sample");
	CHECK(ulma_gilwait_step(&g, 1010000000, 6000000, 1000000), "second step");
	CHECK_EQ_U64(g.gil_ns, 8000000, "8 ms of the 10 were blocked, on the GIL at both ends");
	ulma_gilwait_close(&g);

	pthread_mutex_lock(&lock);
	release = 1;
	pthread_cond_broadcast(&fake_gil);
	pthread_cond_broadcast(&other);
	pthread_mutex_unlock(&lock);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return tap_done();
}
