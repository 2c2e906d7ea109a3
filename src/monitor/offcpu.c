/* offcpu.c - switch records merged into off-CPU intervals (see offcpu.h). */
#include "offcpu.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ulma/trace_format.h"

#define UNCLAIMED_KEEP 64 /* pending records kept for a thread no ring has claimed */

void ulma_offcpu_init(struct ulma_offcpu *o, bool use_tsc, const struct ulma_clock_pair *start, uint64_t hz)
{
	memset(o, 0, sizeof(*o));
	ulma_clock_track_init(&o->clock, use_tsc, start, hz);
}

static void free_thread(struct ulma_offcpu_thread *t)
{
	ulma_gilwait_close(&t->gil);
	free(t->q);
	free(t);
}

void ulma_offcpu_free(struct ulma_offcpu *o)
{
	for (uint32_t i = 0; i < o->nthreads; i++)
		if (o->threads[i])
			free_thread(o->threads[i]);
	free(o->threads);
	ulma_idmap_free(&o->by_tid);
	memset(o, 0, sizeof(*o));
}

static void set_wake(struct ulma_offcpu_thread *t)
{
	t->wake_at = t->off ? 0 : t->len ? t->q[t->head].ticks : UINT64_MAX;
}

static struct ulma_offcpu_thread *find(struct ulma_offcpu *o, uint32_t tid)
{
	uint32_t k;
	return ulma_idmap_get(&o->by_tid, tid, &k) && k ? o->threads[k - 1] : NULL;
}

static struct ulma_offcpu_thread *create(struct ulma_offcpu *o, uint32_t pid, uint32_t tid)
{
	struct ulma_offcpu_thread *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->pid = pid;
	t->tid = tid;
	t->gil.fd = -1;
	t->wake_at = UINT64_MAX;
	uint32_t k = 0;
	while (k < o->nthreads && o->threads[k]) /* reuse a freed place */
		k++;
	if (k == o->cap_threads) {
		uint32_t cap = o->cap_threads ? 2 * o->cap_threads : 64;
		struct ulma_offcpu_thread **v = realloc(o->threads, cap * sizeof(*v));
		if (!v) {
			free(t);
			return NULL;
		}
		memset(v + o->cap_threads, 0, (cap - o->cap_threads) * sizeof(*v));
		o->threads = v;
		o->cap_threads = cap;
	}
	if (ulma_idmap_put(&o->by_tid, tid, k + 1)) {
		free(t);
		return NULL;
	}
	o->threads[k] = t;
	if (k == o->nthreads)
		o->nthreads++;
	return t;
}

static void forget(struct ulma_offcpu *o, struct ulma_offcpu_thread *t)
{
	uint32_t k;
	if (ulma_idmap_get(&o->by_tid, t->tid, &k) && k && o->threads[k - 1] == t) {
		ulma_idmap_put(&o->by_tid, t->tid, 0);
		o->threads[k - 1] = NULL;
	}
	free_thread(t);
}

/* Apply the oldest pending record to the state; an interval completes
 * with a switch-in (its state is left in *out). */
static bool apply_front(struct ulma_offcpu_thread *t, uint64_t clamp_ticks, struct ulma_offcpu_interval *out)
{
	struct ulma_offcpu_pending r = t->q[t->head];
	t->head++;
	t->len--;
	if (t->len == 0)
		t->head = 0;
	if (r.ticks > clamp_ticks)
		r.ticks = clamp_ticks;
	t->known = true;
	if (r.kind != ULMA_SWITCH_IN) {
		if (!t->off) { /* a second switch-out without a switch-in between keeps the first */
			t->off = true;
			t->preempted = r.kind == ULMA_SWITCH_PREEMPT;
			t->off_ticks = r.ticks;
			t->off_ns = r.ns;
			t->off_cpu = r.cpu;
			t->probe = r.probe;
		}
		return false;
	}
	if (!t->off)
		return false;
	t->off = false;
	out->ticks = t->off_ticks;
	out->ns = r.ns > t->off_ns ? r.ns - t->off_ns : 0;
	out->cpu = t->off_cpu;
	if (t->preempted) {
		out->state = ULMA_OFF_RUNNABLE;
	} else {
		enum ulma_block why = t->probe != ULMA_BLOCK_NONE ? (enum ulma_block)t->probe : t->gil.last_blocked;
		out->state = why == ULMA_BLOCK_GIL ? ULMA_OFF_GIL : ULMA_OFF_BLOCKED;
	}
	return true;
}

bool ulma_offcpu_until(struct ulma_offcpu_thread *t, uint64_t ticks, enum ulma_offcpu_at at,
		       struct ulma_offcpu_interval *out, const struct ulma_clock_track *clock)
{
	bool done = false, running = at != ULMA_OFFCPU_SAYS_NOTHING;
	/* the records up to ticks; and a thread that runs at ticks got its CPU
	 * back before, whatever the switch-in's time says */
	while (!done && t->len &&
	       (t->q[t->head].ticks <= ticks || (running && t->off && t->q[t->head].kind == ULMA_SWITCH_IN)))
		done = apply_front(t, ticks, out);
	if (!done && t->off && running) {
		/* on its CPU at `ticks` with no switch-in recorded (lost, or the
		 * thread ended): the interval ends there */
		struct ulma_offcpu_pending in = {ticks, ulma_clock_track_ns(clock, ticks), ULMA_SWITCH_IN, 0,
						 ULMA_OFFCPU_NO_CPU};
		uint64_t ns = in.ns > t->off_ns ? in.ns : t->off_ns;
		in.ns = ns;
		t->off = false;
		out->ticks = t->off_ticks;
		out->ns = ns - t->off_ns;
		out->cpu = t->off_cpu;
		if (t->preempted) {
			out->state = ULMA_OFF_RUNNABLE;
		} else {
			enum ulma_block why = t->probe != ULMA_BLOCK_NONE ? (enum ulma_block)t->probe : t->gil.last_blocked;
			out->state = why == ULMA_BLOCK_GIL ? ULMA_OFF_GIL : ULMA_OFF_BLOCKED;
		}
		done = true;
	}
	set_wake(t);
	return done;
}

