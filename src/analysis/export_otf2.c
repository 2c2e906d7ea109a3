/* export_otf2.c - the Open Trace Format 2, written with the OTF2 library
 * itself (Debian's libotf2-trace-dev), for Vampir, Scalasca, Score-P's
 * tools and otf2-print.
 *
 * An OTF2 archive is a directory: `traces.otf2` (the anchor file a reader
 * opens), `traces.def` (global definitions) and `traces/` (one event and
 * one local definition file per location).  Each function the frames
 * name is a Region (its name, its file and first line where known; the
 * kind as role, paradigm and description: Python functions FUNCTION/USER,
 * C functions FUNCTION/NONE, native functions FUNCTION/COMPILER, as
 * -finstrument-functions regions are in Score-P, zones CODE/USER); each
 * process a LocationGroup; each thread a CPU_THREAD Location, named as the
 * other exports name its lane (its last thread name where it has one).
 * Every kept frame is an Enter and a Leave on its thread's location.  A
 * counter is an asynchronous Metric of one double member, each value a
 * Metric event in its thread's stream; an instant is a Marker (OTF2's
 * annotations, which Vampir draws on the timeline) of its thread's
 * location, one marker definition per name.
 *
 * Objects over time (--memory on Python 3.13+, export_objects.h): per
 * process, the types with the most objects, each an asynchronous Metric
 * "objects: TYPE (created - destroyed)" of one INT64 member, as chrome and
 * perfetto draw them.  Known only at the end, they go on a location of
 * their own, of type METRIC, in the process's group (`objects (pid N)`),
 * their values merged in time order.
 *
 * Timestamps are the walker's nanoseconds (the hook's cost taken out
 * unless --no-correction): timer resolution 10^9 per second, global
 * offset the trace's CLOCK_MONOTONIC start, so a timestamp is that clock's
 * reading in ns.
 *
 * Events stream through the library's buffers: at most EVENT_CHUNKS chunks
 * of OTF2_CHUNK_SIZE_MIN (256 KiB) per thread (the memory callbacks refuse
 * more, which makes the library flush them to the thread's file), so
 * memory does not grow with the events; definitions are written at the
 * end, when every name is known.
 *
 * MPI (a merged trace, docs/mpi.md; src/core/mpi_event.h): each message
 * sent is an MpiSend, each received an MpiRecv (peer, tag, bytes), on the
 * location of the thread that recorded it; a collective on
 * MPI_COMM_WORLD is an MpiCollectiveBegin and End (operation, root, the
 * bytes this rank gave).  The trace names ranks of MPI_COMM_WORLD whatever
 * the communicator, so every message is written on one communicator,
 * MPI_COMM_WORLD, defined with its group of ranks (a rank's location is
 * its process's first thread); collectives on other communicators, whose
 * members the trace does not list, are left out.
 */
#include <errno.h>
#include <otf2/otf2.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../core/mpi_event.h"
#include "export.h"
#include "export_objects.h"
#include "export_text.h"
#include "ulma/shm.h"

#define ARCHIVE_NAME "traces"
#define NO_REF UINT32_MAX
#define EVENT_CHUNKS 2 /* per thread, before a flush */

struct otf2_loc {
	OTF2_EvtWriter *evt; /* NULL until the thread passes */
	uint32_t objects_of; /* a location past the threads': the objects of this thread's process */
	uint64_t events;
	OTF2_TimeStamp last; /* its latest timestamp */
	/* the collective it is in (MPI), for its end */
	bool in_collective;
	uint8_t collective;  /* enum ulma_mpi_coll */
	uint32_t root;       /* OTF2_UNDEFINED_UINT32: none */
	uint64_t sent;       /* bytes this rank gave */
};

struct otf2_out {
	OTF2_Archive *archive;
	struct otf2_loc *locs; /* by walk thread index */
	uint32_t nlocs;
	uint32_t *region_of;  /* by function key: its region (dense, in order of first frame), or NO_REF */
	uint32_t nregion_of;
	uint32_t *key_of;     /* by region: its function key */
	uint32_t nregions, cap_regions;
	uint32_t *metric_of; /* by walk function index: counter's metric class, or NO_REF */
	uint32_t *marker_of; /* by walk function index: instant's marker definition, or NO_REF */
	uint32_t nmarks;     /* entries in metric_of and marker_of */
	uint32_t nmetrics, nmarkers;
	OTF2_MarkerWriter *markers;
	struct ulma_xobjects objects; /* objects per process and type (--memory on 3.13+) */
	uint32_t *object_metric_of;   /* by type key: its metric class, or NO_REF */
	uint32_t nranks;       /* MPI: highest rank named + 1 (0: no MPI event) */
	uint64_t last_ns; /* latest timestamp, since the trace start */
	int err;          /* the first failure */
};

