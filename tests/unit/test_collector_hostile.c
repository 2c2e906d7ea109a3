/* test_collector_hostile.c - the monitor's collector against writers that
 * break the session's format (docs/design.md, "Hostile writers"): each
 * case is what fuzz_rings found or a record of each kind malformed,
 * drained as the monitor drains a session (tests/fuzz/ring_drain.h, which
 * also checks that the trace reads back to the live profile).  A malformed
 * record or definition is refused (counted, dropped), never an error of
 * the run, never a stall of the thread's ring. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../fuzz/cli_stubs.h"
#include "../fuzz/ring_drain.h"
#include "../fuzz/ring_seeds.h"
#include "core/mpi_event.h"
#include "tap.h"

static char trace_path[128];
static FILE *devnull;

/* A seed under construction: definitions written by the real writer of a
 * scratch session, and records. */
struct build {
	struct ulma_session scratch;
	struct ulma_record recs[ULMA_RING_SEED_SLOTS][64];
	struct ulma_ring_seed seed;
};

static void build_init(struct build *b, uint8_t options)
{
	memset(b, 0, sizeof(*b));
	struct ulma_session_config cfg;
	ulma_session_config_default(&cfg);
	cfg.slot_count = 1;
	cfg.ring_records = 64;
	cfg.defs_size = 8192;
	if (ulma_session_create(&cfg, &b->scratch)) {
		perror("scratch session");
		exit(1);
	}
	b->seed.options = options | ULMA_RING_SEED_TRACE;
	b->seed.defs = b->scratch.defs;
}

static uint32_t def(struct build *b, uint8_t kind, const char *name)
{
	uint32_t id = ulma_session_define(&b->scratch, kind, name, strlen(name), "t.py", 4, 1);
	b->seed.defs_len = b->seed.defs_first = (uint32_t)atomic_load(&b->scratch.hdr->defs_used);
	return id;
}

/* Record kind `kind` with id and cpu on slot `slot` (opened on first use,
 * ACTIVE, its records all published), one tick after the last. */
static void rec(struct build *b, uint32_t slot, uint8_t kind, uint32_t id, uint16_t cpu)
{
	struct ulma_ring_seed_slot *sl = &b->seed.slots[slot];
	if (slot >= b->seed.nslots) {
		b->seed.nslots = slot + 1;
		sl->state = ULMA_SLOT_ACTIVE;
		sl->serial = slot;
	}
	b->recs[slot][sl->count] = (struct ulma_record){.time = 1000 + 10 * sl->count, .id = id, .cpu = cpu, .kind = kind};
	sl->records = (const uint8_t *)b->recs[slot];
	sl->count++;
}

static bool drain(struct build *b, struct ulma_ring_drained *d)
{
	bool ok = ulma_ring_seed_drain(&b->seed, trace_path, devnull, d);
	if (!ok)
		tap_diag("%s", d->why);
	return ok;
}

static void done(struct build *b, struct ulma_ring_drained *d)
{
	ulma_ring_drained_free(d);
	ulma_session_unmap(&b->scratch);
	unlink(trace_path);
}

static uint32_t func_named(const struct ulma_profile *p, const char *name)
{
	for (uint32_t i = 0; i < p->nfuncs; i++)
		if (strcmp(p->funcs[i].name, name) == 0)
			return i;
	return UINT32_MAX;
}

/* fuzz_rings: two threads of one serial (and one of 2^64 - 1, which a
 * trace cannot hold) made the trace unreadable ("thread 0 declared twice"). */
static void test_serials_taken(void)
{
	struct build b;
	struct ulma_ring_drained d;
	build_init(&b, 0);
	uint32_t f = def(&b, ULMA_DEF_PY, "f");
	for (uint32_t s = 0; s < 3; s++) {
		rec(&b, s, ULMA_REC_ENTER, f, 0);
		rec(&b, s, ULMA_REC_EXIT, f, 0);
	}
	b.seed.slots[1].serial = 0;
	b.seed.slots[2].serial = UINT64_MAX;
	CHECK(drain(&b, &d), "threads of one serial: the trace reads back");
	CHECK_EQ_U64(d.col.profile.nthreads, 3, "as three threads");
	CHECK(d.col.profile.threads[0].serial != d.col.profile.threads[1].serial &&
	      d.col.profile.threads[2].serial != UINT64_MAX, "of serials of their own");
	CHECK_EQ_U64(d.col.profile.funcs[func_named(&d.col.profile, "f")].calls, 3, "each thread's call counted");
	done(&b, &d);
}

