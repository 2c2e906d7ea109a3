/* trace_reader.h - decode a trace file, checking every byte.
 *
 * The reader walks the chunks in order and calls a visitor for the session
 * facts, each definition, each thread and each event.  Function and thread
 * ids are translated to dense indices (0, 1, 2, ... in order of
 * definition) so consumers can use plain arrays.  A trace that is cut short
 * is not an error: reading stops at the cut and status.complete is false.
 * Anything inconsistent (bad magic, checksum, an event before its
 * definition, an exit with no open frame) is -EPROTO with a one-line reason
 * in status.error.  Memory use is bounded by one chunk plus the tables.
 */
#ifndef ULMA_TRACE_READER_H
#define ULMA_TRACE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mpi_event.h"
#include "trace_writer.h"

enum ulma_event_kind {
	ULMA_EV_ENTER = 1,
	ULMA_EV_EXIT = 2,
	ULMA_EV_LOST = 3,
	ULMA_EV_OFF = 4, /* the thread was off its CPU from `ticks` for `count` ns (version 3);
			  * not counted as an event */
	ULMA_EV_LINE = 5, /* the innermost open frame starts line `count` (version 5), or goes on
			   * in it after a resume (`resumed`); func is that frame's */
};

/* Strings are valid only during the callback. */
struct ulma_trace_func {
	uint32_t index; /* dense */
	uint32_t id;    /* as in the file */
	uint8_t kind;   /* enum ulma_def_kind */
	uint32_t line;
	const char *name;
	size_t name_len;
	const char *file;
	size_t file_len;
};

struct ulma_trace_thread {
	uint32_t index; /* dense */
	uint64_t serial;
	uint32_t pid;
	uint32_t tid;
};

/* A process's name, as ulma_trace_process wrote it (not NUL-terminated),
 * and its parent's pid (0: the trace does not say). */
struct ulma_trace_process {
	uint32_t pid;
	const char *name;
	size_t name_len;
	uint32_t ppid;
};

struct ulma_trace_event {
	uint64_t ticks;  /* absolute session ticks */
	uint64_t count;  /* LOST: records dropped; OFF: ns off the CPU */
	uint32_t func;   /* dense function index: entered, or left for EXIT */
	uint32_t cpu;
	uint32_t thread; /* dense thread index */
	uint8_t kind;    /* enum ulma_event_kind */
	uint8_t off;     /* OFF: enum ulma_off_state */
	uint8_t resumed; /* LINE: a resume inside the line, not a hit */
};

/* A copy of a source file's text (version 5).  Valid during the callback. */
struct ulma_trace_source {
	const char *path;
	size_t path_len;
	const char *text;
	size_t text_len;
	unsigned flags; /* enum ulma_source_flag */
};

/* A mark in a thread's stream (version 4): an instant, a counter's value,
 * or the thread's name from then on.  `name` is the dense index of its
 * definition (kind ULMA_DEF_MARK). */
struct ulma_trace_mark {
	uint64_t ticks;
	uint32_t thread; /* dense */
	uint32_t name;   /* dense function index of the mark's definition */
	uint8_t kind;    /* ULMA_EXT_INSTANT, ULMA_EXT_COUNTER or ULMA_EXT_THREAD_NAME */
	double value;    /* ULMA_EXT_COUNTER */
};

/* An allocation or a free (version 5, --memory), in order with the
 * thread's events (they are delivered first). */
struct ulma_trace_memory {
	uint64_t ticks;
	uint64_t addr;   /* the block's address, below 2^48 */
	uint64_t size;   /* ULMA_EXT_ALLOC: its size in bytes */
	uint32_t thread; /* dense */
	uint8_t kind;    /* ULMA_EXT_ALLOC or ULMA_EXT_FREE */
	uint8_t domain;  /* ULMA_EXT_ALLOC: enum ulma_mem_domain */
};

/* An object created or destroyed (version 6, --memory on 3.13+), in order
 * with the thread's events (they are delivered first). */
struct ulma_trace_object {
	uint64_t ticks;
	uint32_t thread; /* dense */
	uint32_t type;   /* dense function index of the type's definition (ULMA_DEF_TYPE) */
	uint8_t kind;    /* ULMA_EXT_OBJ_NEW or ULMA_EXT_OBJ_FREE */
};