/* The library reports errors through this callback (by default it prints
 * them); the export turns them into one message of its own. */
static OTF2_ErrorCode quiet_error(void *data, const char *file, uint64_t line, const char *function,
				  OTF2_ErrorCode code, const char *fmt, va_list va)
{
	(void)data, (void)file, (void)line, (void)function, (void)fmt, (void)va;
	return code;
}

static OTF2_FlushType pre_flush(void *data, OTF2_FileType type, OTF2_LocationRef loc, void *callerData, bool final)
{
	(void)data, (void)type, (void)loc, (void)callerData, (void)final;
	return OTF2_FLUSH;
}

static const OTF2_FlushCallbacks flush_callbacks = {.otf2_pre_flush = pre_flush, .otf2_post_flush = NULL};

/* The chunks of one of the library's buffers (its perBufferData). */
struct chunks {
	void *chunk[EVENT_CHUNKS];
	unsigned n;
	bool bounded; /* an event buffer: at most EVENT_CHUNKS */
	struct chunks *more; /* the other buffers' chunks beyond the first EVENT_CHUNKS */
};

/* A chunk for a buffer; NULL for an event buffer that has its
 * EVENT_CHUNKS, which the library then flushes and frees. */
static void *allocate(void *data, OTF2_FileType type, OTF2_LocationRef loc, void **per_buffer, uint64_t size)
{
	(void)data, (void)loc;
	struct chunks *c = *per_buffer;
	if (!c) {
		if (!(c = calloc(1, sizeof(*c))))
			return NULL;
		c->bounded = type == OTF2_FILETYPE_EVENTS;
		*per_buffer = c;
	}
	while (c->n == EVENT_CHUNKS) {
		if (c->bounded)
			return NULL;
		if (!c->more && !(c->more = calloc(1, sizeof(*c->more))))
			return NULL;
		c = c->more;
	}
	void *p = malloc(size);
	if (p)
		c->chunk[c->n++] = p;
	return p;
}

static void free_all(void *data, OTF2_FileType type, OTF2_LocationRef loc, void **per_buffer, bool final)
{
	(void)data, (void)type, (void)loc;
	struct chunks *first = *per_buffer;
	for (struct chunks *c = first, *next; c; c = next) {
		next = c->more;
		for (unsigned i = 0; i < c->n; i++)
			free(c->chunk[i]);
		c->n = 0;
		if (c != first)
			free(c);
	}
	if (first)
		first->more = NULL;
	if (final) {
		free(first);
		*per_buffer = NULL;
	}
}

static const OTF2_MemoryCallbacks memory_callbacks = {.otf2_allocate = allocate, .otf2_free_all = free_all};

static int check(struct otf2_out *o, OTF2_ErrorCode code)
{
	if (code != OTF2_SUCCESS && !o->err) {
		errno = code == OTF2_ERROR_MEM_FAULT || code == OTF2_ERROR_MEM_ALLOC_FAILED ? ENOMEM : EIO;
		o->err = errno == ENOMEM ? -ENOMEM : -EIO;
	}
	return o->err;
}

