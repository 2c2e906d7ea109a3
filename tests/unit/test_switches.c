/* test_switches.c - the scheduler's context-switch records as
 * src/monitor/switches.h reads them, from the real kernel: a child that
 * hops between two CPUs (sched_setaffinity) leaves records in both CPUs'
 * buffers, and one read hands them on merged in time order: every switch-in
 * followed by that thread's switch-out on the same CPU and every switch-out
 * by a switch-in, the exit last.  A
 * record the reader's function refuses is delivered again by the next
 * read, with those after it.  Skipped where perf_event_open is refused or
 * the machine has one CPU. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "monitor/switches.h"
#include "tap.h"

#define HOPS 200
#define MAX_RECORDS 65536

struct seen {
	struct ulma_switch_record r[MAX_RECORDS];
	size_t n;
	size_t refuse_at; /* refuse the record with this index (SIZE_MAX: none) */
};

static int collect(void *ctx, const struct ulma_switch_record *r)
{
	struct seen *s = ctx;
	if (s->n == s->refuse_at) {
		s->refuse_at = SIZE_MAX;
		return -ENOMEM;
	}
	if (s->n < MAX_RECORDS)
		s->r[s->n++] = *r;
	return 0;
}

/* Hop between CPUs 0 and 1 HOPS times, napping on each; the parent says
 * when to start (a byte on `go`). */
static void hopper(int go)
{
	char c;
	if (read(go, &c, 1) != 1)
		_exit(2);
	for (int i = 0; i < HOPS; i++) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(i % 2, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0)
			_exit(3);
		struct timespec nap = {0, 50000};
		nanosleep(&nap, NULL);
	}
	_exit(0);
}

static struct seen seen;

static void test_merged_in_time_order(void)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		tap_skip("one CPU: nothing to merge");
		return;
	}
	int go[2];
	if (!CHECK(pipe(go) == 0, "a pipe"))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		close(go[1]);
		hopper(go[0]);
	}
	close(go[0]);
	struct ulma_switches *sw = NULL;
	int err = ulma_switches_open_child(pid, &sw);
	if (err) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(go[1]);
		tap_skip("perf_event_open refused here");
		return;
	}
	int status = -1;
	CHECK(write(go[1], "g", 1) == 1, "the child starts");
	close(go[1]);
	pid_t waited = waitpid(pid, &status, 0);
	CHECK(waited == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the child hopped %d times and exited (status %d)", HOPS, status);

	seen.n = 0;
	seen.refuse_at = 40;
	long first = ulma_switches_read(sw, collect, &seen);
	CHECK(first == -ENOMEM && seen.n == 40, "a refusal stops the read: %ld, %zu records taken", first, seen.n);
	long rest = ulma_switches_read(sw, collect, &seen);
	CHECK(rest > 0 && (size_t)rest == seen.n - 40, "the next read goes on from the refused record (%ld more)",
	      rest);
	CHECK(ulma_switches_read(sw, collect, &seen) == 0, "and a third has nothing left");

	size_t mine = 0, back_in_time = 0, other_cpu = 0, unpaired = 0, exits = 0, on_cpu[2] = {0, 0};
	int was_in = -1; /* the child's last record: a switch-in (1), a switch-out (0), none yet (-1) */
	uint32_t in_cpu = UINT32_MAX;
	for (size_t i = 0; i < seen.n; i++) {
		const struct ulma_switch_record *r = &seen.r[i];
		if (i && r->ns < seen.r[i - 1].ns)
			back_in_time++;
		if (r->tid != (uint32_t)pid)
			continue;
		mine++;
		if (r->cpu < 2)
			on_cpu[r->cpu]++;
		if (r->kind == ULMA_SWITCH_IN) {
			unpaired += was_in == 1;
			was_in = 1;
			in_cpu = r->cpu;
		} else if (r->kind == ULMA_SWITCH_EXIT) {
			exits++;
		} else {
			unpaired += was_in == 0;
			was_in = 0;
			if (in_cpu != UINT32_MAX && r->cpu != in_cpu)
				other_cpu++;
			in_cpu = UINT32_MAX;
		}
	}
	CHECK(mine >= 2 * HOPS && on_cpu[0] >= HOPS / 2 && on_cpu[1] >= HOPS / 2,
	      "the child's records on both CPUs: %zu, %zu on CPU 0, %zu on CPU 1", mine, on_cpu[0], on_cpu[1]);
	CHECK(back_in_time == 0, "delivered in time order (%zu records earlier than the one before)", back_in_time);
	CHECK(other_cpu == 0, "each switch-out on the CPU of the switch-in before it (%zu not)", other_cpu);
	CHECK(unpaired == 0, "switch-ins and switch-outs alternate, none missing (%zu twice in a row)", unpaired);
	CHECK(exits == 1 && seen.r[seen.n - 1].kind == ULMA_SWITCH_EXIT, "its exit, once, last (%zu)", exits);
	CHECK(ulma_switches_lost(sw) == 0, "nothing lost");
	ulma_switches_close(sw);
}

int main(void)
{
	test_merged_in_time_order();
	return tap_done();
}