/* fuzz_rings: a LINE with no frame open counted an event live that the
 * trace cannot hold (so `ulma report` differed from the live summary). */
static void test_line_without_frame(void)
{
	struct build b;
	struct ulma_ring_drained d;
	build_init(&b, 0);
	uint32_t f = def(&b, ULMA_DEF_PY, "f");
	rec(&b, 0, ULMA_REC_LINE, 12, 0);
	rec(&b, 0, ULMA_REC_ENTER, f, 0);
	rec(&b, 0, ULMA_REC_LINE, 3, 0);
	rec(&b, 0, ULMA_REC_EXIT, f, 0);
	rec(&b, 0, ULMA_REC_LINE_RESUME, 4, 0);
	CHECK(drain(&b, &d), "lines with no frame open: the trace equals the live profile");
	CHECK_EQ_U64(ulma_profile_events(&d.col.profile), 3, "the enter, the exit and the line inside the frame");
	done(&b, &d);
}

/* fuzz_rings: a native record of address 0 failed the run with ENOMEM
 * (0 is no key of the table), and matched every empty cache entry. */
static void test_native_address_zero(void)
{
	struct build b;
	struct ulma_ring_drained d;
	build_init(&b, 0);
	uint32_t f = def(&b, ULMA_DEF_PY, "f");
	rec(&b, 0, ULMA_REC_NATIVE_EXIT, 0, 0);
	rec(&b, 0, ULMA_REC_ENTER, f, 0);
	rec(&b, 0, ULMA_REC_NATIVE_ENTER, 0, 0);
	rec(&b, 0, ULMA_REC_NATIVE_EXIT, 0, 0);
	rec(&b, 0, ULMA_REC_EXIT, f, 0);
	CHECK(drain(&b, &d), "native records of address 0: no error");
	CHECK_EQ_U64(d.col.refused, 3, "each refused");
	CHECK_EQ_U64(ulma_profile_events(&d.col.profile), 2, "the Python frame's enter and exit kept");
	done(&b, &d);
}

/* A record naming an id no definition has: refused without waiting for
 * the end (before, the thread's ring stalled there until the final poll,
 * its writer losing everything after it), while one whose definition
 * comes later waits for it. */
static void test_undefined_ids(void)
{
	struct build b;
	struct ulma_ring_drained d;
	build_init(&b, 0);
	uint32_t f = def(&b, ULMA_DEF_PY, "f");
	uint32_t at_later = b.seed.defs_len;
	uint32_t later = def(&b, ULMA_DEF_PY, "later");
	b.seed.defs_first = at_later; /* its writer completes it after the first poll: it waits */
	rec(&b, 0, ULMA_REC_ENTER, f, 0);
	rec(&b, 0, ULMA_REC_ENTER, 999999, 0);
	rec(&b, 0, ULMA_REC_EXIT, 999999, 0);
	rec(&b, 0, ULMA_REC_ENTER, later, 0);
	rec(&b, 0, ULMA_REC_EXIT, later, 0);
	rec(&b, 0, ULMA_REC_EXIT, f, 0);
	CHECK(drain(&b, &d), "ids never defined: no error");
	CHECK_EQ_U64(d.col.refused, 2, "the enter and the exit of the undefined id refused");
	CHECK_EQ_U64(ulma_profile_events(&d.col.profile), 4, "the others applied");
	CHECK(func_named(&d.col.profile, "?") == UINT32_MAX, "nothing named \"?\"");
	CHECK_EQ_U64(d.col.resynced, 0, "the stacks stayed whole");
	done(&b, &d);

	/* not stalled: the first poll past the definitions drains it all */
	build_init(&b, 0);
	f = def(&b, ULMA_DEF_PY, "f");
	rec(&b, 0, ULMA_REC_ENTER, 777, 0);
	rec(&b, 0, ULMA_REC_ENTER, f, 0);
	struct ulma_session_config cfg;
	ulma_ring_seed_config(&cfg);
	struct ulma_session s;
	struct ulma_collector col;
	CHECK(ulma_session_create(&cfg, &s) == 0 && ulma_collector_init(&col, &s, NULL) == 0, "a session");
	ulma_ring_seed_fill(&b.seed, &s, (uint32_t)getpid());
	struct ulma_clock_pair start = {0, 0};
	ulma_collector_split(&col, ULMA_SPLIT_NONE, NULL, &start, 1000000000u);
	CHECK_EQ_I64(ulma_collector_poll(&col, false), 2, "one poll, not the final one, takes both records");
	CHECK_EQ_U64(col.refused, 1, "the undefined one refused");
	ulma_collector_free(&col);
	ulma_session_unmap(&s);
	ulma_session_unmap(&b.scratch);
}

