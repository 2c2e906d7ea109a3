/* hostile_ring.c - a program that writes garbage into its own ring
 * (tests/py/test_native.py runs it under `ulma run`): a C program using
 * the C API, which between two zones writes records that break the
 * session's format (include/ulma/shm.h) through its thread's own ring
 * writer, as a buggy C extension scribbling on the mapping could.  The
 * monitor must survive, apply everything else, refuse exactly these, and
 * say so in the summary (docs/design.md, "Hostile writers").
 *
 * Built against the source tree's runtime headers (src/runtime/rt.h) and
 * ring (src/core/ring.c), and libulma_rt.  Known answers: the zones
 * "first" once and "work" twice, the instant "checkpoint" twice; the
 * garbage records refused, each once.  Prints "refused-written N". */
#include <stdio.h>

#include "runtime/rt.h"
#include "ulma/shm.h"
#include "ulma/ulma.h"

static void work(void)
{
	ULMA_ZONE("work");
	ulma_instant("checkpoint");
}

int main(void)
{
	ulma_instant("start"); /* tracing starts at the first C API call */
	ULMA_ZONE_BEGIN(first, "first");
	work();
	ULMA_ZONE_END(first);
	/* the zone's id: a definition, but not a mark's */
	uint32_t zone = ulma_site_first.id;
	struct ulma_thread_writer *w = ulma_rt_writer();
	if (!w || !zone) {
		fprintf(stderr, "hostile_ring: not tracing\n");
		return 1;
	}
	uint32_t cpu;
	uint64_t t = ulma_clock_now(ulma_rt.use_tsc, &cpu);
	static const struct {
		uint8_t kind;
		uint32_t id;
		uint16_t cpu;
	} garbage[] = {
		{0, 1, 0},                         /* no such kind */
		{19, 1, 0},                        /* nor this */
		{99, 7, 7},                        /* nor this */
		{ULMA_REC_ENTER, 0x7fffff00u, 0},  /* an id no definition has */
		{ULMA_REC_INSTANT, 0, 0},          /* a zone's id as a mark's: set below */
		{ULMA_REC_VALUE, 1, 5},            /* a value's half is 0 or 1 */
		{ULMA_REC_NATIVE_ENTER, 0, 0},     /* address 0 */
		{ULMA_REC_MPI_EVENT, 200, 0},      /* no such MPI operation */
		{ULMA_REC_ALLOC_SMALL, 4096, 0},   /* memory, not recorded in this session */
	};
	unsigned n = sizeof(garbage) / sizeof(garbage[0]);
	for (unsigned i = 0; i < n; i++)
		ulma_ring_write(&w->ring, t, garbage[i].kind == ULMA_REC_INSTANT ? zone : garbage[i].id, garbage[i].cpu,
				garbage[i].kind);
	ulma_rt_done(w);
	work();
	printf("refused-written %u\n", n);
	return 0;
}
