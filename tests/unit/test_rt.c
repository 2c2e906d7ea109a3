/* test_rt.c - the in-process runtime (src/runtime/, libulma_rt.so): the
 * -finstrument-functions hooks and the C API write well-formed records
 * into each thread's own ring, and stopping while native threads are in
 * the middle of writing leaves every ring with one producer: every thread's
 * records read back in order, each ring ends with its STOP, and nothing is
 * written after it.  Native threads hold no GIL, so this is the handshake
 * of rt.h ("Stopping"), run many times over.  Also the C API's names, the
 * hooks' rebinding of an object's imports (got.c), and the names processes
 * write of themselves (threads.c). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/session.h"
#include "runtime/rt.h"
#include "tap.h"
#include "ulma/ulma.h"

void __cyg_profile_func_enter(void *fn, void *site);
void __cyg_profile_func_exit(void *fn, void *site);

#define THREADS 4
#define RING_RECORDS (1u << 18)

static int make_session(struct ulma_session *s, bool use_tsc)
{
	struct ulma_session_config cfg;
	ulma_session_config_default(&cfg);
	cfg.slot_count = 16;
	cfg.ring_records = RING_RECORDS;
	cfg.defs_size = 1u << 20;
	cfg.lossless = false; /* nobody drains while the writers run: full rings drop */
	cfg.use_tsc = use_tsc; /* with the TSC the hooks take their fast path; without, the slow one */
	return ulma_session_create(&cfg, s);
}

static void start(struct ulma_session *s)
{
	CHECK(ulma_rt_threads_init() == 0, "thread handlers");
	int err = ulma_rt_map(s->fd);
	if (err)
		CHECK(0, "map: %d", err);
	ulma_rt_set_active(true);
}

static void stop(void)
{
	uint32_t cpu;
	uint64_t now = ulma_clock_now(false, &cpu);
	ulma_rt_stop(now, cpu);
}

static atomic_int running, writing;

static void *writer_thread(void *arg)
{
	(void)arg;
	uintptr_t fn = (uintptr_t)&writer_thread;
	bool first = true;
	/* Nobody drains the rings here, and a full ring would drop the STOP the
	 * test looks for: write slowly, and never more than half a ring, so that
	 * a loaded machine that keeps the stopping thread off its CPU for long
	 * cannot fill one (the writer then idles until the stop). */
	uint32_t left = RING_RECORDS / 2 / 4;
	while (atomic_load(&running)) {
		if (left) {
			left--;
			__cyg_profile_func_enter((void *)fn, NULL);
			__cyg_profile_func_enter((void *)(fn + 16), NULL);
			__cyg_profile_func_exit((void *)(fn + 16), NULL);
			__cyg_profile_func_exit((void *)fn, NULL);
		}
		for (volatile int k = 0; k < 3000; k++)
			;
		if (first)
			atomic_fetch_add(&writing, 1);
		first = false;
	}
	return NULL;
}

struct ring_check {
	uint32_t slots;     /* slots with records */
	uint32_t stops;     /* of which end in exactly one STOP, last */
	uint32_t bad_kind;  /* records of a kind the hooks never write */
	uint32_t backwards; /* times that run back within a ring */
	uint32_t bad_addr;  /* native records naming another address */
};

static void check_rings(struct ulma_session *s, uintptr_t fn, struct ring_check *rc)
{
	memset(rc, 0, sizeof(*rc));
	uint64_t cap = ulma_session_capacity(s);
	for (uint32_t i = 0; i < s->hdr->slot_count; i++) {
		uint64_t head = atomic_load(&s->slots[i].head), tail = atomic_load(&s->slots[i].tail);
		if (head == tail)
			continue;
		rc->slots++;
		const struct ulma_record *ring = ulma_session_ring(s, i);
		uint64_t from = head - tail > cap ? head - cap : tail, last = 0;
		bool stopped = false, after_stop = false;
		for (uint64_t pos = from; pos < head; pos++) {
			const struct ulma_record *r = &ring[pos & (cap - 1)];
			if (stopped)
				after_stop = true;
			if (r->kind != ULMA_REC_STOP && r->time < last)
				rc->backwards++; /* (the STOP is stamped when the stop began, before the last writes) */
			if (r->kind != ULMA_REC_STOP)
				last = r->time;
			if (r->kind == ULMA_REC_STOP) {
				stopped = true;
			} else if (r->kind == ULMA_REC_NATIVE_ENTER || r->kind == ULMA_REC_NATIVE_EXIT) {
				uint64_t a = (uint64_t)r->id | (uint64_t)r->cpu << 32;
				if (a != fn && a != fn + 16)
					rc->bad_addr++;
			} else if (r->kind != ULMA_REC_LOST) {
				rc->bad_kind++;
			}
		}
		rc->stops += stopped && !after_stop;
		ulma_ring_consume(&s->slots[i], head);
	}
}

