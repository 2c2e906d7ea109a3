/* mpi_events.c - the MPI events of libulma_mpi.so: what a message or a
 * collective says, receives in flight, and the clock ping-pong
 * (mpi_wrap.h).
 */
#include "mpi_wrap.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "runtime/rt.h"

#define ARG_MASK ((UINT64_C(1) << 48) - 1)

uint32_t ulma_mpi_comm_id(MPI_Comm comm)
{
	int cmp = MPI_UNEQUAL, inter = 0;
	if (comm == MPI_COMM_WORLD)
		return 0;
	PMPI_Comm_compare(comm, MPI_COMM_WORLD, &cmp);
	if (cmp == MPI_IDENT)
		return 0;
	PMPI_Comm_test_inter(comm, &inter);
	int n = 0;
	PMPI_Comm_size(comm, &n);
	uint32_t h = 2166136261u;
	for (int r = 0; r < n; r++) {
		uint32_t w = (uint32_t)(inter ? r : ulma_mpi_world_rank(comm, r));
		h = (h ^ w) * 16777619u;
	}
	return h | 1u; /* never 0, which is MPI_COMM_WORLD */
}

int ulma_mpi_world_rank(MPI_Comm comm, int r)
{
	int cmp = MPI_UNEQUAL, inter = 0, out = r;
	if (r < 0 || comm == MPI_COMM_WORLD)
		return r;
	PMPI_Comm_compare(comm, MPI_COMM_WORLD, &cmp);
	if (cmp == MPI_IDENT)
		return r;
	PMPI_Comm_test_inter(comm, &inter);
	MPI_Group g, world;
	if (inter)
		PMPI_Comm_remote_group(comm, &g);
	else
		PMPI_Comm_group(comm, &g);
	PMPI_Comm_group(MPI_COMM_WORLD, &world);
	PMPI_Group_translate_ranks(g, 1, &r, world, &out);
	PMPI_Group_free(&g);
	PMPI_Group_free(&world);
	return out == MPI_UNDEFINED ? r : out;
}

static uint64_t bytes_of(int count, MPI_Datatype type)
{
	int size = 0;
	if (count <= 0 || type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS || size < 0)
		return 0;
	return (uint64_t)count * (uint64_t)size & ARG_MASK;
}

void ulma_mpi_sent(MPI_Comm comm, int dest, int tag, int count, MPI_Datatype type)
{
	if (!ulma_enabled || dest < 0) /* MPI_PROC_NULL: no message */
		return;
	uint64_t a[4] = {(uint64_t)ulma_mpi_world_rank(comm, dest), ulma_zigzag(tag), ulma_mpi_comm_id(comm),
			 bytes_of(count, type)};
	ulma_rt_mpi_event(ULMA_MPI_SEND, a, 4);
}

void ulma_mpi_received(MPI_Comm comm, MPI_Datatype type, const MPI_Status *status)
{
	if (!ulma_enabled || !status || status->MPI_SOURCE < 0) /* MPI_PROC_NULL */
		return;
	int count = 0;
	PMPI_Get_count(status, type, &count);
	uint64_t a[4] = {(uint64_t)ulma_mpi_world_rank(comm, status->MPI_SOURCE), ulma_zigzag(status->MPI_TAG),
			 ulma_mpi_comm_id(comm), count == MPI_UNDEFINED ? 0 : bytes_of(count, type)};
	ulma_rt_mpi_event(ULMA_MPI_RECV, a, 4);
}

void ulma_mpi_coll(enum ulma_mpi_op op, enum ulma_mpi_coll which, MPI_Comm comm, int root, int count,
		   MPI_Datatype type)
{
	if (!ulma_enabled)
		return;
	int size = 0;
	if (op == ULMA_MPI_COLL_BEGIN)
		PMPI_Comm_size(comm, &size);
	uint64_t a[5] = {which, ulma_mpi_comm_id(comm), root < 0 ? 0 : (uint64_t)ulma_mpi_world_rank(comm, root) + 1,
			 bytes_of(count, type), (uint64_t)size};
	ulma_rt_mpi_event(op, a, op == ULMA_MPI_COLL_BEGIN ? 5 : 2);
}

/* Receives in flight: an open-addressing table keyed by the request's
 * handle (a pointer in Open MPI, an int in MPICH).  A program with more
 * in flight than it holds loses the extra receives' events (counted). */
#define REQUESTS 8192 /* a power of two */
struct pending {
	uint64_t key; /* 0: free */
	MPI_Comm comm;
	MPI_Datatype type;
};
static struct pending pending[REQUESTS];
static unsigned npending;
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t key_of(MPI_Request req)
{
	uint64_t k = 0;
	memcpy(&k, &req, sizeof(req) < sizeof(k) ? sizeof(req) : sizeof(k));
	return k;
}