static int on_thread(void *ctx, const struct ulma_walk *w, uint32_t thread)
{
	struct otf2_out *o = ctx;
	(void)w;
	if (thread >= o->nlocs) {
		uint32_t n = thread + 1 > o->nlocs * 2 ? thread + 1 : o->nlocs * 2;
		struct otf2_loc *p = realloc(o->locs, (size_t)n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		memset(p + o->nlocs, 0, (size_t)(n - o->nlocs) * sizeof(*p));
		o->locs = p;
		o->nlocs = n;
	}
	if (!o->locs[thread].evt) {
		o->locs[thread].evt = OTF2_Archive_GetEvtWriter(o->archive, thread);
		if (!o->locs[thread].evt)
			return check(o, OTF2_ERROR_FILE_INTERACTION);
	}
	return 0;
}

/* The event writer of a passing thread's location, its event counted,
 * and the event's timestamp in *stamp: at_ns on the trace's clock, never
 * before the location's previous one (OTF2 refuses that; only a damaged
 * trace would have it). */
static OTF2_EvtWriter *writer_of(struct otf2_out *o, const struct ulma_walk *w, uint32_t thread, uint64_t at_ns,
				 OTF2_TimeStamp *stamp)
{
	if (thread >= o->nlocs || !o->locs[thread].evt)
		return NULL;
	struct otf2_loc *loc = &o->locs[thread];
	loc->events++;
	if (at_ns > o->last_ns)
		o->last_ns = at_ns;
	*stamp = w->start_ns + at_ns;
	if (*stamp < loc->last)
		*stamp = loc->last;
	loc->last = *stamp;
	return loc->evt;
}

/* The region of function key k, numbered on first use (readers want
 * definitions numbered densely). */
static int region_of(struct otf2_out *o, uint32_t k, uint32_t *region)
{
	if (k >= o->nregion_of) {
		uint32_t n = k + 1 > o->nregion_of * 2 ? k + 1 : o->nregion_of * 2;
		uint32_t *a = realloc(o->region_of, (size_t)n * sizeof(*a));
		if (!a)
			return -ENOMEM;
		for (uint32_t i = o->nregion_of; i < n; i++)
			a[i] = NO_REF;
		o->region_of = a;
		o->nregion_of = n;
	}
	if (o->region_of[k] == NO_REF) {
		if (o->nregions == o->cap_regions) {
			uint32_t n = o->cap_regions ? o->cap_regions * 2 : 64;
			uint32_t *a = realloc(o->key_of, (size_t)n * sizeof(*a));
			if (!a)
				return -ENOMEM;
			o->key_of = a;
			o->cap_regions = n;
		}
		o->key_of[o->nregions] = k;
		o->region_of[k] = o->nregions++;
	}
	*region = o->region_of[k];
	return 0;
}

static int frame_event(struct otf2_out *o, const struct ulma_walk *w, uint32_t thread, uint32_t func, uint64_t ns,
		       bool enter)
{
	OTF2_TimeStamp at;
	OTF2_EvtWriter *evt = writer_of(o, w, thread, ns, &at);
	if (!evt)
		return check(o, OTF2_ERROR_INVALID_ARGUMENT);
	uint32_t region;
	int err = region_of(o, w->funcs[func].key, &region);
	if (err)
		return err;
	return check(o, enter ? OTF2_EvtWriter_Enter(evt, NULL, at, region) : OTF2_EvtWriter_Leave(evt, NULL, at, region));
}

static int on_open(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	return frame_event(ctx, w, thread, f->func, f->start_ns, true);
}

static int on_close(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	return frame_event(ctx, w, thread, f->func, f->end_ns, false);
}

/* A batch of the thread's opens and closes, when nothing is filtered:
 * what on_open and on_close write, without a call per frame, the
 * location's clock and its regions looked up in locals (writer_of's and
 * region_of's steps; the walker's times only grow, so the batch's last is
 * its latest). */
static int on_edges(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_edge *e, size_t n)
{
	struct otf2_out *o = ctx;
	if (thread >= o->nlocs || !o->locs[thread].evt)
		return check(o, OTF2_ERROR_INVALID_ARGUMENT);
	struct otf2_loc *loc = &o->locs[thread];
	OTF2_EvtWriter *evt = loc->evt;
	const struct ulma_walk_func *funcs = w->funcs;
	const uint64_t start = w->start_ns;
	OTF2_TimeStamp last = loc->last;
	int err = 0;
	size_t i;
	for (i = 0; i < n; i++) {
		uint32_t k = funcs[e[i].func].key, region;
		if (k < o->nregion_of && o->region_of[k] != NO_REF)
			region = o->region_of[k];
		else if ((err = region_of(o, k, &region)))
			break;
		OTF2_TimeStamp at = start + e[i].ns;
		last = at > last ? at : last;
		OTF2_ErrorCode code = e[i].open ? OTF2_EvtWriter_Enter(evt, NULL, last, region)
						: OTF2_EvtWriter_Leave(evt, NULL, last, region);
		if (code != OTF2_SUCCESS) {
			err = check(o, code);
			i++; /* counted, as writer_of counts it */
			break;
		}
	}
	loc->events += i;
	loc->last = last;
	if (i && e[i - 1].ns > o->last_ns)
		o->last_ns = e[i - 1].ns;
	return err ? err : o->err;
}

/* Room in metric_of / marker_of for function index func. */
static int ensure_marks(struct otf2_out *o, uint32_t func)
{
	if (func < o->nmarks)
		return 0;
	uint32_t n = func + 1 > o->nmarks * 2 ? func + 1 : o->nmarks * 2;
	uint32_t *a = realloc(o->metric_of, (size_t)n * sizeof(*a));
	if (!a)
		return -ENOMEM;
	o->metric_of = a;
	uint32_t *b = realloc(o->marker_of, (size_t)n * sizeof(*b));
	if (!b)
		return -ENOMEM;
	o->marker_of = b;
	for (uint32_t i = o->nmarks; i < n; i++)
		a[i] = b[i] = NO_REF;
	o->nmarks = n;
	return 0;
}

/* s as valid UTF-8 ("?" when empty), in a new string; NULL when out of memory. */
static char *clean(const char *s)
{
	struct ulma_sbuf b = {0};
	ulma_sbuf_utf8(&b, s && *s ? s : "?");
	if (b.nomem) {
		ulma_sbuf_free(&b);
		return NULL;
	}
	return b.p;
}

static int put_instant(struct otf2_out *o, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_mark *m)
{
	if (!o->markers && !(o->markers = OTF2_Archive_GetMarkerWriter(o->archive)))
		return check(o, OTF2_ERROR_FILE_INTERACTION);
	char *name = clean(w->funcs[m->name].name);
	if (!name)
		return -ENOMEM;
	if (o->marker_of[m->name] == NO_REF) {
		o->marker_of[m->name] = o->nmarkers++;
		check(o, OTF2_MarkerWriter_WriteDefMarker(o->markers, o->marker_of[m->name], "ulma instant", name,
							  OTF2_SEVERITY_NONE));
	}
	if (m->at_ns > o->last_ns)
		o->last_ns = m->at_ns;
	check(o, OTF2_MarkerWriter_WriteMarker(o->markers, w->start_ns + m->at_ns, 0, o->marker_of[m->name],
					       OTF2_MARKER_SCOPE_LOCATION, thread, name));
	free(name);
	return o->err;
}

static int put_counter(struct otf2_out *o, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_mark *m)
{
	if (o->metric_of[m->name] == NO_REF)
		o->metric_of[m->name] = o->nmetrics++;
	OTF2_TimeStamp at;
	OTF2_EvtWriter *evt = writer_of(o, w, thread, m->at_ns, &at);
	if (!evt)
		return check(o, OTF2_ERROR_INVALID_ARGUMENT);
	OTF2_Type type = OTF2_TYPE_DOUBLE;
	OTF2_MetricValue value = {.floating_point = m->value};
	return check(o, OTF2_EvtWriter_Metric(evt, NULL, at, o->metric_of[m->name], 1, &type, &value));
}

/* Instants become markers, counter values metrics; a thread's name is
 * its location's (the walker keeps the last one). */
static int on_mark(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_mark *m)
{
	struct otf2_out *o = ctx;
	if (m->kind == ULMA_EXT_THREAD_NAME)
		return 0;
	int err = ensure_marks(o, m->name);
	if (err)
		return err;
	return m->kind == ULMA_EXT_INSTANT ? put_instant(o, w, thread, m) : put_counter(o, w, thread, m);
}

static int on_object(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_trace_object *o,
		     uint64_t at_ns)
{
	struct otf2_out *out = ctx;
	return ulma_xobjects_add(&out->objects, w, thread, o, at_ns);
}

/* The types with the most objects of each process, as Metric events on a
 * METRIC location of the process after the threads' locations (see the
 * top); their metric classes numbered after the counters'. */
static int put_objects(struct otf2_out *o, const struct ulma_walk *w)
{
	ulma_xobjects_choose(&o->objects);
	if (!o->objects.n)
		return 0;
	if (!(o->object_metric_of = malloc((size_t)w->nfuncs * sizeof(*o->object_metric_of))))
		return -ENOMEM;
	for (uint32_t k = 0; k < w->nfuncs; k++)
		o->object_metric_of[k] = NO_REF;
	uint32_t loc = w->nthreads > o->nlocs ? w->nthreads : o->nlocs;
	for (uint32_t first = 0, end; first < o->objects.n && !o->err; first = end, loc++) {
		struct ulma_xobj_point *pts;
		uint32_t n;
		if (ulma_xobjects_merged(&o->objects, first, &end, &pts, &n))
			return -ENOMEM;
		uint32_t of = n ? o->objects.t[pts[0].track].thread : 0; /* its location group is this thread's */
		if (of >= o->nlocs || !o->locs[of].evt)
			n = 0; /* a process none of whose threads passed: no group to put it in */
		int err = n ? on_thread(o, w, loc) : 0;
		if (err) {
			free(pts);
			return err;
		}
		if (n)
			o->locs[loc].objects_of = of;
		for (uint32_t i = 0; i < n && !o->err; i++) {
			uint32_t type = o->objects.t[pts[i].track].type;
			if (o->object_metric_of[type] == NO_REF)
				o->object_metric_of[type] = o->nmetrics++;
			OTF2_TimeStamp at = 0;
			OTF2_EvtWriter *evt = writer_of(o, w, loc, pts[i].at, &at);
			if (!evt) {
				check(o, OTF2_ERROR_INVALID_ARGUMENT);
				break;
			}
			OTF2_Type kind = OTF2_TYPE_INT64;
			OTF2_MetricValue value = {.signed_int = (int64_t)pts[i].v};
			check(o, OTF2_EvtWriter_Metric(evt, NULL, at, o->object_metric_of[type], 1, &kind, &value));
		}
		free(pts);
	}
	return o->err;
}

static OTF2_CollectiveOp collective_op(uint8_t which)
{
	switch (which) {
	case ULMA_MPI_BARRIER:
		return OTF2_COLLECTIVE_OP_BARRIER;
	case ULMA_MPI_BCAST:
		return OTF2_COLLECTIVE_OP_BCAST;
	case ULMA_MPI_REDUCE:
		return OTF2_COLLECTIVE_OP_REDUCE;
	case ULMA_MPI_ALLREDUCE:
		return OTF2_COLLECTIVE_OP_ALLREDUCE;
	case ULMA_MPI_GATHER:
		return OTF2_COLLECTIVE_OP_GATHER;
	case ULMA_MPI_SCATTER:
		return OTF2_COLLECTIVE_OP_SCATTER;
	case ULMA_MPI_ALLTOALL:
		return OTF2_COLLECTIVE_OP_ALLTOALL;
	default:
		return OTF2_COLLECTIVE_OP_ALLGATHER;
	}
}

static void count_rank(struct otf2_out *o, uint64_t rank)
{
	if (rank < UINT32_MAX && rank + 1 > o->nranks)
		o->nranks = (uint32_t)rank + 1;
}

/* A message's end or a collective's (see the top of the file); other MPI
 * records (INIT, CLOCK) say nothing OTF2 holds. */
static int on_mpi(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_mpi *m)
{
	struct otf2_out *o = ctx;
	const struct ulma_trace_mpi *e = m->ev;
	if (m->rank == UINT32_MAX || thread >= o->nlocs || !o->locs[thread].evt)
		return 0;
	struct otf2_loc *loc = &o->locs[thread];
	OTF2_TimeStamp at = 0;
	count_rank(o, m->rank);
	if ((e->op == ULMA_MPI_SEND || e->op == ULMA_MPI_RECV) && e->nargs >= 4 && e->args[0] < UINT32_MAX) {
		count_rank(o, e->args[0]);
		OTF2_EvtWriter *evt = writer_of(o, w, thread, m->at_ns, &at);
		uint32_t peer = (uint32_t)e->args[0], tag = (uint32_t)ulma_unzigzag(e->args[1]);
		return check(o, e->op == ULMA_MPI_SEND ? OTF2_EvtWriter_MpiSend(evt, NULL, at, peer, 0, tag, e->args[3])
						       : OTF2_EvtWriter_MpiRecv(evt, NULL, at, peer, 0, tag, e->args[3]));
	}
	if (e->op == ULMA_MPI_COLL_BEGIN && e->nargs >= 4 && !loc->in_collective) {
		if (e->args[1] != 0) /* not MPI_COMM_WORLD: left out */
			return 0;
		loc->in_collective = true;
		loc->collective = (uint8_t)e->args[0];
		loc->root = e->args[2] && e->args[2] <= UINT32_MAX ? (uint32_t)(e->args[2] - 1) : OTF2_UNDEFINED_UINT32;
		loc->sent = e->args[3];
		OTF2_EvtWriter *evt = writer_of(o, w, thread, m->at_ns, &at);
		return check(o, OTF2_EvtWriter_MpiCollectiveBegin(evt, NULL, at));
	}
	if (e->op == ULMA_MPI_COLL_END && loc->in_collective) {
		loc->in_collective = false;
		OTF2_EvtWriter *evt = writer_of(o, w, thread, m->at_ns, &at);
		return check(o, OTF2_EvtWriter_MpiCollectiveEnd(evt, NULL, at, collective_op(loc->collective), 0, loc->root,
								loc->sent, 0));
	}
	return 0;
}

/* Global definitions: strings are numbered as they are written, each
 * written before the record that refers to it. */
struct defs {
	struct otf2_out *o;
	OTF2_GlobalDefWriter *gdw;
	uint32_t nstrings;
	uint32_t kinds[4];        /* the strings "python", "c", "native", "zone" */
	struct ulma_idmap shared; /* hash of a file name -> its string */
	const char **shared_text; /* by string: the file name it was made of, if any */
};

static uint32_t def_string(struct defs *d, const char *s)
{
	char *c = clean(s);
	if (!c) {
		if (!d->o->err)
			d->o->err = -ENOMEM;
		return OTF2_UNDEFINED_STRING;
	}
	check(d->o, OTF2_GlobalDefWriter_WriteString(d->gdw, d->nstrings, c));
	free(c);
	return d->nstrings++;
}

static uint64_t hash_text(const char *s)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001b3);
	return h ? h : 1;
}

