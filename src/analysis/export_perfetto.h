/* export_perfetto.h - what the perfetto exporter's files share: the
 * Perfetto protos' field numbers, the track uuids and packet sequences
 * ulma uses, the exporter's state, and its packet writer
 * (export_perfetto_packets.c).  Private to src/analysis/export_perfetto*.c;
 * single-threaded.  The writer's functions never fail on their own: a
 * write or allocation error is kept in c->err (the first one), and later
 * writes do nothing.
 */
#ifndef ULMA_EXPORT_PERFETTO_H
#define ULMA_EXPORT_PERFETTO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "export.h"
#include "export_objects.h"
#include "protobuf.h"
#if defined(ULMA_HAVE_ISAL)
#include <isa-l/igzip_lib.h>
#define ULMA_PERFETTO_COMPRESS 1
#elif defined(ULMA_HAVE_LIBDEFLATE)
#include <libdeflate.h>
#define ULMA_PERFETTO_COMPRESS 1
#elif defined(ULMA_HAVE_ZLIB)
#include <zlib.h>
#define ULMA_PERFETTO_COMPRESS 1
#endif

/* Field numbers, from the Perfetto protos named above. */
enum {
	TRACE_PACKET = 1,             /* Trace.packet */
	PKT_CLOCK_SNAPSHOT = 6,       /* TracePacket */
	PKT_TIMESTAMP = 8,
	PKT_SEQUENCE_ID = 10,         /* trusted_packet_sequence_id */
	PKT_TRACK_EVENT = 11,
	PKT_INTERNED_DATA = 12,
	PKT_SEQUENCE_FLAGS = 13,
	PKT_COMPRESSED = 50,          /* compressed_packets */
	PKT_DEFAULTS = 59,            /* trace_packet_defaults */
	PKT_TRACK_DESCRIPTOR = 60,
	DEF_CLOCK_ID = 58,            /* TracePacketDefaults.timestamp_clock_id */
	DEF_TRACK_EVENT = 11,         /* TracePacketDefaults.track_event_defaults */
	TED_TRACK_UUID = 11,          /* TrackEventDefaults.track_uuid */
	SNAP_CLOCKS = 1,              /* ClockSnapshot */
	SNAP_PRIMARY = 2,
	CLOCK_ID = 1,                 /* ClockSnapshot.Clock */
	CLOCK_TIMESTAMP = 2,
	CLOCK_INCREMENTAL = 3,
	EV_CATEGORY_IIDS = 3,         /* TrackEvent */
	EV_TYPE = 9,
	EV_NAME_IID = 10,
	EV_TRACK_UUID = 11,
	EV_DOUBLE_COUNTER = 44,
	EV_NAME = 23,
	EV_CATEGORIES = 22,
	EV_FLOW_IDS = 47,
	EV_TERMINATING_FLOW_IDS = 48,
	INT_CATEGORIES = 1,           /* InternedData.event_categories */
	INT_NAMES = 2,                /* InternedData.event_names */
	INTERNED_IID = 1,             /* EventCategory, EventName */
	INTERNED_NAME = 2,
	TD_UUID = 1,                  /* TrackDescriptor */
	TD_NAME = 2,
	TD_PROCESS = 3,
	TD_THREAD = 4,
	TD_PARENT = 5,
	TD_COUNTER = 8,
	PD_PID = 1,                   /* ProcessDescriptor */
	PD_NAME = 6,
	THD_PID = 1,                  /* ThreadDescriptor */
	THD_TID = 2,
	THD_NAME = 5,
};

