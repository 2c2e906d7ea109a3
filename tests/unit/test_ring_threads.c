/* test_ring_threads.c - the SPSC ring across real threads, meant to run
 * under ThreadSanitizer too (`make tsan` runs ctest -R ring).
 *
 * Lossless: one producer writes N records (id = sequence number, time
 * increasing) while the main thread consumes like the monitor, refreshing
 * the heartbeat; every record must arrive exactly once, in order, with no
 * LOST marker and no failure bit.  Drop mode: two producers on a small
 * ring against a consumer that naps; every record that arrives is in
 * order, each gap in the sequence is exactly the LOST count reported
 * before it, and consumed + lost == written per producer. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/session.h"
#include "tap.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

#define N_RECORDS (UNDER_TSAN ? 2000000u : 5000000u)

struct producer {
	struct ulma_session *s;
	uint32_t tid;
	uint64_t n;
	int slot;            /* claimed slot, or -errno */
	uint64_t residual;   /* writer's lost count after close (no room for a marker) */
	_Atomic int claimed; /* set once slot is known */
	pthread_t thread;
};

/* Per-slot consumer bookkeeping. */
struct tally {
	uint64_t records;  /* data records consumed */
	uint64_t lost;     /* sum of LOST marker counts */
	uint64_t markers;  /* LOST markers */
	uint64_t expect;   /* next sequence number that may arrive */
	uint64_t pending_lost; /* LOST counted since the last data record */
	uint64_t errors;   /* order, content or gap mismatches */
	uint64_t first_error_at;
	bool closed;       /* drained after seeing CLOSED */
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	struct ulma_ring_writer w;
	p->slot = ulma_session_claim_slot(p->s, (uint32_t)getpid(), p->tid, &w);
	atomic_store(&p->claimed, 1);
	if (p->slot < 0)
		return NULL;
	for (uint64_t i = 0; i < p->n; i++)
		ulma_ring_write(&w, i + 1, (uint32_t)i, (uint32_t)(i & 0x3ff),
				(i & 1) ? ULMA_REC_EXIT : ULMA_REC_ENTER);
	ulma_session_close_slot(&w);
	p->residual = w.lost;
	return NULL;
}

static void note_error(struct tally *t, uint64_t at)
{
	if (t->errors++ == 0)
		t->first_error_at = at;
}

/* Consume what is readable in slot i; returns records handled. */
static uint64_t consume_slot(struct ulma_session *s, uint32_t i, struct tally *t)
{
	struct ulma_shm_slot *slot = &s->slots[i];
	uint64_t cap = ulma_session_capacity(s), tail, head, skipped;
	/* acquire: a CLOSED seen here means its final head is visible below */
	uint32_t state = atomic_load_explicit(&slot->state, memory_order_acquire);
	if (state != ULMA_SLOT_ACTIVE && state != ULMA_SLOT_CLOSED)
		return 0;
	ulma_ring_readable(slot, cap, &tail, &head, &skipped);
	if (skipped)
		note_error(t, tail);
	const struct ulma_record *ring = ulma_session_ring(s, i);
	for (uint64_t pos = tail; pos < head; pos++) {
		const struct ulma_record *r = &ring[pos & (cap - 1)];
		if (r->kind == ULMA_REC_LOST) {
			if (r->id == 0)
				note_error(t, t->expect);
			t->lost += r->id;
			t->pending_lost += r->id;
			t->markers++;
			continue;
		}
		uint64_t seq = r->id;
		/* exactly the records reported lost are missing before this one */
		if (seq != t->expect + t->pending_lost || r->time != seq + 1 || r->cpu != (seq & 0x3ff) ||
		    r->kind != ((seq & 1) ? ULMA_REC_EXIT : ULMA_REC_ENTER) || r->flags != 0)
			note_error(t, t->expect);
		t->expect = seq + 1;
		t->pending_lost = 0;
		t->records++;
	}
	ulma_ring_consume(slot, head);
	if (state == ULMA_SLOT_CLOSED)
		t->closed = true;
	return head - tail;
}

static void nap_us(long us)
{
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, NULL);
}