/* A string for file name s, written once however many regions share it. */
static uint32_t def_file(struct defs *d, const char *s)
{
	uint64_t h = hash_text(s);
	uint32_t id;
	if (ulma_idmap_get(&d->shared, h, &id) && strcmp(d->shared_text[id], s) == 0)
		return id;
	id = def_string(d, s);
	if (id != OTF2_UNDEFINED_STRING && !ulma_idmap_get(&d->shared, h, &(uint32_t){0})) {
		const char **t = realloc(d->shared_text, (size_t)(id + 1) * sizeof(*t));
		if (!t || ulma_idmap_put(&d->shared, h, id) != 0) {
			d->shared_text = t ? t : d->shared_text;
			d->o->err = d->o->err ? d->o->err : -ENOMEM;
			return id;
		}
		d->shared_text = t;
		t[id] = s;
	}
	return id;
}

static uint32_t kind_string(const struct defs *d, uint8_t kind)
{
	if (ulma_def_is_c(kind))
		return d->kinds[1];
	return d->kinds[kind == ULMA_DEF_NATIVE ? 2 : kind == ULMA_DEF_ZONE ? 3 : 0];
}

static void def_region(struct defs *d, const struct ulma_walk *w, uint32_t region)
{
	uint32_t k = d->o->key_of[region];
	const struct ulma_walk_func *f = &w->funcs[k];
	OTF2_RegionRole role = OTF2_REGION_ROLE_FUNCTION;
	OTF2_Paradigm paradigm = OTF2_PARADIGM_USER;
	if (ulma_def_is_c(f->kind))
		paradigm = OTF2_PARADIGM_NONE;
	else if (f->kind == ULMA_DEF_NATIVE)
		paradigm = OTF2_PARADIGM_COMPILER;
	else if (f->kind == ULMA_DEF_ZONE)
		role = OTF2_REGION_ROLE_CODE;
	bool located = ulma_walk_func_located(f);
	uint32_t name = def_string(d, f->name);
	uint32_t kind = kind_string(d, f->kind);
	uint32_t file = located ? def_file(d, f->file) : OTF2_UNDEFINED_STRING;
	check(d->o, OTF2_GlobalDefWriter_WriteRegion(d->gdw, region, name, name, kind, role, paradigm, OTF2_REGION_FLAG_NONE,
						     file, located ? f->line : 0, located ? f->line : 0));
}

