/* pmpi.c - the MPI functions libulma_mpi.so defines, through MPI's
 * standard profiling interface: each calls its PMPI_ twin inside a frame
 * of its own name and records what it sent, received or took part in
 * (mpi_wrap.h, docs/mpi.md).  A process that loads the library before
 * libmpi (`ulma run` preloads it into MPI ranks) calls these instead of
 * libmpi's: C programs, C extensions and mpi4py alike.  Untraced, each
 * costs the PMPI call and a few loads.
 */
#include "mpi_wrap.h"

#include <stdlib.h>

/* ---- start and end: the clocks are compared with rank 0's ---- */

MPI_SITE(MPI_Init);
int MPI_Init(int *argc, char ***argv)
{
	MPI_ENTER(MPI_Init);
	int rc = PMPI_Init(argc, argv);
	if (rc == MPI_SUCCESS)
		ulma_mpi_clock_sync(1);
	MPI_LEAVE(MPI_Init);
	return rc;
}

MPI_SITE(MPI_Init_thread);
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	MPI_ENTER(MPI_Init_thread);
	int rc = PMPI_Init_thread(argc, argv, required, provided);
	if (rc == MPI_SUCCESS)
		ulma_mpi_clock_sync(1);
	MPI_LEAVE(MPI_Init_thread);
	return rc;
}

MPI_SITE(MPI_Finalize);
int MPI_Finalize(void)
{
	MPI_ENTER(MPI_Finalize);
	ulma_mpi_clock_sync(0);
	int rc = PMPI_Finalize();
	MPI_LEAVE(MPI_Finalize);
	return rc;
}

/* ---- point to point ---- */

MPI_SITE(MPI_Send);
int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
	MPI_ENTER(MPI_Send);
	ulma_mpi_sent(comm, dest, tag, count, type);
	int rc = PMPI_Send(buf, count, type, dest, tag, comm);
	MPI_LEAVE(MPI_Send);
	return rc;
}

MPI_SITE(MPI_Ssend);
int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
	MPI_ENTER(MPI_Ssend);
	ulma_mpi_sent(comm, dest, tag, count, type);
	int rc = PMPI_Ssend(buf, count, type, dest, tag, comm);
	MPI_LEAVE(MPI_Ssend);
	return rc;
}

MPI_SITE(MPI_Recv);
int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
	MPI_Status own;
	if (status == MPI_STATUS_IGNORE)
		status = &own;
	MPI_ENTER(MPI_Recv);
	int rc = PMPI_Recv(buf, count, type, source, tag, comm, status);
	if (rc == MPI_SUCCESS)
		ulma_mpi_received(comm, type, status);
	MPI_LEAVE(MPI_Recv);
	return rc;
}

MPI_SITE(MPI_Isend);
int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
	MPI_ENTER(MPI_Isend);
	ulma_mpi_sent(comm, dest, tag, count, type);
	int rc = PMPI_Isend(buf, count, type, dest, tag, comm, req);
	MPI_LEAVE(MPI_Isend);
	return rc;
}

MPI_SITE(MPI_Irecv);
int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request *req)
{
	MPI_ENTER(MPI_Irecv);
	int rc = PMPI_Irecv(buf, count, type, source, tag, comm, req);
	if (rc == MPI_SUCCESS && source != MPI_PROC_NULL)
		ulma_mpi_request_add(*req, comm, type);
	MPI_LEAVE(MPI_Irecv);
	return rc;
}

MPI_SITE(MPI_Sendrecv);
int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf, int rcount,
		 MPI_Datatype rtype, int source, int rtag, MPI_Comm comm, MPI_Status *status)
{
	MPI_Status own;
	if (status == MPI_STATUS_IGNORE)
		status = &own;
	MPI_ENTER(MPI_Sendrecv);
	ulma_mpi_sent(comm, dest, stag, scount, stype);
	int rc = PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status);
	if (rc == MPI_SUCCESS)
		ulma_mpi_received(comm, rtype, status);
	MPI_LEAVE(MPI_Sendrecv);
	return rc;
}

MPI_SITE(MPI_Mprobe);
int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
	MPI_ENTER(MPI_Mprobe);
	int rc = PMPI_Mprobe(source, tag, comm, message, status);
	MPI_LEAVE(MPI_Mprobe);
	return rc;
}