/* Writers keep writing while the session stops under them, many times. */
static void test_stop_under_writers(bool use_tsc)
{
	int rounds = 40, clean = 0;
	for (int round = 0; round < rounds; round++) {
		struct ulma_session s;
		if (!CHECK(make_session(&s, use_tsc) == 0, "session"))
			return;
		start(&s);
		atomic_store(&running, 1);
		atomic_store(&writing, 0);
		pthread_t th[THREADS];
		for (int i = 0; i < THREADS; i++)
			pthread_create(&th[i], NULL, writer_thread, NULL);
		while (atomic_load(&writing) < THREADS) /* every thread has its slot */
			usleep(100);
		usleep((useconds_t)(round % 5) * 500);
		stop(); /* the writers are still running */
		usleep(1000);
		atomic_store(&running, 0);
		for (int i = 0; i < THREADS; i++)
			pthread_join(th[i], NULL);
		struct ring_check rc;
		check_rings(&s, (uintptr_t)&writer_thread, &rc);
		if (rc.slots == THREADS && rc.stops == THREADS && !rc.bad_kind && !rc.backwards && !rc.bad_addr)
			clean++;
		else
			CHECK(0, "round %d: %u slots, %u end in their STOP, %u bad kinds, %u backwards, %u bad addresses",
			      round, rc.slots, rc.stops, rc.bad_kind, rc.backwards, rc.bad_addr);
		ulma_session_unmap(&s);
	}
	CHECK(clean == rounds, "%d rounds of %d writers stopped mid-flight (%s): every ring ends in its STOP, in order",
	      rounds, THREADS, use_tsc ? "TSC, the hooks' fast path" : "no TSC, the slow path");
}

/* One thread writes in two sessions in turn: after the stop of the first
 * and the map of the second, its writer of the first (closed, of an older
 * generation) writes nothing more there, and the thread attaches to the
 * second.  The hooks' fast path tests `closed` alone (rt.h). */
static atomic_int phase; /* even: the thread writes batch phase/2; odd: it is done with it; 4: it exits
			  * (a thread that exits first writes no STOP) */

static void *two_sessions_thread(void *arg)
{
	uintptr_t fn = (uintptr_t)arg;
	for (int batch = 0; batch < 2; batch++) {
		while (atomic_load(&phase) != 2 * batch)
			usleep(100);
		for (int i = 0; i < 100; i++) {
			__cyg_profile_func_enter((void *)(fn + 16 * (uintptr_t)batch), NULL);
			__cyg_profile_func_exit((void *)(fn + 16 * (uintptr_t)batch), NULL);
		}
		atomic_store(&phase, 2 * batch + 1);
	}
	while (atomic_load(&phase) != 4)
		usleep(100);
	return NULL;
}

/* The native records of session s, which must all be in one ring and name
 * address `fn`, then its STOP; returns their count, or -1 if anything else. */
static int native_records_then_stop(struct ulma_session *s, uintptr_t fn)
{
	int n = 0, rings = 0;
	for (uint32_t i = 0; i < s->hdr->slot_count; i++) {
		uint64_t head = atomic_load(&s->slots[i].head);
		if (head == 0)
			continue;
		rings++;
		const struct ulma_record *r = ulma_session_ring(s, i);
		for (uint64_t pos = 0; pos < head; pos++) {
			uint64_t a = (uint64_t)r[pos].id | (uint64_t)r[pos].cpu << 32;
			if (r[pos].kind == ULMA_REC_STOP && pos == head - 1)
				continue;
			if ((r[pos].kind != ULMA_REC_NATIVE_ENTER && r[pos].kind != ULMA_REC_NATIVE_EXIT) || a != fn)
				return -1;
			n++;
		}
		if (r[head - 1].kind != ULMA_REC_STOP)
			return -1;
	}
	return rings == 1 ? n : -1;
}

static void test_two_sessions(bool use_tsc)
{
	struct ulma_session s1, s2;
	if (!CHECK(make_session(&s1, use_tsc) == 0 && make_session(&s2, use_tsc) == 0, "sessions"))
		return;
	uintptr_t fn = (uintptr_t)&two_sessions_thread;
	atomic_store(&phase, 0);
	start(&s1);
	pthread_t th;
	pthread_create(&th, NULL, two_sessions_thread, (void *)fn);
	while (atomic_load(&phase) != 1)
		usleep(100);
	stop();
	CHECK(ulma_enabled == 0, "stopped: the C API's flag is off again");
	start(&s2);
	atomic_store(&phase, 2);
	while (atomic_load(&phase) != 3)
		usleep(100);
	stop();
	atomic_store(&phase, 4);
	pthread_join(th, NULL);
	int first = native_records_then_stop(&s1, fn), second = native_records_then_stop(&s2, fn + 16);
	CHECK(first == 200 && second == 200,
	      "one thread, two sessions in turn (%s): 200 records then a STOP in each, none astray (%d, %d)",
	      use_tsc ? "TSC" : "no TSC", first, second);
	ulma_session_unmap(&s1);
	ulma_session_unmap(&s2);
}

/* The C API: zones are ENTER/EXIT of one zone definition per site, and
 * names are definitions; nothing is written when tracing is off. */