/* One location group per process (in order of first thread), in one
 * system tree node for the machine. */
static void def_locations(struct defs *d, const struct ulma_walk *w)
{
	struct otf2_out *o = d->o;
	uint32_t node = def_string(d, "machine"), cls = def_string(d, "node");
	check(o, OTF2_GlobalDefWriter_WriteSystemTreeNode(d->gdw, 0, node, cls, OTF2_UNDEFINED_SYSTEM_TREE_NODE));
	uint32_t *group_of = calloc(w->nthreads ? w->nthreads : 1, sizeof(*group_of));
	if (!group_of) {
		o->err = o->err ? o->err : -ENOMEM;
		return;
	}
	uint32_t ngroups = 0;
	for (uint32_t i = 0; i < w->nthreads && i < o->nlocs; i++) {
		if (!o->locs[i].evt)
			continue;
		uint32_t j = 0;
		while (j < i && !(o->locs[j].evt && w->threads[j].pid == w->threads[i].pid))
			j++;
		if (j < i) {
			group_of[i] = group_of[j];
			continue;
		}
		group_of[i] = ngroups++;
		char label[ULMA_WALK_LABEL_MAX];
		const char *pname = ulma_walk_process_name(w, w->threads[i].pid);
		if (pname)
			snprintf(label, sizeof(label), "%s (pid %u)", pname, w->threads[i].pid);
		else
			snprintf(label, sizeof(label), "pid %u", w->threads[i].pid);
		check(o, OTF2_GlobalDefWriter_WriteLocationGroup(d->gdw, group_of[i], def_string(d, label),
								  OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
								  OTF2_UNDEFINED_LOCATION_GROUP));
	}
	for (uint32_t i = 0; i < w->nthreads && i < o->nlocs; i++) {
		if (!o->locs[i].evt)
			continue;
		char label[ULMA_WALK_LABEL_MAX];
		ulma_walk_thread_label(w, &w->threads[i], label, sizeof(label));
		check(o, OTF2_GlobalDefWriter_WriteLocation(d->gdw, i, def_string(d, label), OTF2_LOCATION_TYPE_CPU_THREAD,
							    o->locs[i].events, group_of[i]));
	}
	for (uint32_t i = w->nthreads; i < o->nlocs; i++) { /* the processes' objects (put_objects) */
		if (!o->locs[i].evt)
			continue;
		char label[64];
		snprintf(label, sizeof(label), "objects (pid %u)", w->threads[o->locs[i].objects_of].pid);
		check(o, OTF2_GlobalDefWriter_WriteLocation(d->gdw, i, def_string(d, label), OTF2_LOCATION_TYPE_METRIC,
							    o->locs[i].events, group_of[o->locs[i].objects_of]));
	}
	free(group_of);
}

