/* ring.c - slow paths of the record ring (see ring.h). */
#include "ring.h"

#include <sched.h>
#include <time.h>

#include "clock.h"

/* A monitor whose heartbeat is older than this is taken for dead. */
#define ULMA_MONITOR_DEAD_NS UINT64_C(2000000000)

void ulma_ring_writer_init(struct ulma_ring_writer *w, struct ulma_shm_header *hdr,
			   struct ulma_shm_slot *slot, struct ulma_record *records,
			   uint64_t capacity, bool use_tsc)
{
	w->records = records;
	w->slot = slot;
	w->hdr = hdr;
	w->mask = capacity - 1;
	w->head = atomic_load_explicit(&slot->head, memory_order_relaxed);
	w->limit = 0; /* first write takes the slow path and learns tail */
	w->lost = 0;
	w->lossless = (hdr->flags & ULMA_SHM_LOSSLESS) != 0;
	w->use_tsc = use_tsc;
}

bool ulma_ring_monitor_alive(const struct ulma_shm_header *hdr)
{
	uint64_t beat = atomic_load_explicit(&hdr->heartbeat_ns, memory_order_relaxed);
	uint64_t now = ulma_clock_monotonic_ns();
	return beat != 0 && now < beat + ULMA_MONITOR_DEAD_NS;
}

/* Space for `need` records between head and the consumer's tail? */
static bool has_room(struct ulma_ring_writer *w, uint64_t need, uint64_t *tail)
{
	/* the consumer only frees what it saw published: publish before asking */
	ulma_ring_publish(w);
	/* acquire: pairs with the consumer's release of tail */
	*tail = atomic_load_explicit(&w->slot->tail, memory_order_acquire);
	return w->head + need - *tail <= w->mask + 1;
}

static void wait_for_room(struct ulma_ring_writer *w, uint64_t need, uint64_t *tail)
{
	const struct timespec nap = {0, 50000};
	unsigned spins = 0;
	while (!has_room(w, need, tail)) {
		if (++spins < 64) {
			sched_yield();
			continue;
		}
		if (!ulma_ring_monitor_alive(w->hdr)) {
			w->lossless = false;
			atomic_fetch_or_explicit(&w->hdr->failures, ULMA_FAIL_MONITOR_GONE,
						 memory_order_relaxed);
			return;
		}
		nanosleep(&nap, NULL);
	}
}

bool ulma_ring_make_room(struct ulma_ring_writer *w)
{
	uint64_t need = w->lost ? 2 : 1;
	uint64_t tail;
	if (!has_room(w, need, &tail)) {
		if (!w->lossless)
			return false;
		wait_for_room(w, need, &tail);
		if (!has_room(w, need, &tail))
			return false;
	}
	if (w->lost) {
		uint32_t cpu;
		struct ulma_record *r = &w->records[w->head & w->mask];
		r->time = ulma_clock_now(w->use_tsc, &cpu);
		r->id = w->lost > UINT32_MAX ? UINT32_MAX : (uint32_t)w->lost;
		r->cpu = (uint16_t)cpu;
		r->kind = ULMA_REC_LOST;
		r->flags = 0;
		w->head++;
		w->lost -= r->id;
	}
	/* a huge loss is reported in several markers; keep taking the slow path */
	w->limit = w->lost ? 0 : tail + w->mask + 1;
	return true;
}

void ulma_ring_write_proxy(struct ulma_ring_writer *w, uint64_t time, uint32_t id, uint32_t cpu, uint8_t kind)
{
	uint64_t head = w->head;
	ulma_ring_write(w, time, id, cpu, kind);
	if (w->head != head) /* written (the LOST marker, if any, went before) */
		w->records[(w->head - 1) & w->mask].flags = ULMA_RECF_PROXY;
}

void ulma_ring_writer_flush(struct ulma_ring_writer *w)
{
	if (w->lost) {
		bool lossless = w->lossless;
		w->lossless = false;
		(void)ulma_ring_make_room(w);
		w->lossless = lossless;
	}
	ulma_ring_publish(w);
}
