/* export_perfetto.c - Perfetto's own trace format: a `Trace` message, one
 * TracePacket after another, with TrackEvent slices
 * (protos/perfetto/trace/trace_packet.proto, track_event/track_event.proto
 * in the Perfetto repository), which the Perfetto UI and trace processor
 * open natively.
 *
 * Each thread writes on packet sequences of its own, so that everything
 * a packet would repeat is stated once per sequence: its first packet
 * clears the incremental state, sets the packet defaults (the thread's
 * track, and a sequence-scoped incremental clock, id 64, tied by a
 * ClockSnapshot to CLOCK_MONOTONIC at the trace start) and interns the
 * categories.  An event packet then holds only the sequence id, the time
 * since the sequence's previous packet, the event's type and, for a slice
 * begin, the interned id of its name (interned in the packet that first
 * uses it) and, for C, native and zone frames, their category.  A slice
 * end is 10 bytes, a begin 12 (docs/exports.md).  Frames are written as
 * the walker opens and closes them, so memory stays bounded.
 *
 * The thread's on-CPU / runnable / blocked intervals (the trace's OFF
 * records) are slices on a child track of the thread, "cpu state", on a
 * second sequence (the walker hands OFF records on before the delayed
 * opens of a filtered walk, so they keep a clock of their own).
 * Instants are instant events on the thread; counter values are counter
 * events on a counter track of the process; CPU lanes are the scheduler's
 * switches (export_perfetto_lanes.c).  Processes are named with
 * their command, threads with their last thread-name mark.
 *
 * By default the packets are written in batches, each batch deflated
 * (zlib) into one packet's compressed_packets (field 50), which the trace
 * processor inflates and reads as the packets themselves; 6 times
 * smaller.  --no-compress (opts.no_compress), or a build without zlib,
 * writes the packets as they are (the packet writer:
 * export_perfetto_packets.c; what the files share: export_perfetto.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "export_perfetto.h"
#include "ulma/shm.h"

/* Categories interned on every event sequence, by iid (Python frames carry none). */
static const char *const categories[] = {NULL, "c", "native", "zone", "instant", "counter"};
enum { CAT_C = 1, CAT_NATIVE = 2, CAT_ZONE = 3, CAT_INSTANT = 4, CAT_COUNTER = 5, NCATEGORIES = 6 };

/* Names interned on every state sequence, by iid: the state track's slices. */
static const char *const states[] = {NULL, "blocked", "runnable", "GIL", "running"};
enum { STATE_RUNNING_IID = 4 };

static int grow_threads(struct perfetto *c, uint32_t thread)
{
	if (thread < c->nthreads)
		return 0;
	uint32_t n = thread + 1 > c->nthreads * 2 ? thread + 1 : c->nthreads * 2;
	struct pf_thread *p = realloc(c->threads, (size_t)n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p + c->nthreads, 0, (size_t)(n - c->nthreads) * sizeof(*p));
	c->threads = p;
	c->nthreads = n;
	return 0;
}

static void process_descriptor(struct perfetto *c, const struct ulma_walk *w, uint32_t pid)
{
	struct ulma_sbuf p = {0}, d = {0}, pd = {0};
	ulma_pb_put_uint(&pd, PD_PID, pid);
	const char *name = ulma_walk_process_name(w, pid);
	if (name)
		ulma_pb_put_string(&pd, PD_NAME, name);
	ulma_pb_put_uint(&d, TD_UUID, UUID_PROCESS | pid);
	ulma_pb_put_message(&d, TD_PROCESS, &pd);
	ulma_pb_put_message(&p, PKT_TRACK_DESCRIPTOR, &d);
	pf_put_packet_sbuf(c, &p);
	ulma_sbuf_free(&p);
	ulma_sbuf_free(&d);
	ulma_sbuf_free(&pd);
}