MPI_SITE(MPI_Mrecv);
int MPI_Mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Status *status)
{
	/* a matched message belongs to the communicator it was probed on,
	 * which MPI does not tell: taken as MPI_COMM_WORLD (mpi4py's pickled
	 * messages on COMM_WORLD are right) */
	MPI_Status own;
	if (status == MPI_STATUS_IGNORE)
		status = &own;
	MPI_ENTER(MPI_Mrecv);
	int rc = PMPI_Mrecv(buf, count, type, message, status);
	if (rc == MPI_SUCCESS)
		ulma_mpi_received(MPI_COMM_WORLD, type, status);
	MPI_LEAVE(MPI_Mrecv);
	return rc;
}

/* ---- completion: receives of MPI_Irecv end here ---- */

MPI_SITE(MPI_Wait);
int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
	MPI_Status own;
	if (status == MPI_STATUS_IGNORE)
		status = &own;
	MPI_Request before = *req;
	MPI_ENTER(MPI_Wait);
	int rc = PMPI_Wait(req, status);
	if (rc == MPI_SUCCESS)
		ulma_mpi_request_done(before, status);
	MPI_LEAVE(MPI_Wait);
	return rc;
}

MPI_SITE(MPI_Test);
int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
	MPI_Status own;
	if (status == MPI_STATUS_IGNORE)
		status = &own;
	MPI_Request before = *req;
	MPI_ENTER(MPI_Test);
	int rc = PMPI_Test(req, flag, status);
	if (rc == MPI_SUCCESS && *flag)
		ulma_mpi_request_done(before, status);
	MPI_LEAVE(MPI_Test);
	return rc;
}

/* The handles of n requests before a call completes some, and statuses
 * for a caller that ignores them.  NULL when out of memory: then the
 * call goes on unrecorded. */
struct many {
	MPI_Request *before;
	MPI_Status *statuses;
};

static int many_take(struct many *m, int n, const MPI_Request *reqs, MPI_Status **statuses)
{
	m->before = n > 0 ? malloc((size_t)n * sizeof(*reqs)) : NULL;
	m->statuses = NULL;
	if (!m->before)
		return 0;
	for (int i = 0; i < n; i++)
		m->before[i] = reqs[i];
	if (*statuses == MPI_STATUSES_IGNORE) {
		if (!(m->statuses = malloc((size_t)n * sizeof(MPI_Status)))) {
			free(m->before);
			m->before = NULL;
			return 0;
		}
		*statuses = m->statuses;
	}
	return 1;
}

static void many_free(struct many *m)
{
	free(m->before);
	free(m->statuses);
}

MPI_SITE(MPI_Waitall);
int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[])
{
	struct many m;
	int recorded = many_take(&m, n, reqs, &statuses);
	MPI_ENTER(MPI_Waitall);
	int rc = PMPI_Waitall(n, reqs, statuses);
	if (rc == MPI_SUCCESS && recorded)
		for (int i = 0; i < n; i++)
			ulma_mpi_request_done(m.before[i], &statuses[i]);
	MPI_LEAVE(MPI_Waitall);
	many_free(&m);
	return rc;
}

MPI_SITE(MPI_Testall);
int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
	struct many m;
	int recorded = many_take(&m, n, reqs, &statuses);
	MPI_ENTER(MPI_Testall);
	int rc = PMPI_Testall(n, reqs, flag, statuses);
	if (rc == MPI_SUCCESS && *flag && recorded)
		for (int i = 0; i < n; i++)
			ulma_mpi_request_done(m.before[i], &statuses[i]);
	MPI_LEAVE(MPI_Testall);
	many_free(&m);
	return rc;
}

MPI_SITE(MPI_Waitany);
int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status)
{
	MPI_Status own;
	if (status == MPI_STATUS_IGNORE)
		status = &own;
	struct many m;
	MPI_Status *keep = status;
	int recorded = many_take(&m, n, reqs, &keep);
	MPI_ENTER(MPI_Waitany);
	int rc = PMPI_Waitany(n, reqs, index, status);
	if (rc == MPI_SUCCESS && recorded && *index != MPI_UNDEFINED)
		ulma_mpi_request_done(m.before[*index], status);
	MPI_LEAVE(MPI_Waitany);
	many_free(&m);
	return rc;
}