/* A definition entry that is complete but malformed (bad magic, lengths
 * past its size) failed the whole run with EPROTO and hid every
 * definition after it. */
static void test_malformed_definition(void)
{
	struct build b;
	struct ulma_ring_drained d;
	build_init(&b, 0);
	uint32_t bad = def(&b, ULMA_DEF_PY, "scribbled");
	uint32_t f = def(&b, ULMA_DEF_PY, "after");
	struct ulma_shm_def *e = (struct ulma_shm_def *)b.scratch.defs;
	e->name_len = 60000; /* past its entry */
	rec(&b, 0, ULMA_REC_ENTER, bad, 0);
	rec(&b, 0, ULMA_REC_ENTER, f, 0);
	rec(&b, 0, ULMA_REC_EXIT, f, 0);
	rec(&b, 0, ULMA_REC_EXIT, bad, 0);
	CHECK(drain(&b, &d), "a malformed definition: no error");
	CHECK(func_named(&d.col.profile, "after") != UINT32_MAX, "the definition after it is read");
	CHECK_EQ_U64(d.col.profile.funcs[func_named(&d.col.profile, "after")].calls, 1, "and its call counted");
	CHECK_EQ_U64(d.col.refused, 3, "the entry refused, and the two records naming it");
	done(&b, &d);

	build_init(&b, 0);
	bad = def(&b, ULMA_DEF_PY, "scribbled");
	e = (struct ulma_shm_def *)b.scratch.defs;
	e->magic = 0; /* the last entry: nothing after it to skip to */
	rec(&b, 0, ULMA_REC_ENTER, bad, 0);
	CHECK(drain(&b, &d), "a malformed last definition: no error");
	CHECK_EQ_U64(d.col.refused, 2, "the entry refused once, and the record naming it");
	done(&b, &d);
}

/* Records of each kind malformed: refused one by one. */
static void test_malformed_records(void)
{
	struct build b;
	struct ulma_ring_drained d;
	build_init(&b, 0);
	uint32_t f = def(&b, ULMA_DEF_PY, "f");
	uint32_t mark = def(&b, ULMA_DEF_MARK, "tick");
	rec(&b, 0, ULMA_REC_ENTER, f, 0);
	rec(&b, 0, 0, 1, 0);                           /* no such kind */
	rec(&b, 0, 19, 1, 0);                          /* nor this one */
	rec(&b, 0, 200, 1, 0);                         /* nor this one */
	rec(&b, 0, ULMA_REC_INSTANT, f, 0);            /* a function's id as a mark */
	rec(&b, 0, ULMA_REC_THREAD_NAME, f, 0);        /* likewise */
	rec(&b, 0, ULMA_REC_INSTANT, mark, 0);         /* a good one */
	rec(&b, 0, ULMA_REC_VALUE, 1, 7);              /* a value's half is 0 or 1 */
	rec(&b, 0, ULMA_REC_ALLOC_SMALL, 4096, 0);     /* memory, not recorded in this session */
	rec(&b, 0, ULMA_REC_OBJ_NEW, f, 0);            /* objects likewise */
	for (unsigned i = 0; i < ULMA_MPI_ARGS_MAX + 2; i++)
		rec(&b, 0, ULMA_REC_MPI_ARG, i, 0);    /* two arguments too many */
	rec(&b, 0, ULMA_REC_MPI_EVENT, ULMA_MPI_SEND, 0);
	rec(&b, 0, ULMA_REC_MPI_EVENT, 0, 0);          /* no operation 0 */
	rec(&b, 0, ULMA_REC_MPI_EVENT, ULMA_MPI_OP_MAX + 1, 0);
	rec(&b, 0, ULMA_REC_EXIT, f, 0);
	CHECK(drain(&b, &d), "malformed records: no error, the trace reads back");
	CHECK_EQ_U64(d.col.refused, 12, "each refused");
	CHECK_EQ_U64(ulma_profile_events(&d.col.profile), 2, "the frame kept");
	CHECK(d.col.profile.threads[0].name == NULL, "no thread named after a function");
	done(&b, &d);

	/* objects of something that is not a type, in a session with memory */
	build_init(&b, ULMA_RING_SEED_MEMORY);
	f = def(&b, ULMA_DEF_PY, "f");
	uint32_t type = def(&b, ULMA_DEF_TYPE, "list");
	rec(&b, 0, ULMA_REC_OBJ_NEW, f, 0);
	rec(&b, 0, ULMA_REC_OBJ_NEW, type, 0);
	rec(&b, 0, ULMA_REC_OBJ_FREE, 4242, 0);
	CHECK(drain(&b, &d), "objects of no type: no error");
	CHECK_EQ_U64(d.col.refused, 2, "refused; the list's kept");
	done(&b, &d);
}