enum { TYPE_BEGIN = 1, TYPE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
enum { SEQ_CLEARED = 1 };
enum { CLOCK_MONOTONIC_ID = 3, CLOCK_BOOTTIME_ID = 6, CLOCK_INCREMENTAL_ID = 64 };

/* Track uuids: a thread's is its index + 1 (small, as it is in no event);
 * the others live in ranges of their own. */
#define UUID_PROCESS (UINT64_C(1) << 32)
#define UUID_STATE (UINT64_C(2) << 32)
#define UUID_COUNTER (UINT64_C(3) << 32)
#define UUID_OBJECTS (UINT64_C(4) << 32)

/* A thread's three sequences, each with its own clock: its frames and
 * marks, its state track, its MPI messages (the walker hands OFF records
 * and MPI events on as they come, before the delayed opens of a filtered
 * walk, and an OFF record's running slice starts before the events that
 * precede it).  After every thread's: the process flows' sequence
 * (SEQ_EVENTS(nthreads)), then one per object counter. */
#define SEQ_EVENTS(thread) (3 * (uint64_t)(thread) + 1)
#define SEQ_STATE(thread) (3 * (uint64_t)(thread) + 2)
#define SEQ_MPI(thread) (3 * (uint64_t)(thread) + 3)

/* The batch compressed into one packet; and the deflate level, ISA-L's,
 * libdeflate's or zlib's (bench/deflate.c, docs/exports.md).  Uncompressed, the batch
 * is larger, OUT_CAP_PLAIN, and written with write() straight from the
 * buffer (the stream unbuffered): stdio's 4 KiB buffer split each 32 KiB
 * batch into two writes at offsets off the page size. */
#define OUT_CAP (1u << 15)
#define OUT_CAP_PLAIN (1u << 20)
#define DEFLATE_LEVEL 1
#define OUT_ROOM 256 /* a batch is flushed with less room than this: one more event packet */

struct pf_thread {
	bool started;        /* its event sequence's first packet written */
	bool state_started;  /* its state sequence's */
	uint64_t last_ns;    /* the event sequence's clock */
	uint64_t state_ns;   /* the state sequence's clock */
	uint64_t on_since;   /* end of the latest OFF interval */
	struct ulma_idmap interned; /* name iids interned on its event sequence */
	uint32_t last_interned;     /* the latest key looked up there, + 1 (recursion repeats it) */
	uint8_t seq_field[8];       /* its event sequence's id field, encoded */
	uint8_t seq_len;
	bool mpi_started;           /* its MPI sequence's first packet written */
	uint64_t mpi_ns;            /* that sequence's clock */
	bool lane_started;          /* an OFF record seen: it has CPU lanes */
	uint64_t lane_since;        /* raw end of its latest OFF interval (export_perfetto_lanes.c) */
};

#define TE_SHORT 16 /* put_event's te has at least this many bytes */

/* A function's begin TrackEvent, encoded. */
struct pf_begin {
	uint8_t te[TE_SHORT];
	uint8_t len;
};

struct perfetto {
	FILE *out;
	struct pf_begin *begins; /* per function */
	uint32_t nbegins;
	uint8_t *buf; /* cap bytes: OUT_CAP, or OUT_CAP_PLAIN if not compressed */
	size_t len;
	size_t cap;
	size_t flush_at; /* cap - OUT_ROOM */
#if defined(ULMA_HAVE_ISAL)
	uint8_t *level_buf; /* ISA-L's work area at level 1; set: batches are compressed */
#elif defined(ULMA_HAVE_LIBDEFLATE)
	struct libdeflate_compressor *deflater; /* set: batches are compressed */
#elif defined(ULMA_HAVE_ZLIB)
	z_stream z;
	bool deflating;   /* z is initialized: batches are compressed */
#endif
#ifdef ULMA_PERFETTO_COMPRESS
	uint8_t *zbuf;    /* a compressed batch */
	size_t zcap;
#endif
	int err;
	struct pf_thread *threads;
	uint32_t nthreads;
	struct ulma_idmap pids;     /* pid + 1 -> 1: its process descriptor is written */
	struct ulma_idmap counters; /* pid << 32 | name key + 1 -> counter index */
	uint32_t ncounters;
	struct ulma_sbuf *cpus;     /* per CPU: its sched_switch events not yet written */
	uint32_t ncpus;
	bool lanes_tied;            /* BOOTTIME's clock snapshot written */
	struct ulma_xobjects objects; /* objects per process and type (--memory on 3.13+) */
};

/* Start compressing the batches, unless o->no_compress (or a build
 * without libdeflate and zlib): 0 or -ENOMEM. */
int pf_deflate_start(struct perfetto *c, const struct ulma_export_opts *o);
void pf_deflate_end(struct perfetto *c);

/* Write the batch out (deflated into one packet where compressing). */
void pf_flush(struct perfetto *c);

/* Append a packet whose body is body[0..n), or p's bytes (an
 * allocation failure in building p sets c->err). */
void pf_put_packet(struct perfetto *c, const uint8_t *body, size_t n);
void pf_put_packet_sbuf(struct perfetto *c, struct ulma_sbuf *p);

/* A packet of sequence seq, delta after its previous one, holding the
 * TrackEvent te[0..n) (a short one: at most 48 bytes). */
void pf_put_track_event(struct perfetto *c, uint64_t seq, uint64_t delta, const uint8_t *te, size_t n);

/* The first packet of sequence seq: incremental state cleared, the
 * defaults (track, and the incremental clock), the clock's tie to
 * MONOTONIC at the trace start, and names[1..nnames) interned in
 * names_field by iid. */
void pf_start_sequence(struct perfetto *c, const struct ulma_walk *w, uint32_t seq, uint64_t track,
		       uint32_t names_field, const char *const *names, uint32_t nnames);

/* Append to packet p a ClockSnapshot: clock `other` reads ns where
 * MONOTONIC (the primary clock) does; incremental: a sequence's own. */
void pf_put_clock_snapshot(struct ulma_sbuf *p, uint64_t ns, uint32_t other, bool incremental);

/* A named track under parent (a process's counter, a thread's state). */
void pf_child_descriptor(struct perfetto *c, uint64_t uuid, uint64_t parent, const char *name, bool counter);

/* CPU lanes (export_perfetto_lanes.c): a passing, seen thread's OFF
 * record (on_off's arguments) as sched_switch events; at the end, each
 * thread's last interval, and every CPU's events written out; then the
 * buffers freed (also after an error).  Errors go to c->err. */
void pf_lane_off(struct perfetto *c, const struct ulma_walk *w, uint32_t thread, uint8_t state, uint32_t cpu,
		 uint64_t at_ns, uint64_t ns);
void pf_lanes_finish(struct perfetto *c, const struct ulma_walk *w);
void pf_lanes_free(struct perfetto *c);

#endif