/* MPI_COMM_WORLD: its ranks' locations (each rank's process's first
 * thread), its group of ranks, the communicator the MPI events name. */
static void def_world(struct defs *d, const struct ulma_walk *w)
{
	struct otf2_out *o = d->o;
	uint64_t *locs = malloc((size_t)o->nranks * sizeof(*locs)), *ranks = malloc((size_t)o->nranks * sizeof(*ranks));
	if (!locs || !ranks) {
		o->err = o->err ? o->err : -ENOMEM;
		free(locs);
		free(ranks);
		return;
	}
	for (uint32_t r = 0; r < o->nranks; r++) {
		locs[r] = OTF2_UNDEFINED_LOCATION;
		ranks[r] = r;
	}
	for (uint32_t i = 0; i < w->nthreads && i < o->nlocs; i++) {
		uint32_t rank;
		if (o->locs[i].evt && ulma_idmap_get(&w->rank_of_pid, (uint64_t)w->threads[i].pid + 1, &rank) &&
		    rank - 1 < o->nranks && locs[rank - 1] == OTF2_UNDEFINED_LOCATION)
			locs[rank - 1] = i;
	}
	check(o, OTF2_GlobalDefWriter_WriteGroup(d->gdw, 0, def_string(d, "MPI_COMM_WORLD locations"),
						 OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
						 o->nranks, locs));
	check(o, OTF2_GlobalDefWriter_WriteGroup(d->gdw, 1, def_string(d, "MPI_COMM_WORLD ranks"),
						 OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
						 o->nranks, ranks));
	check(o, OTF2_GlobalDefWriter_WriteComm(d->gdw, 0, def_string(d, "MPI_COMM_WORLD"), 1, OTF2_UNDEFINED_COMM,
						OTF2_COMM_FLAG_NONE));
	free(locs);
	free(ranks);
}

