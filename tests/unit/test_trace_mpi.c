/* test_trace_mpi.c - MPI in the trace (version 6, docs/mpi.md): MPI
 * events (ULMA_EXT_MPI) come back in order with the thread's events, not
 * counted as events, with their operation and arguments (48 bits each);
 * a rank's chunk and a merged trace's rank and merge chunks round-trip;
 * a reader without on_mpi skips the events; an event with too many
 * arguments is corruption. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fuzz/fix_checksums.h"
#include "core/mpi_event.h"
#include "core/trace_reader.h"
#include "core/trace_writer.h"
#include "tap.h"
#include "ulma/shm.h"
#include "ulma/trace_format.h"

#define NMPI 8

struct seen {
	struct ulma_trace_mpi mpi[NMPI];
	size_t events_before[NMPI];
	size_t nmpi, nevents;
	struct ulma_trace_rank ranks[2];
	char hosts[2][16];
	unsigned nranks;
	struct ulma_trace_merge merge;
	unsigned nmerge;
};

static int on_events(void *ctx, uint32_t thread, const struct ulma_trace_event *ev, size_t n)
{
	(void)thread;
	(void)ev;
	((struct seen *)ctx)->nevents += n;
	return 0;
}

static int on_mpi(void *ctx, const struct ulma_trace_mpi *m)
{
	struct seen *s = ctx;
	if (s->nmpi < NMPI) {
		s->mpi[s->nmpi] = *m;
		s->events_before[s->nmpi] = s->nevents;
	}
	s->nmpi++;
	return 0;
}

static int on_rank(void *ctx, const struct ulma_trace_rank *r)
{
	struct seen *s = ctx;
	if (s->nranks < 2) {
		s->ranks[s->nranks] = *r;
		snprintf(s->hosts[s->nranks], sizeof(s->hosts[0]), "%.*s", (int)r->host_len, r->host);
	}
	s->nranks++;
	return 0;
}

static int on_merge(void *ctx, const struct ulma_trace_merge *m)
{
	struct seen *s = ctx;
	s->merge = *m;
	s->nmerge++;
	return 0;
}

static const uint64_t big = (UINT64_C(1) << 48) - 1;

/* rank 3 of 4 on node-7: MPI_Send (a send event inside), MPI_Recv (a receive) */
static int write_rank(const char *path, bool merged)
{
	struct ulma_trace_meta meta = {ULMA_META_TSC, 50, 1000, 5000, 1000000000u, "./prog", 0};
	struct ulma_trace_writer *w;
	struct ulma_trace_stream *s;
	int err = ulma_trace_writer_open(path, &meta, &w);
	if (err)
		return err;
	ulma_trace_define_file(w, 1, "<MPI>", 5);
	ulma_trace_define_func(w, 1, ULMA_DEF_ZONE, 1, 0, "MPI_Send", 8);
	ulma_trace_define_func(w, 2, ULMA_DEF_ZONE, 1, 0, "MPI_Recv", 8);
	struct ulma_trace_rank r = {.pid = 50, .rank = 3, .size = 4, .host = "node-7", .host_len = 6};
	if (merged) {
		r.merged = true;
		r.events = 4;
		r.mpi_ns = 777;
		r.offset_init_ns = -3000000000;
		r.offset_final_ns = 12;
		r.unmatched = 1;
	}
	if ((err = ulma_trace_mpi_rank(w, &r)) || (err = ulma_trace_stream_open(w, 0, 50, 50, &s))) {
		ulma_trace_writer_abandon(w);
		return err;
	}
	uint64_t send[5] = {0, ulma_zigzag(-5), 0x8000001, 1024, 7}, recv[4] = {big, ulma_zigzag(9), 0, 0};
	ulma_trace_enter(s, 1100, 0, 1, false);
	ulma_trace_mpi(s, 1101, ULMA_MPI_SEND, send, merged ? 5 : 4);
	ulma_trace_exit(s, 1200, 0);
	ulma_trace_enter(s, 1300, 0, 2, false);
	ulma_trace_mpi(s, 1390, ULMA_MPI_RECV, recv, 4);
	ulma_trace_exit(s, 1400, 0);
	if (merged) {
		struct ulma_trace_merge m = {4, 10, 51, 3000000000u, 20, 1, 2};
		ulma_trace_mpi_merge(w, &m);
	}
	struct ulma_trace_end end = {2000, 6000, 4, 0, 0, 0, ULMA_SPLIT_NONE, 0, 0, 0, 0, 0, 0};
	return ulma_trace_writer_close(w, &end);
}

