/* trace_format.h - the on-disk trace (.ulma) format, version 3.
 *
 * A trace is a 16-byte file header followed by chunks.  Each chunk is a
 * 12-byte header (type, payload length, CRC-32C of the payload) and its
 * payload.  Chunks are self-delimiting, so every prefix of a trace that ends
 * on a chunk boundary is a valid trace; a reader stops cleanly at a cut.
 * Definitions always precede the events that use them.  The full
 * specification is docs/trace-format.md.
 */
#ifndef ULMA_TRACE_FORMAT_H
#define ULMA_TRACE_FORMAT_H

#include <stdint.h>

#define ULMA_TRACE_MAGIC "ULMATRC\x01"
#define ULMA_TRACE_VERSION 6u     /* 6: native allocations (domain 3), objects per type, MPI events, ranks and merges;
				   * 5: lines and source copies, memory;
				   * 4: native functions, zones and marks;
                                   * 3: off-CPU intervals in the event stream, END's monitor figures;
				   * 2: SCHED chunks say how many values a sample has */
#define ULMA_TRACE_MIN_VERSION 1u /* the oldest version this ulma reads */
#define ULMA_TRACE_FILE_HEADER 16u
#define ULMA_TRACE_CHUNK_HEADER 12u
#define ULMA_TRACE_MAX_CHUNK (64u << 20) /* larger payloads are corrupt */

enum ulma_chunk_type {
	ULMA_CHUNK_META = 1,   /* session facts: clock, start pair, pid, command */
	ULMA_CHUNK_DEFS = 2,   /* file and function definitions */
	ULMA_CHUNK_THREAD = 3, /* a thread: serial, pid, tid */
	ULMA_CHUNK_EVENTS = 4, /* one thread's events, delta-varint encoded */
	ULMA_CHUNK_END = 5,    /* end pair and totals; present only if complete */
	ULMA_CHUNK_SCHED = 6,  /* one thread's schedstat samples: ticks, cpu ns, wait ns[, gil ns] */
	ULMA_CHUNK_OVERHEAD = 7, /* the hook's measured cost per event, in ps */
	ULMA_CHUNK_PROCESS = 8,  /* a process's command line, as shown: pid, length, bytes */
	ULMA_CHUNK_MPI_RANK = 9, /* (version 6) an MPI rank: pid, rank, size, host length, host bytes,
				  * then (merged traces) events, ns in MPI, clock offsets at init and finalize */
	ULMA_CHUNK_MPI_MERGE = 10, /* (version 6) what `ulma merge` did: ranks, events moved, largest
				    * move (ns), largest clock offset (ns), messages, unmatched */
};

enum ulma_def_tag {
	ULMA_DEFTAG_FILE = 1, /* varint file_id, varint len, bytes */
	ULMA_DEFTAG_FUNC = 2, /* varint id, u8 kind, varint file_id, varint line, varint len, bytes */
	ULMA_DEFTAG_SOURCE = 3, /* (version 5) varint file_id, varint ulma_source_flag bits, varint len,
				 * bytes: the file's text as the monitor read it during the run */
};

enum ulma_source_flag {
	ULMA_SOURCE_CHANGED = 1u << 0, /* modified after the program started: may not be what ran */
	ULMA_SOURCE_CUT = 1u << 1,     /* longer than the copy kept: its first bytes only */
};

/* Event word: varint (delta_ticks << 2 | tag). */
enum ulma_event_tag {
	ULMA_TAG_EXIT = 0,        /* leave the innermost open frame */
	ULMA_TAG_ENTER = 1,       /* followed by varint function id */
	ULMA_TAG_ENTER_SAME = 2,  /* enter the function of the innermost open frame again */
	ULMA_TAG_EXT = 3,         /* followed by varint ulma_ext_kind and its operands */
};

enum ulma_ext_kind {
	ULMA_EXT_CPU = 0,  /* varint cpu: later events of this thread ran there */
	ULMA_EXT_LOST = 1, /* varint count: records dropped here; stacks were resynchronised */
	ULMA_EXT_OFF = 2,  /* varint ulma_off_state, varint ns: the thread left its CPU at this
			    * event's time and was off it that long (version 3) */
	/* marks (version 4); not counted as events */
	ULMA_EXT_INSTANT = 3,     /* varint id: a point in time named by mark definition id */
	ULMA_EXT_COUNTER = 4,     /* varint id, varint bits of a double: counter id has this value */
	ULMA_EXT_THREAD_NAME = 5, /* varint id: the thread is named so from here */
	/* lines (version 5): of the innermost open frame; counted as events */
	ULMA_EXT_LINE = 6,        /* varint line: the frame starts executing this line (a hit) */
	ULMA_EXT_LINE_RESUME = 7, /* varint line: the frame resumed inside this line (no hit) */
	/* memory (version 5, --memory): not counted as events.  An address is a
	 * varint zigzag delta from the previous address of the chunk (0 at its start). */
	ULMA_EXT_ALLOC = 8, /* varint size << 2 | domain (ulma_mem_domain; 3, native, from version 6),
			     * varint address delta */
	ULMA_EXT_FREE = 9,  /* varint address delta */
	/* objects (version 6, --memory on Python 3.13+): not counted as events */
	ULMA_EXT_OBJ_NEW = 10,  /* varint id: an object of the type defined as id (ULMA_DEF_TYPE) created */
	ULMA_EXT_OBJ_FREE = 11, /* varint id: one destroyed */
	/* MPI (version 6, docs/mpi.md): not counted as events */
	ULMA_EXT_MPI = 12, /* varint op (enum ulma_mpi_op), varint n <= ULMA_MPI_ARGS_MAX, n varint args */
};

/* Why a thread was off its CPU (ULMA_EXT_OFF), from the scheduler's switch records. */
enum ulma_off_state {
	ULMA_OFF_BLOCKED = 0,  /* switched out while not runnable: sleep, I/O, a lock */
	ULMA_OFF_RUNNABLE = 1, /* preempted: runnable, waiting in a run queue for a CPU */
	ULMA_OFF_GIL = 2,      /* blocked, waiting for the GIL */
	ULMA_OFF_STATES = 3,
};

/* How a trace splits time into on-CPU, runnable and blocked (END's split field). */
enum ulma_split_method {
	ULMA_SPLIT_NONE = 0,      /* not at all */
	ULMA_SPLIT_SCHEDSTAT = 1, /* sampled /proc schedstat: SCHED chunks, interpolated */
	ULMA_SPLIT_SWITCHES = 2,  /* the scheduler's context-switch records: ULMA_EXT_OFF events */
};

enum ulma_meta_flag {
	ULMA_META_TSC = 1u << 0,      /* ticks are TSC ticks (else ns) */
	ULMA_META_LOSSLESS = 1u << 1, /* recorded with --lossless */
	ULMA_META_NO_C_CALLS = 1u << 2, /* recorded with --no-c-calls: no builtins */
	ULMA_META_MEMORY = 1u << 3,     /* recorded with --memory: allocations and frees */
};

#endif