/* Metric class `id` of one member: asynchronous values of `type`. */
static void def_metric(struct defs *d, uint32_t id, const char *name, const char *about, const char *unit,
		       OTF2_Type type)
{
	uint32_t n = def_string(d, name), a = def_string(d, about), u = def_string(d, unit);
	check(d->o, OTF2_GlobalDefWriter_WriteMetricMember(d->gdw, id, n, a, OTF2_METRIC_TYPE_USER,
							    OTF2_METRIC_ABSOLUTE_POINT, type, OTF2_BASE_DECIMAL, 0, u));
	OTF2_MetricMemberRef member = id;
	check(d->o, OTF2_GlobalDefWriter_WriteMetricClass(d->gdw, id, 1, &member, OTF2_METRIC_ASYNCHRONOUS,
							  OTF2_RECORDER_KIND_ABSTRACT));
}

/* The counters' metrics (dimensionless doubles), then the objects' (counts). */
static void def_metrics(struct defs *d, const struct ulma_walk *w)
{
	struct otf2_out *o = d->o;
	for (uint32_t k = 0; k < o->nmarks && k < w->nfuncs; k++)
		if (o->metric_of[k] != NO_REF)
			def_metric(d, o->metric_of[k], w->funcs[k].name, "ulma counter", "1", OTF2_TYPE_DOUBLE);
	for (uint32_t k = 0; o->object_metric_of && k < w->nfuncs; k++) {
		if (o->object_metric_of[k] == NO_REF)
			continue;
		char label[ULMA_WALK_LABEL_MAX];
		ulma_xobjects_name(w, &(struct ulma_xobj_track){.type = k}, label, sizeof(label));
		def_metric(d, o->object_metric_of[k], label, "ulma objects", "objects", OTF2_TYPE_INT64);
	}
}

