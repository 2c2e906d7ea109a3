/* api.c - the C API of include/ulma/ulma.h: zones, instants, counters and
 * thread names, written into the calling thread's ring like every other
 * event.
 *
 * A zone is a frame like a function's: its begin is an ENTER and its end
 * an EXIT of a ULMA_DEF_ZONE definition, registered at the site's first
 * use in a session and cached in the site.  Two threads reaching a new
 * site at once may both register it; the monitor merges definitions that
 * are equal.  Instant, counter and thread names are ULMA_DEF_MARK
 * definitions, registered at every call of the C functions (these are
 * rare events; a program that emits them in a hot loop pays for a
 * definition each).  The Python extension defines each mark name once
 * per session (ulma_rt_mark_define) and records it by id (ulma_rt_mark).
 */
#include "rt.h"

#include <string.h>

#include "ulma/ulma.h"

ULMA_RT_API volatile int ulma_enabled;

void ulma_rt_set_active(bool on)
{
	if (on)
		ulma_rt_bind_hooks();
	ulma_rt.active = on;
	ulma_rt_hooks_state = !on ? ULMA_HOOKS_OFF : ulma_rt.use_tsc ? ULMA_HOOKS_ON : ULMA_HOOKS_SLOW;
	ulma_enabled = on;
}

/* Tracing is on, or starts now in an armed process (rt.h). */
static inline bool tracing(void)
{
	return ulma_rt.active || (ulma_rt_hooks_state == ULMA_HOOKS_ARMED && ulma_rt_start_armed());
}

static uint32_t site_id(struct ulma_zone_site *site)
{
	uint32_t gen = __atomic_load_n(&site->generation, __ATOMIC_ACQUIRE);
	if (ULMA_LIKELY(gen == ulma_rt.id_generation && site->id))
		return site->id;
	const char *name = site->name ? site->name : "?";
	const char *file = site->file ? site->file : "~";
	uint32_t id = ulma_session_define(&ulma_rt.session, ULMA_DEF_ZONE, name, strlen(name), file,
					  strlen(file), site->line);
	site->id = id;
	__atomic_store_n(&site->generation, ulma_rt.id_generation, __ATOMIC_RELEASE);
	return id;
}

static void emit(uint8_t kind, uint32_t id)
{
	struct ulma_thread_writer *w = ulma_rt_writer();
	if (!w)
		return;
	uint32_t cpu;
	uint64_t t = ulma_clock_now(ulma_rt.use_tsc, &cpu);
	ulma_ring_write(&w->ring, t, id, cpu, kind);
	ulma_rt_done(w);
}

ULMA_RT_API void ulma_zone_begin(struct ulma_zone_site *site)
{
	if (!site || !tracing())
		return;
	emit(ULMA_REC_ENTER, site_id(site));
}

ULMA_RT_API void ulma_zone_end(struct ulma_zone_site *site)
{
	if (!site || !ulma_rt.active)
		return;
	emit(ULMA_REC_EXIT, site_id(site));
}

ULMA_RT_API uint32_t ulma_rt_mark_define(const char *name, size_t len)
{
	if (!ulma_rt.active)
		return 0;
	return ulma_session_define(&ulma_rt.session, ULMA_DEF_MARK, name, len, "~", 1, 0);
}

/* Mark names the C API defined in this session, by a 64-bit hash of their
 * text (the caller's buffer may be reused for another name): a counter
 * updated in a loop defines its name once, not at every value.  Lock-free;
 * two threads defining one name at once both define it (the monitor
 * merges equal definitions).  A full table defines at every call. */
#define MARK_CACHE 1024 /* a power of two */
#define MARK_PROBES 8
static struct {
	_Atomic uint64_t key;   /* hash of the name, 0: free */
	_Atomic uint64_t value; /* id_generation << 32 | id */
} mark_cache[MARK_CACHE];

static uint32_t mark_id(const char *name)
{
	if (!name)
		name = "?";
	size_t len = 0;
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	for (; name[len]; len++)
		h = (h ^ (uint8_t)name[len]) * UINT64_C(0x100000001b3);
	h |= 1; /* never 0 */
	uint64_t gen = ULMA_RT.id_generation;
	for (unsigned k = 0; k < MARK_PROBES; k++) {
		unsigned i = ((unsigned)(h >> 20) + k) & (MARK_CACHE - 1);
		uint64_t key = atomic_load_explicit(&mark_cache[i].key, memory_order_acquire);
		if (key == 0) {
			uint64_t free_key = 0;
			if (!atomic_compare_exchange_strong(&mark_cache[i].key, &free_key, h) && free_key != h)
				continue; /* another name took the slot */
			key = h;
		}
		if (key != h)
			continue;
		uint64_t v = atomic_load_explicit(&mark_cache[i].value, memory_order_acquire);
		if (v >> 32 == gen && (uint32_t)v)
			return (uint32_t)v;
		uint32_t id = ulma_rt_mark_define(name, len);
		if (id)
			atomic_store_explicit(&mark_cache[i].value, gen << 32 | id, memory_order_release);
		return id;
	}
	return ulma_rt_mark_define(name, len);
}

ULMA_RT_API void ulma_rt_mark(uint8_t kind, uint32_t id, double value)
{
	if (!ulma_rt.active || !id)
		return;
	struct ulma_thread_writer *w = ulma_rt_writer();
	if (!w)
		return;
	uint32_t cpu;
	uint64_t t = ulma_clock_now(ulma_rt.use_tsc, &cpu);
	if (kind == ULMA_REC_COUNTER) { /* the value first, in two halves (shm.h) */
		uint64_t bits;
		memcpy(&bits, &value, sizeof(bits));
		ulma_ring_write(&w->ring, t, (uint32_t)(bits >> 32), 0, ULMA_REC_VALUE);
		ulma_ring_write(&w->ring, t, (uint32_t)bits, 1, ULMA_REC_VALUE);
	}
	ulma_ring_write(&w->ring, t, id, cpu, kind);
	ulma_rt_done(w);
}

ULMA_RT_API void ulma_instant(const char *name)
{
	if (!tracing())
		return;
	ulma_rt_mark(ULMA_REC_INSTANT, mark_id(name), 0);
}

ULMA_RT_API void ulma_counter(const char *name, double value)
{
	if (!tracing())
		return;
	ulma_rt_mark(ULMA_REC_COUNTER, mark_id(name), value);
}

ULMA_RT_API void ulma_thread_name(const char *name)
{
	if (!tracing())
		return;
	ulma_rt_mark(ULMA_REC_THREAD_NAME, mark_id(name), 0);
}

ULMA_RT_API void ulma_rt_mpi_event(uint32_t op, const uint64_t *args, unsigned n)
{
	if (!tracing())
		return;
	struct ulma_thread_writer *w = ulma_rt_writer();
	if (!w)
		return;
	uint32_t cpu;
	uint64_t t = ulma_clock_now(ulma_rt.use_tsc, &cpu);
	for (unsigned i = 0; i < n; i++) /* 48 bits each, as id | cpu << 32 (shm.h) */
		ulma_ring_write(&w->ring, t, (uint32_t)args[i], (uint16_t)(args[i] >> 32), ULMA_REC_MPI_ARG);
	ulma_ring_write(&w->ring, t, op, cpu, ULMA_REC_MPI_EVENT);
	ulma_rt_done(w);
}