static void thread_descriptor(struct perfetto *c, const struct ulma_walk *w, uint32_t thread)
{
	const struct ulma_walk_thread *t = &w->threads[thread];
	struct ulma_sbuf p = {0}, d = {0}, td = {0};
	ulma_pb_put_uint(&td, THD_PID, t->pid);
	ulma_pb_put_uint(&td, THD_TID, t->tid);
	if (t->name < w->nfuncs)
		ulma_pb_put_string(&td, THD_NAME, w->funcs[t->name].name);
	else if (t->tid == t->pid)
		ulma_pb_put_string(&td, THD_NAME, "main thread");
	ulma_pb_put_uint(&d, TD_UUID, (uint64_t)thread + 1);
	ulma_pb_put_message(&d, TD_THREAD, &td);
	ulma_pb_put_message(&p, PKT_TRACK_DESCRIPTOR, &d);
	pf_put_packet_sbuf(c, &p);
	ulma_sbuf_free(&p);
	ulma_sbuf_free(&d);
	ulma_sbuf_free(&td);
}

static int on_thread(void *ctx, const struct ulma_walk *w, uint32_t thread)
{
	struct perfetto *c = ctx;
	int err = grow_threads(c, thread);
	if (err)
		return err;
	const struct ulma_walk_thread *t = &w->threads[thread];
	uint32_t seen;
	if (!ulma_idmap_get(&c->pids, (uint64_t)t->pid + 1, &seen)) {
		if ((err = ulma_idmap_put(&c->pids, (uint64_t)t->pid + 1, 1)))
			return err;
		process_descriptor(c, w, t->pid);
	}
	thread_descriptor(c, w, thread);
	pf_start_sequence(c, w, SEQ_EVENTS(thread), (uint64_t)thread + 1, INT_CATEGORIES, categories, NCATEGORIES);
	struct pf_thread *pt = &c->threads[thread];
	pt->started = true;
	pt->seq_len = (uint8_t)(ulma_pb_uint(pt->seq_field, PKT_SEQUENCE_ID, SEQ_EVENTS(thread)) - pt->seq_field);
	return c->err;
}

/* A packet of one TrackEvent at p: the sequence id seq[0..seq_len), the
 * time since the sequence's previous packet, and the event te[0..n)
 * (n < 64; te holds at least TE_SHORT bytes).  Every length fits in one
 * byte.  Returns the end. */
static inline uint8_t *encode_event(uint8_t *p, const uint8_t *seq, size_t seq_len, uint64_t delta, const uint8_t *te,
				    size_t n)
{
	uint8_t *q = p + 2;
	memcpy(q, seq, 8);
	q += seq_len;
	*q++ = PKT_TIMESTAMP << 3 | ULMA_PB_VARINT;
	q = ulma_pb_varint(q, delta);
	*q++ = PKT_TRACK_EVENT << 3 | ULMA_PB_BYTES;
	*q++ = (uint8_t)n;
	if (__builtin_expect(n <= TE_SHORT, 1))
		memcpy(q, te, TE_SHORT); /* a fixed size: a few moves, where a call to memcpy would cost more */
	else
		memcpy(q, te, n);
	q += n;
	p[0] = TRACE_PACKET << 3 | ULMA_PB_BYTES;
	p[1] = (uint8_t)(q - p - 2);
	return q;
}

/* An event at ns on thread's event sequence, written straight into the
 * output buffer. */
static inline void put_event(struct perfetto *c, uint32_t thread, uint64_t ns, const uint8_t *te, size_t n)
{
	struct pf_thread *pt = &c->threads[thread];
	if (__builtin_expect(c->len >= c->flush_at, 0))
		pf_flush(c);
	uint64_t delta = ns > pt->last_ns ? ns - pt->last_ns : 0; /* never back: the walker's times only grow */
	pt->last_ns += delta;
	c->len = (size_t)(encode_event(c->buf + c->len, pt->seq_field, pt->seq_len, delta, te, n) - c->buf);
}

/* Intern name key (a function's or a mark's) on the thread's sequence
 * if it is not yet: a packet of its own, just before the event using it. */