/* Queue a record in time order.  ulma_switches_read merges the CPUs'
 * buffers, so a record comes after those queued and is appended; the scan
 * from the back only puts right one that the kernel stamped out of order. */
static int queue(struct ulma_offcpu_thread *t, const struct ulma_offcpu_pending *r)
{
	if (!t->claimed && t->len >= UNCLAIMED_KEEP) {
		struct ulma_offcpu_interval unused;
		apply_front(t, UINT64_MAX, &unused); /* nobody will read it: fold it into the state */
	}
	if (t->head + t->len == t->cap) {
		if (t->head > 0) {
			memmove(t->q, t->q + t->head, t->len * sizeof(*t->q));
			t->head = 0;
		} else {
			uint32_t cap = t->cap ? 2 * t->cap : 16;
			struct ulma_offcpu_pending *v = realloc(t->q, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			t->q = v;
			t->cap = cap;
		}
	}
	uint32_t at = t->head + t->len;
	while (at > t->head && t->q[at - 1].ns > r->ns) {
		t->q[at] = t->q[at - 1];
		at--;
	}
	t->q[at] = *r;
	t->len++;
	set_wake(t);
	return 0;
}

int ulma_offcpu_take(struct ulma_offcpu *o, const struct ulma_switch_record *r)
{
	struct ulma_offcpu_thread *t = find(o, r->tid);
	o->records++;
	if (r->kind == ULMA_SWITCH_EXIT) {
		if (t && !t->claimed)
			forget(o, t);
		else if (t) {
			t->exited = true;
			t->exit_ticks = ulma_clock_track_ticks(&o->clock, r->ns);
		}
		return 0;
	}
	if (!t && !(t = create(o, r->pid, r->tid)))
		return -ENOMEM;
	struct ulma_offcpu_pending p = {ulma_clock_track_ticks(&o->clock, r->ns), r->ns, r->kind, ULMA_BLOCK_NONE,
					r->cpu};
	return queue(t, &p);
}

static int take(void *ctx, const struct ulma_switch_record *r)
{
	return ulma_offcpu_take(ctx, r);
}

long ulma_offcpu_read(struct ulma_offcpu *o, struct ulma_switches *sw)
{
	ulma_clock_track_update(&o->clock);
	return ulma_switches_read(sw, take, o);
}

/* Is the thread asleep now, by the state letter in /proc/PID/task/TID/stat
 * (R: running or runnable)?  False when it cannot be read. */
static bool sleeping_now(uint32_t pid, uint32_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%u/task/%u/stat", pid, tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	const char *paren = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
	return paren && paren[1] == ' ' && paren[2] != 0 && paren[2] != 'R';
}

struct ulma_offcpu_thread *ulma_offcpu_claim(struct ulma_offcpu *o, uint32_t pid, uint32_t tid, uint64_t gil_addr,
					     uint32_t gil_len, uint64_t claimed_ticks)
{
	struct ulma_offcpu_thread *t = find(o, tid);
	if (t && t->pid != pid) { /* a tid of a process gone, reused */
		forget(o, t);
		t = NULL;
	}
	if (!t && !(t = create(o, pid, tid)))
		return NULL;
	t->claimed = true;
	ulma_gilwait_close(&t->gil);
	ulma_gilwait_open(&t->gil, pid, tid, gil_addr, gil_len);
	if (t->known)
		return t;
	t->known = true;
	/* no record since they began: on its CPU all along, or asleep since
	 * before; or its first record brings it back: off its CPU until then */
	if (t->len == 0 ? sleeping_now(pid, tid) : t->q[t->head].kind == ULMA_SWITCH_IN) {
		t->off = true;
		t->preempted = false;
		t->off_ticks = claimed_ticks;
		t->off_ns = ulma_clock_track_ns(&o->clock, claimed_ticks);
		t->off_cpu = ULMA_OFFCPU_NO_CPU; /* asleep since before: no switch-out recorded */
		t->probe = ULMA_BLOCK_NONE;
		set_wake(t);
	}
	return t;
}

void ulma_offcpu_release(struct ulma_offcpu *o, struct ulma_offcpu_thread *t)
{
	if (!t)
		return;
	t->claimed = false;
	ulma_gilwait_close(&t->gil);
	if (t->exited)
		forget(o, t);
}

void ulma_offcpu_probe(struct ulma_offcpu *o)
{
	for (uint32_t i = 0; i < o->nthreads; i++) {
		struct ulma_offcpu_thread *t = o->threads[i];
		if (!t || !t->claimed || t->gil.fd < 0)
			continue;
		/* the interval in progress: begun by the newest pending record, or merged already */
		uint8_t *probe = NULL;
		if (t->len) {
			struct ulma_offcpu_pending *last = &t->q[t->head + t->len - 1];
			if (last->kind == ULMA_SWITCH_OUT)
				probe = &last->probe;
		} else if (t->off && !t->preempted) {
			probe = &t->probe;
		}
		if (probe && *probe == ULMA_BLOCK_NONE)
			*probe = (uint8_t)ulma_gilwait_probe(&t->gil);
	}
}