static void round_trip(const char *path, bool merged)
{
	struct seen s;
	memset(&s, 0, sizeof(s));
	struct ulma_trace_visitor v = {.ctx = &s, .on_events = on_events, .on_mpi = on_mpi,
				       .on_mpi_rank = on_rank, .on_mpi_merge = on_merge};
	struct ulma_trace_status st;
	CHECK_EQ_I64(write_rank(path, merged), 0, "the trace is written");
	CHECK_EQ_I64(ulma_trace_read_path(path, &v, &st), 0, "and read back");
	CHECK(st.complete && st.version == ULMA_TRACE_VERSION, "complete, version 6");
	CHECK_EQ_U64(st.events, 4, "MPI events are not events");
	CHECK_EQ_U64(s.nmpi, 2, "both MPI events");
	CHECK(s.mpi[0].op == ULMA_MPI_SEND && s.mpi[0].ticks == 1101 && s.events_before[0] == 1,
	      "the send, inside MPI_Send, after its entry");
	CHECK(s.mpi[0].nargs == (merged ? 5 : 4) && s.mpi[0].args[0] == 0 && ulma_unzigzag(s.mpi[0].args[1]) == -5 &&
		      s.mpi[0].args[2] == 0x8000001 && s.mpi[0].args[3] == 1024,
	      "its peer, tag, comm and bytes");
	CHECK(!merged || s.mpi[0].args[4] == 7, "a merged send's message number");
	CHECK(s.mpi[1].op == ULMA_MPI_RECV && s.mpi[1].args[0] == big && s.mpi[1].args[5] == 0 &&
		      s.events_before[1] == 3,
	      "the receive, a 48-bit argument, unused arguments 0");
	CHECK(s.nranks == 1 && s.ranks[0].rank == 3 && s.ranks[0].size == 4 && s.ranks[0].pid == 50 &&
		      strcmp(s.hosts[0], "node-7") == 0 && s.ranks[0].merged == merged,
	      "the rank chunk");
	if (merged) {
		CHECK(s.ranks[0].events == 4 && s.ranks[0].mpi_ns == 777 && s.ranks[0].offset_init_ns == -3000000000 &&
			      s.ranks[0].offset_final_ns == 12 && s.ranks[0].unmatched == 1,
		      "a merged rank's figures, a negative offset");
		CHECK(s.nmerge == 1 && s.merge.ranks == 4 && s.merge.moved == 10 && s.merge.max_move_ns == 51 &&
			      s.merge.max_offset_ns == 3000000000u && s.merge.messages == 20 && s.merge.unmatched == 1 &&
			      s.merge.moves == 2,
		      "the merge chunk");
	} else {
		CHECK_EQ_U64(s.nmerge, 0, "a rank's trace has no merge chunk");
	}
	/* a reader that does not ask for MPI skips it */
	struct seen quiet;
	memset(&quiet, 0, sizeof(quiet));
	struct ulma_trace_visitor q = {.ctx = &quiet, .on_events = on_events};
	CHECK(ulma_trace_read_path(path, &q, &st) == 0 && quiet.nevents == 4, "skipped without on_mpi");
}

/* an MPI event claiming 7 arguments is refused */
static void too_many_arguments(const char *path)
{
	CHECK_EQ_I64(write_rank(path, false), 0, "the trace is written");
	FILE *f = fopen(path, "r+b");
	uint8_t *data = malloc(1 << 16);
	size_t n = f ? fread(data, 1, 1 << 16, f) : 0;
	/* the send: ext word, ULMA_EXT_MPI, op 1, nargs 4 -> make nargs 7 */
	size_t at = 0;
	for (size_t i = 0; i + 3 < n; i++)
		if (data[i] == ULMA_EXT_MPI && data[i + 1] == ULMA_MPI_SEND && data[i + 2] == 4 && data[i + 3] == 0) {
			at = i + 2;
			break;
		}
	CHECK(at != 0, "the send's encoding is found");
	if (at) {
		data[at] = 7;
		ulma_fuzz_fix_checksums(data, n); /* so the decoder, not the checksum, sees the change */
		fseek(f, 0, SEEK_SET);
		fwrite(data, 1, n, f);
	}
	fclose(f);
	free(data);
	struct ulma_trace_status st;
	struct seen s;
	memset(&s, 0, sizeof(s));
	struct ulma_trace_visitor v = {.ctx = &s, .on_mpi = on_mpi};
	CHECK_EQ_I64(ulma_trace_read_path(path, &v, &st), -EPROTO, "a changed MPI event is refused");
	CHECK(strstr(st.error, "MPI event with 7 arguments") != NULL, "saying why: %s", st.error);
}

int main(void)
{
	char path[] = "/tmp/ulma-test-trace-mpi-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return 1;
	close(fd);
	round_trip(path, false);
	round_trip(path, true);
	too_many_arguments(path);
	unlink(path);
	return tap_done();
}