static int intern_slow(struct perfetto *c, const struct ulma_walk *w, uint32_t thread, uint32_t key)
{
	struct pf_thread *pt = &c->threads[thread];
	uint32_t seen;
	pt->last_interned = key + 1;
	if (ulma_idmap_get(&pt->interned, (uint64_t)key + 1, &seen))
		return 0;
	int err = ulma_idmap_put(&pt->interned, (uint64_t)key + 1, 1);
	if (err)
		return err;
	struct ulma_sbuf p = {0}, m = {0}, n = {0};
	ulma_pb_put_uint(&p, PKT_SEQUENCE_ID, SEQ_EVENTS(thread));
	ulma_pb_put_uint(&n, INTERNED_IID, (uint64_t)key + 1);
	ulma_pb_put_string(&n, INTERNED_NAME, w->funcs[key].name);
	ulma_pb_put_message(&m, INT_NAMES, &n);
	ulma_pb_put_message(&p, PKT_INTERNED_DATA, &m);
	pf_put_packet_sbuf(c, &p);
	ulma_sbuf_free(&p);
	ulma_sbuf_free(&m);
	ulma_sbuf_free(&n);
	return c->err;
}

static inline int intern(struct perfetto *c, const struct ulma_walk *w, uint32_t thread, uint32_t func)
{
	uint32_t key = w->funcs[func].key;
	if (__builtin_expect(c->threads[thread].last_interned == key + 1, 1))
		return 0; /* the function of the thread's previous open: recursion, a loop */
	return intern_slow(c, w, thread, key);
}

static uint8_t category_of(uint8_t kind)
{
	if (ulma_def_is_c(kind))
		return CAT_C;
	if (kind == ULMA_DEF_NATIVE)
		return CAT_NATIVE;
	return kind == ULMA_DEF_ZONE ? CAT_ZONE : 0;
}

static int on_open(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	struct perfetto *c = ctx;
	int err = intern(c, w, thread, f->func);
	if (err)
		return err;
	const struct pf_begin *b = &c->begins[f->func];
	put_event(c, thread, f->start_ns, b->te, b->len);
	return c->err;
}

/* A batch of the thread's opens and closes, when nothing is filtered:
 * what on_open and on_close write, without a call per frame, the
 * thread's clock and the buffer's length in locals (each store into the
 * buffer could alias them), written back around interning and flushing. */
static int on_edges(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_edge *e, size_t n)
{
	struct perfetto *c = ctx;
	static const uint8_t end_te[TE_SHORT] = {EV_TYPE << 3 | ULMA_PB_VARINT, TYPE_END};
	struct pf_thread *pt = &c->threads[thread];
	const struct pf_begin *begins = c->begins;
	const struct ulma_walk_func *funcs = w->funcs;
	uint8_t seq[8];
	memcpy(seq, pt->seq_field, sizeof(seq));
	const size_t seq_len = pt->seq_len, flush_at = c->flush_at;
	uint8_t *const buf = c->buf;
	uint64_t last = pt->last_ns;
	uint32_t last_interned = pt->last_interned;
	size_t len = c->len;
	int err = 0;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *te = end_te;
		size_t tn = 2;
		if (e[i].open) {
			uint32_t key = funcs[e[i].func].key;
			if (__builtin_expect(last_interned != key + 1, 0)) { /* else recursion, a loop: see intern */
				c->len = len;
				err = intern_slow(c, w, thread, key);
				pt = &c->threads[thread];
				last_interned = pt->last_interned;
				len = c->len;
				if (err)
					break;
			}
			te = begins[e[i].func].te;
			tn = begins[e[i].func].len;
		}
		if (__builtin_expect(len >= flush_at, 0)) {
			c->len = len;
			pf_flush(c);
			len = c->len;
		}
		uint64_t delta = e[i].ns > last ? e[i].ns - last : 0; /* never back: the walker's times only grow */
		last += delta;
		len = (size_t)(encode_event(buf + len, seq, seq_len, delta, te, tn) - buf);
	}
	c->len = len;
	pt->last_ns = last;
	return err ? err : c->err;
}