static int write_global_defs(struct otf2_out *o, const struct ulma_walk *w)
{
	struct defs d = {.o = o, .gdw = OTF2_Archive_GetGlobalDefWriter(o->archive)};
	if (!d.gdw)
		return check(o, OTF2_ERROR_FILE_INTERACTION);
	uint64_t length = w->duration_ns > o->last_ns ? w->duration_ns : o->last_ns;
	check(o, OTF2_GlobalDefWriter_WriteClockProperties(d.gdw, UINT64_C(1000000000), w->start_ns, length + 1,
							   OTF2_UNDEFINED_TIMESTAMP));
	static const char *const kinds[4] = {"python", "c", "native", "zone"};
	for (int i = 0; i < 4; i++)
		d.kinds[i] = def_string(&d, kinds[i]);
	for (uint32_t r = 0; r < o->nregions && !o->err; r++)
		def_region(&d, w, r);
	def_locations(&d, w);
	if (o->nranks)
		def_world(&d, w);
	def_metrics(&d, w);
	ulma_idmap_free(&d.shared);
	free(d.shared_text);
	return o->err;
}

/* Close the event writers and write every location's (empty) local
 * definitions, which readers expect beside its events. */
static int close_locations(struct otf2_out *o)
{
	for (uint32_t i = 0; i < o->nlocs; i++)
		if (o->locs[i].evt)
			check(o, OTF2_Archive_CloseEvtWriter(o->archive, o->locs[i].evt));
	check(o, OTF2_Archive_CloseEvtFiles(o->archive));
	check(o, OTF2_Archive_OpenDefFiles(o->archive));
	for (uint32_t i = 0; i < o->nlocs && !o->err; i++) {
		if (!o->locs[i].evt)
			continue;
		OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(o->archive, i);
		if (!dw)
			return check(o, OTF2_ERROR_FILE_INTERACTION);
		check(o, OTF2_Archive_CloseDefWriter(o->archive, dw));
	}
	return check(o, OTF2_Archive_CloseDefFiles(o->archive));
}

int ulma_export_otf2(FILE *in, const struct ulma_export_opts *opts, FILE *out, const char *dir,
		     struct ulma_export_result *res)
{
	struct otf2_out o = {0};
	struct ulma_walk w;
	(void)out;
	OTF2_Error_RegisterCallback(quiet_error, NULL);
	o.archive = OTF2_Archive_Open(dir, ARCHIVE_NAME, OTF2_FILEMODE_WRITE, OTF2_CHUNK_SIZE_MIN,
				      OTF2_CHUNK_SIZE_DEFINITIONS_DEFAULT, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
	if (!o.archive) {
		memset(res, 0, sizeof(*res));
		errno = EIO;
		return -EIO;
	}
	check(&o, OTF2_Archive_SetFlushCallbacks(o.archive, &flush_callbacks, NULL));
	check(&o, OTF2_Archive_SetMemoryCallbacks(o.archive, &memory_callbacks, NULL));
	check(&o, OTF2_Archive_SetSerialCollectiveCallbacks(o.archive));
	check(&o, OTF2_Archive_SetCreator(o.archive, "ulma export"));
	check(&o, OTF2_Archive_OpenEvtFiles(o.archive));
	struct ulma_walk_sink sink = {
		.ctx = &o, .on_thread = on_thread, .on_open = on_open, .on_close = on_close, .on_mark = on_mark,
		.on_mpi = on_mpi, .on_edges = on_edges, .on_object = on_object};
	int err;
	if (o.err) {
		memset(res, 0, sizeof(*res));
		ulma_walk_init(&w, &opts->filter); /* nothing walked, but freed below */
		err = o.err;
	} else {
		err = ulma_export_walk(in, opts, &w, &sink, res);
	}
	if (!o.err && !err)
		err = put_objects(&o, &w);
	if (!o.err && !err && o.markers)
		check(&o, OTF2_Archive_CloseMarkerWriter(o.archive, o.markers));
	if (!o.err && !err)
		close_locations(&o);
	if (!o.err && !err)
		write_global_defs(&o, &w);
	if (OTF2_Archive_Close(o.archive) != OTF2_SUCCESS)
		check(&o, OTF2_ERROR_FILE_INTERACTION);
	if (!err && o.err) {
		err = o.err;
		errno = err == -ENOMEM ? ENOMEM : EIO;
	}
	free(o.locs);
	free(o.region_of);
	free(o.key_of);
	free(o.metric_of);
	free(o.marker_of);
	free(o.object_metric_of);
	ulma_xobjects_free(&o.objects);
	ulma_walk_free(&w);
	return err;
}