/* An MPI event (version 6, docs/mpi.md), in order with the thread's
 * events (they are delivered first).  What the arguments mean depends on
 * the operation: src/core/mpi_event.h. */
struct ulma_trace_mpi {
	uint64_t ticks;
	uint64_t args[ULMA_MPI_ARGS_MAX]; /* the first nargs; the rest are 0 */
	uint32_t thread; /* dense */
	uint8_t op;      /* enum ulma_mpi_op; readers skip ones they do not know */
	uint8_t nargs;
};

#define ULMA_TRACE_BATCH 1024 /* events per on_events call, at most */

/* Each callback may be NULL.  A non-zero return stops reading; it is
 * returned by ulma_trace_read. */
struct ulma_trace_visitor {
	void *ctx;
	int (*on_meta)(void *ctx, const struct ulma_trace_meta *meta);
	int (*on_func)(void *ctx, const struct ulma_trace_func *func);
	int (*on_thread)(void *ctx, const struct ulma_trace_thread *thread);
	int (*on_event)(void *ctx, const struct ulma_trace_event *event);
	int (*on_end)(void *ctx, const struct ulma_trace_end *end);
	/* a schedstat sample of a thread (dense index) */
	int (*on_sched)(void *ctx, uint32_t thread, const struct ulma_trace_sched *sample);
	/* what to call a process (a later one replaces an earlier) */
	int (*on_process)(void *ctx, const struct ulma_trace_process *process);
	/* on_event's events a batch at a time (one thread's, in order, from
	 * one chunk: their times never decrease); when set, on_event is not
	 * called */
	int (*on_events)(void *ctx, uint32_t thread, const struct ulma_trace_event *events, size_t n);
	/* the hook's cost per event (ps), as the program measured it (OVERHEAD) */
	int (*on_overhead)(void *ctx, uint64_t ps_per_event);
	/* a mark, in order with the thread's events (they are delivered first) */
	int (*on_mark)(void *ctx, const struct ulma_trace_mark *mark);
	/* a copy of a source file, before the events of its lines */
	int (*on_source)(void *ctx, const struct ulma_trace_source *source);
	/* an allocation or a free, in order with the thread's events */
	int (*on_memory)(void *ctx, const struct ulma_trace_memory *mem);
	/* an object created or destroyed, in order with the thread's events */
	int (*on_object)(void *ctx, const struct ulma_trace_object *obj);
	/* an MPI event, in order with the thread's events (version 6) */
	int (*on_mpi)(void *ctx, const struct ulma_trace_mpi *mpi);
	/* an MPI rank: who wrote this trace, or one rank of a merged trace;
	 * rank->host is valid during the callback (version 6) */
	int (*on_mpi_rank)(void *ctx, const struct ulma_trace_rank *rank);
	/* what `ulma merge` did, in a merged trace (version 6) */
	int (*on_mpi_merge)(void *ctx, const struct ulma_trace_merge *merge);
};


struct ulma_trace_status {
	bool complete;   /* an END chunk was read */
	uint64_t bytes;  /* bytes consumed in whole chunks */
	uint64_t events; /* events decoded */
	uint64_t last_ticks; /* latest event time seen */
	uint64_t overhead_ps; /* the hook's cost per event (ps), 0 if not measured */
	uint32_t version;     /* of the trace format */
	char error[256]; /* set when the return value is negative */
};

/* Decode from f (read sequentially).  Returns 0 (complete or cut short),
 * -EPROTO for a corrupt or foreign file, -errno for I/O or memory errors,
 * or a visitor's non-zero value. */
int ulma_trace_read(FILE *f, const struct ulma_trace_visitor *v, struct ulma_trace_status *st);

/* Open the trace at path for reading.  Only a regular file is a trace:
 * the open never blocks (a FIFO with no writer would wait forever in
 * open) and anything else is refused.  Returns 0 with *out, or -errno:
 * -EISDIR for a directory, -EINVAL for a FIFO, socket or device.  For
 * those two, *why is the reason in words ("it is a directory"), else NULL. */
int ulma_trace_open(const char *path, FILE **out, const char **why);

/* Convenience: open path (ulma_trace_open) and decode. */
int ulma_trace_read_path(const char *path, const struct ulma_trace_visitor *v,
			 struct ulma_trace_status *st);

#endif