/* A function's begin event, made once: its type, name and category. */
static int on_func(void *ctx, const struct ulma_walk *w, uint32_t func)
{
	struct perfetto *c = ctx;
	if (func >= c->nbegins) {
		uint32_t n = func + 1 > c->nbegins * 2 ? func + 1 : c->nbegins * 2;
		struct pf_begin *p = realloc(c->begins, (size_t)n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		c->begins = p;
		c->nbegins = n;
	}
	struct pf_begin *b = &c->begins[func];
	uint32_t key = w->funcs[func].key;
	uint8_t *q = b->te;
	memset(b, 0, sizeof(*b));
	*q++ = EV_TYPE << 3 | ULMA_PB_VARINT;
	*q++ = TYPE_BEGIN;
	q = ulma_pb_uint(q, EV_NAME_IID, (uint64_t)key + 1); /* at most 6 bytes: a key is 32 bits */
	uint8_t cat = category_of(w->funcs[key].kind);
	if (cat)
		q = ulma_pb_uint(q, EV_CATEGORY_IIDS, cat);
	b->len = (uint8_t)(q - b->te);
	return 0;
}

static int on_close(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	struct perfetto *c = ctx;
	(void)w;
	static const uint8_t te[TE_SHORT] = {EV_TYPE << 3 | ULMA_PB_VARINT, TYPE_END};
	put_event(c, thread, f->end_ns, te, 2);
	return c->err;
}

/* The counter track of (the thread's process, counter name), made at its
 * first value. */
static int counter_track(struct perfetto *c, const struct ulma_walk *w, uint32_t thread, uint32_t name,
			 uint64_t *uuid)
{
	uint32_t pid = w->threads[thread].pid, key = w->funcs[name].key, k;
	uint64_t id = (uint64_t)pid << 32 | ((uint64_t)key + 1);
	if (!ulma_idmap_get(&c->counters, id, &k)) {
		k = c->ncounters++;
		int err = ulma_idmap_put(&c->counters, id, k);
		if (err)
			return err;
		pf_child_descriptor(c, UUID_COUNTER + k, UUID_PROCESS | pid, w->funcs[key].name, true);
	}
	*uuid = UUID_COUNTER + k;
	return c->err;
}

/* An instant on the thread's track, a counter value on its process's
 * counter track; a thread's name goes in its descriptor at the end. */
static int on_mark(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_mark *m)
{
	struct perfetto *c = ctx;
	uint8_t te[48], *q = te;
	int err = 0;
	if (m->kind == ULMA_EXT_INSTANT) {
		if ((err = intern(c, w, thread, m->name)))
			return err;
		q = ulma_pb_uint(q, EV_TYPE, TYPE_INSTANT);
		q = ulma_pb_uint(q, EV_NAME_IID, (uint64_t)w->funcs[m->name].key + 1);
		q = ulma_pb_uint(q, EV_CATEGORY_IIDS, CAT_INSTANT);
	} else if (m->kind == ULMA_EXT_COUNTER) {
		uint64_t uuid, bits;
		if ((err = counter_track(c, w, thread, m->name, &uuid)))
			return err;
		memcpy(&bits, &m->value, sizeof(bits));
		q = ulma_pb_uint(q, EV_TYPE, TYPE_COUNTER);
		q = ulma_pb_uint(q, EV_TRACK_UUID, uuid);
		q = ulma_pb_fixed64(q, EV_DOUBLE_COUNTER, bits);
	} else {
		return 0;
	}
	put_event(c, thread, m->at_ns, te, (size_t)(q - te));
	return c->err;
}

/* A slice [from, to] named by state iid on the thread's state sequence. */
static void state_slice(struct perfetto *c, uint32_t thread, uint64_t iid, uint64_t from, uint64_t to)
{
	struct pf_thread *pt = &c->threads[thread];
	uint64_t seq = SEQ_STATE(thread);
	uint8_t te[16], *q;
	for (int end = 0; end < 2; end++) {
		uint64_t at = end ? to : from, delta = at > pt->state_ns ? at - pt->state_ns : 0;
		pt->state_ns += delta;
		q = ulma_pb_uint(te, EV_TYPE, end ? TYPE_END : TYPE_BEGIN);
		if (!end)
			q = ulma_pb_uint(q, EV_NAME_IID, iid);
		pf_put_track_event(c, seq, delta, te, (size_t)(q - te));
	}
}

/* The running time before an OFF record, then the OFF interval. */
static int on_off(void *ctx, const struct ulma_walk *w, uint32_t thread, uint8_t state, uint32_t cpu, uint64_t at_ns,
		  uint64_t ns)
{
	struct perfetto *c = ctx;
	struct pf_thread *pt = &c->threads[thread];
	const struct ulma_walk_thread *t = &w->threads[thread];
	if (!t->seen || ns == 0)
		return 0; /* before its first traced event (the interpreter starting), or nothing */
	pf_lane_off(c, w, thread, state, cpu, at_ns, ns);
	if (!pt->state_started) {
		pf_child_descriptor(c, UUID_STATE | thread, (uint64_t)thread + 1, "cpu state", false);
		pf_start_sequence(c, w, SEQ_STATE(thread), UUID_STATE | thread, INT_NAMES, states, 5);
		pt->state_started = true;
		pt->on_since = t->first_ns;
	}
	if (at_ns < pt->on_since)
		return 0; /* overlaps the previous interval: a backlog the monitor placed at one time */
	if (at_ns > pt->on_since)
		state_slice(c, thread, STATE_RUNNING_IID, pt->on_since, at_ns);
	uint64_t iid = state < ULMA_OFF_STATES ? (uint64_t)state + 1 : 1;
	state_slice(c, thread, iid, at_ns, at_ns + ns);
	pt->on_since = at_ns + ns;
	if (c->len >= c->flush_at)
		pf_flush(c);
	return c->err;
}

/* An MPI message's send and its receive (of a merged trace, docs/mpi.md)
 * as instants on their threads joined by a flow: the send's flow id ends
 * at the receive.  On the thread's MPI sequence. */
static int on_mpi(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_mpi *m)
{
	struct perfetto *c = ctx;
	struct pf_thread *pt = &c->threads[thread];
	const struct ulma_trace_mpi *e = m->ev;
	uint64_t id;
	if (!ulma_walk_mpi_message_id(m, &id))
		return 0;
	if (!pt->mpi_started) {
		pf_start_sequence(c, w, (uint32_t)SEQ_MPI(thread), (uint64_t)thread + 1, INT_NAMES, states, 1);
		pt->mpi_started = true;
	}
	struct ulma_sbuf p = {0}, te = {0};
	char name[96];
	snprintf(name, sizeof(name), "%s tag %lld, %llu bytes", e->op == ULMA_MPI_SEND ? "MPI send" : "MPI receive",
		 (long long)ulma_unzigzag(e->args[1]), (unsigned long long)e->args[3]);
	uint64_t delta = m->at_ns > pt->mpi_ns ? m->at_ns - pt->mpi_ns : 0;
	pt->mpi_ns += delta;
	uint8_t flow[ULMA_PB_FIELD_MAX];
	uint8_t *q = ulma_pb_fixed64(flow, e->op == ULMA_MPI_SEND ? EV_FLOW_IDS : EV_TERMINATING_FLOW_IDS, id);
	ulma_pb_put_uint(&te, EV_TYPE, TYPE_INSTANT);
	ulma_pb_put_uint(&te, EV_TRACK_UUID, (uint64_t)thread + 1);
	ulma_pb_put_string(&te, EV_NAME, name);
	ulma_pb_put_string(&te, EV_CATEGORIES, "mpi");
	ulma_sbuf_put(&te, (const char *)flow, (size_t)(q - flow));
	ulma_pb_put_uint(&p, PKT_SEQUENCE_ID, SEQ_MPI(thread));
	ulma_pb_put_uint(&p, PKT_TIMESTAMP, delta);
	ulma_pb_put_message(&p, PKT_TRACK_EVENT, &te);
	pf_put_packet_sbuf(c, &p);
	ulma_sbuf_free(&p);
	ulma_sbuf_free(&te);
	return c->err;
}

/* A flow's end: an instant on a thread's track, on the flows sequence. */
static void flow_instant(struct perfetto *c, uint32_t seq, uint64_t *clock, uint32_t thread, uint64_t at_ns,
			 const char *name, uint32_t field, uint64_t id)
{
	struct ulma_sbuf p = {0}, te = {0};
	uint8_t flow[ULMA_PB_FIELD_MAX];
	uint8_t *q = ulma_pb_fixed64(flow, field, id);
	uint64_t delta = at_ns > *clock ? at_ns - *clock : 0;
	*clock += delta;
	ulma_pb_put_uint(&te, EV_TYPE, TYPE_INSTANT);
	ulma_pb_put_uint(&te, EV_TRACK_UUID, (uint64_t)thread + 1);
	ulma_pb_put_string(&te, EV_NAME, name);
	ulma_pb_put_string(&te, EV_CATEGORIES, "process");
	ulma_sbuf_put(&te, (const char *)flow, (size_t)(q - flow));
	ulma_pb_put_uint(&p, PKT_SEQUENCE_ID, seq);
	ulma_pb_put_uint(&p, PKT_TIMESTAMP, delta);
	ulma_pb_put_message(&p, PKT_TRACK_EVENT, &te);
	pf_put_packet_sbuf(c, &p);
	ulma_sbuf_free(&p);
	ulma_sbuf_free(&te);
}

/* Parent -> child process flows (ulma_walk_spawns): an instant "started
 * pid N" on the parent's thread just before the child's first event, its
 * flow ending at an instant "started by pid P" on the child's thread at
 * that event, inside the child's first slice.  On a sequence of their
 * own, after every thread's, in time order. */
static int spawn_flows(struct perfetto *c, const struct ulma_walk *w)
{
	struct ulma_walk_spawn *s;
	uint32_t n;
	int err = ulma_walk_spawns(w, &s, &n);
	if (err || !n)
		return err;
	uint32_t seq = (uint32_t)SEQ_EVENTS(w->nthreads);
	uint64_t clock = 0;
	pf_start_sequence(c, w, seq, (uint64_t)s[0].parent_thread + 1, INT_NAMES, states, 1);
	for (uint32_t i = 0; i < n; i++) {
		char name[64];
		uint64_t id = s[i].flow_id;
		snprintf(name, sizeof(name), "started pid %u", s[i].pid);
		flow_instant(c, seq, &clock, s[i].parent_thread, s[i].at_ns ? s[i].at_ns - 1 : 0, name, EV_FLOW_IDS, id);
		snprintf(name, sizeof(name), "started by pid %u", s[i].ppid);
		flow_instant(c, seq, &clock, s[i].child_thread, s[i].at_ns, name, EV_TERMINATING_FLOW_IDS, id);
	}
	free(s);
	return c->err;
}

static int on_object(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_trace_object *o,
		     uint64_t at_ns)
{
	struct perfetto *c = ctx;
	return ulma_xobjects_add(&c->objects, w, thread, o, at_ns);
}

/* The types with the most objects of each process, each a counter track
 * of the process (known only at the end), on a sequence of its own. */
static void object_counters(struct perfetto *c, const struct ulma_walk *w)
{
	struct ulma_series_point pts[2 * ULMA_XOBJ_BUCKETS + 1];
	char name[ULMA_WALK_LABEL_MAX];
	uint32_t seq = (uint32_t)SEQ_EVENTS(w->nthreads) + 1;
	ulma_xobjects_choose(&c->objects);
	for (uint32_t i = 0; i < c->objects.n && !c->err; i++) {
		const struct ulma_xobj_track *t = &c->objects.t[i];
		if (!t->drawn)
			continue;
		uint64_t uuid = UUID_OBJECTS | i, clock = 0;
		ulma_xobjects_name(w, t, name, sizeof(name));
		pf_child_descriptor(c, uuid, UUID_PROCESS | t->pid, name, true);
		pf_start_sequence(c, w, seq, uuid, INT_NAMES, states, 1);
		uint32_t n = ulma_series_points(&t->s, pts);
		for (uint32_t k = 0; k < n; k++) {
			uint8_t te[32], *q = te;
			uint64_t bits, delta = pts[k].at > clock ? pts[k].at - clock : 0;
			clock += delta;
			memcpy(&bits, &pts[k].v, sizeof(bits));
			q = ulma_pb_uint(q, EV_TYPE, TYPE_COUNTER);
			q = ulma_pb_fixed64(q, EV_DOUBLE_COUNTER, bits);
			pf_put_track_event(c, seq, delta, te, (size_t)(q - te));
			if (c->len >= c->flush_at)
				pf_flush(c);
		}
		seq++;
	}
}

/* Threads' last names and processes' names, known at the end; each
 * thread's running time after its last OFF record. */
static void finish(struct perfetto *c, const struct ulma_walk *w)
{
	for (uint32_t i = 0; i < w->nthreads && i < c->nthreads; i++) {
		const struct ulma_walk_thread *t = &w->threads[i];
		if (!t->pass)
			continue;
		if (t->name < w->nfuncs)
			thread_descriptor(c, w, i);
		if (c->threads[i].state_started && t->last_ns > c->threads[i].on_since)
			state_slice(c, i, STATE_RUNNING_IID, c->threads[i].on_since, t->last_ns);
	}
	for (uint32_t i = 0; i < w->nthreads; i++) {
		const struct ulma_walk_thread *t = &w->threads[i];
		uint32_t done;
		if (t->pass && ulma_idmap_get(&c->pids, (uint64_t)t->pid + 1, &done) && done == 1 &&
		    ulma_walk_process_name(w, t->pid)) {
			process_descriptor(c, w, t->pid); /* a PROCESS chunk may come after the first thread */
			ulma_idmap_put(&c->pids, (uint64_t)t->pid + 1, 2);
		}
	}
}

int ulma_export_perfetto(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
			 struct ulma_export_result *res)
{
	struct perfetto c = {.out = out};
	struct ulma_walk w;
	(void)dir;
	c.cap = o->no_compress ? OUT_CAP_PLAIN : OUT_CAP;
	c.flush_at = c.cap - OUT_ROOM;
	if (o->no_compress && fileno(out) >= 0) /* a file's stream (not a memory stream), nothing written yet */
		setvbuf(out, NULL, _IONBF, 0);  /* on failure, buffered as before */
	c.buf = malloc(c.cap);
	if (!c.buf || pf_deflate_start(&c, o)) {
		free(c.buf);
		memset(res, 0, sizeof(*res));
		return -ENOMEM;
	}
	struct ulma_walk_sink sink = {.ctx = &c,
				      .on_func = on_func,
				      .on_thread = on_thread,
				      .on_open = on_open,
				      .on_close = on_close,
				      .on_mark = on_mark,
				      .on_off = on_off,
				      .on_mpi = on_mpi,
				      .on_edges = on_edges,
				      .on_object = on_object};
	int err = ulma_export_walk(in, o, &w, &sink, res);
	if (!err) {
		finish(&c, &w);
		pf_lanes_finish(&c, &w);
		err = spawn_flows(&c, &w);
		object_counters(&c, &w);
		pf_flush(&c);
		err = err ? err : c.err;
	}
	for (uint32_t i = 0; i < c.nthreads; i++)
		ulma_idmap_free(&c.threads[i].interned);
	free(c.threads);
	free(c.begins);
	pf_lanes_free(&c);
	ulma_xobjects_free(&c.objects);
	ulma_idmap_free(&c.pids);
	ulma_idmap_free(&c.counters);
	free(c.buf);
	pf_deflate_end(&c);
	ulma_walk_free(&w);
	return err;
}