static void test_lossless(void)
{
	struct ulma_session_config cfg;
	struct ulma_session s;
	ulma_session_config_default(&cfg);
	cfg.slot_count = 2;
	cfg.ring_records = 4096;
	cfg.defs_size = 4096;
	cfg.lossless = true;
	cfg.use_tsc = false;
	if (!CHECK_EQ_I64(ulma_session_create(&cfg, &s), 0, "create lossless session"))
		return;
	atomic_store(&s.hdr->heartbeat_ns, ulma_clock_monotonic_ns());

	struct producer p = {.s = &s, .tid = 1001, .n = N_RECORDS};
	struct tally t = {0};
	uint64_t t0 = ulma_clock_monotonic_ns();
	if (!CHECK_EQ_I64(pthread_create(&p.thread, NULL, produce, &p), 0, "start producer"))
		goto out;
	while (!t.closed) {
		atomic_store_explicit(&s.hdr->heartbeat_ns, ulma_clock_monotonic_ns(), memory_order_relaxed);
		if (consume_slot(&s, 0, &t) == 0) {
			if (atomic_load(&p.claimed) && p.slot < 0)
				break;
			sched_yield();
		}
	}
	pthread_join(p.thread, NULL);
	uint64_t ms = (ulma_clock_monotonic_ns() - t0) / 1000000;
	CHECK_EQ_I64(p.slot, 0, "producer claimed slot 0");
	CHECK_EQ_U64(t.records, N_RECORDS, "lossless: every record consumed");
	CHECK_EQ_U64(t.errors, 0, "lossless: each record once, in order, with its time, cpu and kind");
	if (t.errors)
		tap_diag("first mismatch near sequence %llu", (unsigned long long)t.first_error_at);
	CHECK_EQ_U64(t.markers, 0, "lossless: no LOST marker");
	CHECK_EQ_U64(p.residual, 0, "lossless: nothing pending in the writer");
	CHECK_EQ_U64(atomic_load(&s.hdr->failures), 0, "lossless: no failure bits (monitor seen alive)");
	CHECK_EQ_U64(atomic_load(&s.slots[0].tail), N_RECORDS, "tail ends at N");
	tap_diag("lossless: %u records in %llu ms%s", N_RECORDS, (unsigned long long)ms,
		 UNDER_TSAN ? " (TSan build, N lowered)" : "");
out:
	ulma_session_unmap(&s);
}

static void test_drop(void)
{
	struct ulma_session_config cfg;
	struct ulma_session s;
	ulma_session_config_default(&cfg);
	cfg.slot_count = 2;
	cfg.ring_records = 256;
	cfg.defs_size = 4096;
	cfg.lossless = false;
	cfg.use_tsc = false;
	if (!CHECK_EQ_I64(ulma_session_create(&cfg, &s), 0, "create drop-mode session"))
		return;

	enum { NP = 2 };
	struct producer p[NP];
	struct tally t[NP];
	memset(t, 0, sizeof(t));
	int started = 0;
	for (int k = 0; k < NP; k++) {
		p[k] = (struct producer){.s = &s, .tid = 2000u + (uint32_t)k, .n = N_RECORDS / 2};
		if (pthread_create(&p[k].thread, NULL, produce, &p[k]) != 0)
			break;
		started++;
	}
	CHECK_EQ_I64(started, NP, "start two producers");
	for (int k = 0; k < started; k++)
		while (!atomic_load(&p[k].claimed))
			sched_yield();
	int claimed_ok = 1;
	for (int k = 0; k < started; k++)
		if (p[k].slot < 0)
			claimed_ok = 0;
	CHECK(claimed_ok && (started < 2 || p[0].slot != p[1].slot), "producers hold distinct slots");

	uint64_t rounds = 0;
	bool all_closed = !claimed_ok;
	while (!all_closed) {
		all_closed = true;
		for (int k = 0; k < started; k++) {
			struct tally *tk = &t[p[k].slot];
			if (!tk->closed) {
				consume_slot(&s, (uint32_t)p[k].slot, tk);
				all_closed = all_closed && tk->closed;
			}
		}
		/* a slow monitor: the producers must overflow now and then */
		if (++rounds % 64 == 0)
			nap_us(200);
	}
	for (int k = 0; k < started; k++)
		pthread_join(p[k].thread, NULL);

	for (int k = 0; k < started && claimed_ok; k++) {
		struct tally *tk = &t[p[k].slot];
		uint64_t n = p[k].n;
		CHECK_EQ_U64(tk->errors, 0, "drop mode: arrivals in order, each gap equals the LOST count before it");
		if (tk->errors)
			tap_diag("first mismatch near sequence %llu", (unsigned long long)tk->first_error_at);
		CHECK_EQ_U64(tk->records + tk->lost + p[k].residual, n,
			     "drop mode: consumed + lost (+ unreported at close) == written");
		CHECK_EQ_U64(tk->expect + tk->pending_lost + p[k].residual, n,
			     "drop mode: the losses after the last arrival account for the tail");
		/* on a loaded machine the consumer may not run at all while a
		 * producer writes: its drops then stay in the writer (residual),
		 * with no room for a marker at its close */
		CHECK(((tk->lost > 0 && tk->markers > 0) || p[k].residual > 0) && tk->records > 0,
		      "drop mode: the slow consumer caused losses (%llu consumed, %llu lost in %llu markers, %llu left "
		      "in the writer)",
		      (unsigned long long)tk->records, (unsigned long long)tk->lost, (unsigned long long)tk->markers,
		      (unsigned long long)p[k].residual);
		if (p[k].residual)
			tap_diag("producer %d: %llu drops stayed in the writer (no room for the final marker)", k,
				 (unsigned long long)p[k].residual);
	}
	CHECK_EQ_U64(atomic_load(&s.hdr->failures), 0, "drop mode: no failure bits");
	ulma_session_unmap(&s);
}

int main(void)
{
	test_lossless();
	test_drop();
	return tap_done();
}