/* Processes name themselves (ULMA_DEF_PROCESS): the name a thread's
 * process wrote, not its /proc command line; a later one (an exec)
 * replaces it; a malformed one is refused. */
static void test_process_names(void)
{
	struct build b;
	struct ulma_ring_drained d;
	build_init(&b, 0);
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	uint32_t f = def(&b, ULMA_DEF_PY, "f");
	ulma_session_define(&b.scratch, ULMA_DEF_PROCESS, "prog a", 6, "1", 1, (uint32_t)getpid());
	ulma_session_define(&b.scratch, ULMA_DEF_PROCESS, "other", 5, "x1", 2, 42);   /* no parent's pid */
	ulma_session_define(&b.scratch, ULMA_DEF_PROCESS, "other", 5, "1", 1, 0);     /* no pid */
	ulma_session_define(&b.scratch, ULMA_DEF_PROCESS, "", 0, pid, strlen(pid), 43); /* no name */
	def(&b, ULMA_DEF_PY, "g");
	rec(&b, 0, ULMA_REC_ENTER, f, 0);
	rec(&b, 0, ULMA_REC_EXIT, f, 0);
	CHECK(drain(&b, &d), "process names: the trace has them as the profile does");
	const char *name = ulma_pid_names_get(&d.col.profile.names, (uint32_t)getpid());
	CHECK(name && strcmp(name, "prog a") == 0, "named as it named itself, not by /proc (%s)", name ? name : "none");
	CHECK(!ulma_pid_names_get(&d.col.profile.names, 42) && !ulma_pid_names_get(&d.col.profile.names, 43),
	      "no name from a malformed definition");
	CHECK_EQ_U64(d.col.refused, 3, "the three malformed ones refused");
	done(&b, &d);

	build_init(&b, 0);
	f = def(&b, ULMA_DEF_PY, "f");
	ulma_session_define(&b.scratch, ULMA_DEF_PROCESS, "prog a", 6, "1", 1, (uint32_t)getpid());
	uint32_t at_exec = (uint32_t)atomic_load(&b.scratch.hdr->defs_used);
	ulma_session_define(&b.scratch, ULMA_DEF_PROCESS, "prog b", 6, "1", 1, (uint32_t)getpid());
	def(&b, ULMA_DEF_PY, "g");
	b.seed.defs_first = at_exec; /* the exec'd program names itself after the first poll */
	rec(&b, 0, ULMA_REC_ENTER, f, 0);
	rec(&b, 0, ULMA_REC_EXIT, f, 0);
	CHECK(drain(&b, &d), "a process that execs: the trace has its names as the profile does");
	name = ulma_pid_names_get(&d.col.profile.names, (uint32_t)getpid());
	CHECK(name && strcmp(name, "prog b") == 0, "named by the program it runs last (%s)", name ? name : "none");
	done(&b, &d);
}

/* What the summary says of them, live and from the trace. */
static void test_summary_says_so(void)
{
	struct build b;
	struct ulma_ring_drained d;
	build_init(&b, 0);
	rec(&b, 0, 77, 1, 0);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	CHECK(ulma_ring_seed_drain(&b.seed, trace_path, out, &d), "drained");
	fclose(out);
	CHECK(text && strstr(text, "refused: 1 malformed record"), "the text summary says so");
	CHECK(text && strstr(text, "\"refused\": 1,"), "and the JSON one");
	free(text);
	done(&b, &d);
}

int main(void)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/tmp/ulma-test-hostile-%d", (int)getpid());
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		perror(dir);
		return 1;
	}
	snprintf(trace_path, sizeof(trace_path), "%s/t.trace", dir);
	devnull = fopen("/dev/null", "w");
	test_serials_taken();
	test_line_without_frame();
	test_native_address_zero();
	test_undefined_ids();
	test_malformed_definition();
	test_malformed_records();
	test_process_names();
	test_summary_says_so();
	rmdir(dir);
	return tap_done();
}