static void test_c_api(void)
{
	struct ulma_session s;
	if (!CHECK(make_session(&s, false) == 0, "session"))
		return;
	ulma_instant("before"); /* not tracing: nothing */
	start(&s);
	for (int i = 0; i < 3; i++) {
		ULMA_ZONE_BEGIN(z, "zone-a");
		ulma_counter("depth", 1.5 * i);
		ULMA_ZONE_END(z);
	}
	ulma_instant("mark");
	ulma_thread_name("worker");
	stop();
	ulma_instant("after"); /* stopped: nothing */
	uint32_t slot = UINT32_MAX;
	for (uint32_t i = 0; i < s.hdr->slot_count; i++)
		if (atomic_load(&s.slots[i].head) != 0)
			slot = i;
	if (!CHECK(slot != UINT32_MAX, "the thread wrote"))
		return;
	const struct ulma_record *r = ulma_session_ring(&s, slot);
	uint64_t n = atomic_load(&s.slots[slot].head);
	int enters = 0, exits = 0, values = 0, counters = 0, instants = 0, names = 0, stops = 0;
	uint32_t zone_id = 0;
	bool same_zone = true;
	for (uint64_t k = 0; k < n; k++) {
		switch (r[k].kind) {
		case ULMA_REC_ENTER:
		case ULMA_REC_EXIT:
			*(r[k].kind == ULMA_REC_ENTER ? &enters : &exits) += 1;
			if (zone_id && r[k].id != zone_id)
				same_zone = false;
			zone_id = r[k].id;
			break;
		case ULMA_REC_VALUE:
			values++;
			break;
		case ULMA_REC_COUNTER:
			counters++;
			break;
		case ULMA_REC_INSTANT:
			instants++;
			break;
		case ULMA_REC_THREAD_NAME:
			names++;
			break;
		case ULMA_REC_STOP:
			stops++;
			break;
		default:
			break;
		}
	}
	CHECK(enters == 3 && exits == 3 && same_zone, "three zones of one site: %d enters, %d exits", enters, exits);
	CHECK(counters == 3 && values == 6, "three counters, each after its two value halves");
	CHECK(instants == 1 && names == 1 && stops == 1, "one instant and one thread name while tracing, and a STOP");
	/* the definitions: one zone (file and line of its site), and the marks */
	uint64_t cursor = 0;
	struct ulma_def_view d;
	int zones = 0, marks = 0;
	while (ulma_session_next_def(&s, &cursor, &d) == 1) {
		if (d.kind == ULMA_DEF_ZONE && d.id == zone_id && d.name_len == 6 && memcmp(d.name, "zone-a", 6) == 0 &&
		    d.line > 0 && d.file_len >= 9 && memcmp(d.file + d.file_len - 9, "test_rt.c", 9) == 0)
			zones++;
		if (d.kind == ULMA_DEF_MARK)
			marks++;
	}
	CHECK(zones == 1, "the zone is defined once, with its file and line");
	CHECK(marks == 3, "three mark names: the counter's, once for its three values, the instant's and the thread's (%d)",
	      marks);
	ulma_session_unmap(&s);
}

/* The definitions of kind ULMA_DEF_PROCESS for pid: how many, and
 * whether each says `name` and parent ppid. */
static int process_names(const struct ulma_session *s, pid_t pid, const char *name, pid_t ppid, bool *right)
{
	char parent[16];
	snprintf(parent, sizeof(parent), "%d", (int)ppid);
	uint64_t cursor = 0;
	struct ulma_def_view d;
	int n = 0;
	*right = true;
	while (ulma_session_next_def(s, &cursor, &d) == 1) {
		if (d.kind != ULMA_DEF_PROCESS || d.line != (uint32_t)pid)
			continue;
		n++;
		*right &= d.name_len == strlen(name) && memcmp(d.name, name, d.name_len) == 0 &&
			  d.file_len == strlen(parent) && memcmp(d.file, parent, d.file_len) == 0;
	}
	return n;
}

/* A process names itself before its first thread claims a slot: once per
 * session, and a forked child again, under its own pid, even one that
 * leaves by _exit at once (no stop runs). */
static void test_process_names(void)
{
	struct ulma_session s;
	if (!CHECK(make_session(&s, false) == 0, "session"))
		return;
	start(&s);
	ulma_instant("parent");
	pid_t child = fork();
	if (child == 0) {
		ulma_instant("child");
		_exit(0);
	}
	int status;
	waitpid(child, &status, 0);
	ulma_instant("parent again");
	stop();
	bool right;
	int n = process_names(&s, getpid(), "test_rt", getppid(), &right);
	CHECK(n == 1 && right, "the process named itself once, by its program and its parent (%d)", n);
	n = process_names(&s, child, "test_rt", getpid(), &right);
	CHECK(n == 1 && right, "the forked child too, under its own pid, its parent this process (%d)", n);
	ulma_session_unmap(&s);
}

int main(void)
{
	test_c_api();
	test_process_names();
	test_stop_under_writers(false);
	test_two_sessions(false);
	if (ulma_clock_tsc_usable()) {
		test_stop_under_writers(true);
		test_two_sessions(true);
	} else {
		tap_skip("no usable TSC here: the hooks' fast path is not tested");
	}
	return tap_done();
}