MPI_SITE(MPI_Testany);
int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status)
{
	MPI_Status own;
	if (status == MPI_STATUS_IGNORE)
		status = &own;
	struct many m;
	MPI_Status *keep = status;
	int recorded = many_take(&m, n, reqs, &keep);
	MPI_ENTER(MPI_Testany);
	int rc = PMPI_Testany(n, reqs, index, flag, status);
	if (rc == MPI_SUCCESS && recorded && *flag && *index != MPI_UNDEFINED)
		ulma_mpi_request_done(m.before[*index], status);
	MPI_LEAVE(MPI_Testany);
	many_free(&m);
	return rc;
}

MPI_SITE(MPI_Waitsome);
int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[])
{
	struct many m;
	int recorded = many_take(&m, n, reqs, &statuses);
	MPI_ENTER(MPI_Waitsome);
	int rc = PMPI_Waitsome(n, reqs, outcount, indices, statuses);
	if (rc == MPI_SUCCESS && recorded && *outcount != MPI_UNDEFINED)
		for (int i = 0; i < *outcount; i++)
			ulma_mpi_request_done(m.before[indices[i]], &statuses[i]);
	MPI_LEAVE(MPI_Waitsome);
	many_free(&m);
	return rc;
}

MPI_SITE(MPI_Testsome);
int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[])
{
	struct many m;
	int recorded = many_take(&m, n, reqs, &statuses);
	MPI_ENTER(MPI_Testsome);
	int rc = PMPI_Testsome(n, reqs, outcount, indices, statuses);
	if (rc == MPI_SUCCESS && recorded && *outcount != MPI_UNDEFINED)
		for (int i = 0; i < *outcount; i++)
			ulma_mpi_request_done(m.before[indices[i]], &statuses[i]);
	MPI_LEAVE(MPI_Testsome);
	many_free(&m);
	return rc;
}

/* ---- collectives ---- */

#define COLLECTIVE(fn, which, comm, root, count, type, call)                                                  \
	MPI_ENTER(fn);                                                                                       \
	ulma_mpi_coll(ULMA_MPI_COLL_BEGIN, which, comm, root, count, type);                                  \
	int rc = call;                                                                                       \
	ulma_mpi_coll(ULMA_MPI_COLL_END, which, comm, root, 0, MPI_DATATYPE_NULL);                           \
	MPI_LEAVE(fn);                                                                                       \
	return rc

MPI_SITE(MPI_Barrier);
int MPI_Barrier(MPI_Comm comm)
{
	COLLECTIVE(MPI_Barrier, ULMA_MPI_BARRIER, comm, -1, 0, MPI_DATATYPE_NULL, PMPI_Barrier(comm));
}

MPI_SITE(MPI_Bcast);
int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
	COLLECTIVE(MPI_Bcast, ULMA_MPI_BCAST, comm, root, count, type, PMPI_Bcast(buf, count, type, root, comm));
}

MPI_SITE(MPI_Reduce);
int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
	COLLECTIVE(MPI_Reduce, ULMA_MPI_REDUCE, comm, root, count, type,
		   PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm));
}

MPI_SITE(MPI_Allreduce);
int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
	COLLECTIVE(MPI_Allreduce, ULMA_MPI_ALLREDUCE, comm, -1, count, type,
		   PMPI_Allreduce(sbuf, rbuf, count, type, op, comm));
}

MPI_SITE(MPI_Gather);
int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
	       int root, MPI_Comm comm)
{
	COLLECTIVE(MPI_Gather, ULMA_MPI_GATHER, comm, root, scount, stype,
		   PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
}

MPI_SITE(MPI_Scatter);
int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
		int root, MPI_Comm comm)
{
	COLLECTIVE(MPI_Scatter, ULMA_MPI_SCATTER, comm, root, rcount, rtype,
		   PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
}

MPI_SITE(MPI_Alltoall);
int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
		 MPI_Comm comm)
{
	COLLECTIVE(MPI_Alltoall, ULMA_MPI_ALLTOALL, comm, -1, scount, stype,
		   PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}

MPI_SITE(MPI_Allgather);
int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
		  MPI_Comm comm)
{
	COLLECTIVE(MPI_Allgather, ULMA_MPI_ALLGATHER, comm, -1, scount, stype,
		   PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}