static unsigned slot_of(uint64_t k)
{
	return (unsigned)((k * UINT64_C(0x9e3779b97f4a7c15)) >> 40) & (REQUESTS - 1);
}

void ulma_mpi_request_add(MPI_Request req, MPI_Comm comm, MPI_Datatype type)
{
	uint64_t k = key_of(req);
	if (!ulma_enabled || req == MPI_REQUEST_NULL || !k)
		return;
	pthread_mutex_lock(&pending_lock);
	if (npending < REQUESTS / 2) {
		unsigned i = slot_of(k);
		while (pending[i].key && pending[i].key != k)
			i = (i + 1) & (REQUESTS - 1);
		if (!pending[i].key)
			npending++;
		pending[i] = (struct pending){k, comm, type};
	}
	pthread_mutex_unlock(&pending_lock);
}

void ulma_mpi_request_done(MPI_Request req, const MPI_Status *status)
{
	uint64_t k = key_of(req);
	if (!k || req == MPI_REQUEST_NULL || !npending)
		return;
	struct pending found = {0};
	pthread_mutex_lock(&pending_lock);
	unsigned i = slot_of(k);
	while (pending[i].key && pending[i].key != k)
		i = (i + 1) & (REQUESTS - 1);
	if (pending[i].key == k) {
		found = pending[i];
		/* backward-shift deletion keeps every probe chain whole */
		unsigned j = i;
		for (;;) {
			pending[i].key = 0;
			for (;;) {
				j = (j + 1) & (REQUESTS - 1);
				if (!pending[j].key)
					goto removed;
				unsigned home = slot_of(pending[j].key);
				if ((i <= j) ? (home <= i || home > j) : (home <= i && home > j))
					break;
			}
			pending[i] = pending[j];
			i = j;
		}
	removed:
		npending--;
	}
	pthread_mutex_unlock(&pending_lock);
	if (found.key)
		ulma_mpi_received(found.comm, found.type, status);
}

/* The clock the ping-pong reads: CLOCK_MONOTONIC, as the monitor's trace
 * converts to, shifted as the tests ask (mpi_rank.h). */
static int64_t clock_ns(void)
{
	static int64_t skew = INT64_MIN;
	if (skew == INT64_MIN) {
		const char *v = getenv("ULMA_TEST_CLOCK_SKEW_NS");
		skew = v && *v ? strtoll(v, NULL, 10) : 0;
	}
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + skew;
}

#define PINGS 20 /* round trips per rank; the shortest gives the offset */
#define SYNC_TAG 0x756c /* on a duplicate of MPI_COMM_WORLD, so no program message matches */

void ulma_mpi_clock_sync(int at_init)
{
	int rank = 0, size = 1;
	MPI_Comm comm;
	/* always, traced now or not: every rank that loaded this library takes
	 * part, or the others would wait for it (only the recording depends
	 * on tracing) */
	if (PMPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS)
		return;
	PMPI_Comm_rank(comm, &rank);
	PMPI_Comm_size(comm, &size);
	int64_t offset = 0, best = INT64_MAX;
	for (int peer = 1; peer < size; peer++) {
		for (int k = 0; k < PINGS; k++) {
			int64_t t0;
			if (rank == 0) {
				PMPI_Recv(&t0, 1, MPI_INT64_T, peer, SYNC_TAG, comm, MPI_STATUS_IGNORE);
				t0 = clock_ns();
				PMPI_Send(&t0, 1, MPI_INT64_T, peer, SYNC_TAG, comm);
			} else if (rank == peer) {
				int64_t t1 = clock_ns();
				PMPI_Send(&t1, 1, MPI_INT64_T, 0, SYNC_TAG, comm);
				PMPI_Recv(&t0, 1, MPI_INT64_T, 0, SYNC_TAG, comm, MPI_STATUS_IGNORE);
				int64_t t2 = clock_ns();
				if (t2 - t1 < best) { /* rank 0 read t0 halfway through, give or take */
					best = t2 - t1;
					offset = t1 + (t2 - t1) / 2 - t0;
				}
			}
		}
	}
	if (at_init) {
		uint64_t run = 0;
		if (rank == 0 && getrandom(&run, sizeof(run), 0) != sizeof(run))
			run = (uint64_t)clock_ns() ^ (uint64_t)getpid() << 32;
		PMPI_Bcast(&run, 1, MPI_UINT64_T, 0, comm);
		uint64_t a[4] = {(uint64_t)rank, (uint64_t)size, run & 0xffffffffu, run >> 32};
		ulma_rt_mpi_event(ULMA_MPI_INIT, a, 4);
	}
	uint64_t zz = ulma_zigzag(offset);
	uint64_t c[3] = {zz & 0xffffffffu, zz >> 32, rank == 0 ? 0 : (uint64_t)best & ARG_MASK};
	ulma_rt_mpi_event(ULMA_MPI_CLOCK, c, 3);
	PMPI_Comm_free(&comm);
}
