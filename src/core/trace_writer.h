/* trace_writer.h - stream a trace file to disk with bounded memory.
 *
 * The monitor owns one writer.  It declares files, functions and threads,
 * then appends each thread's already well-nested events to that thread's
 * stream.  A stream is flushed as one EVENTS chunk when its buffer passes
 * 64 KiB or on ulma_trace_writer_flush; pending definitions are always
 * written first, so a definition precedes every use.  Write errors are
 * sticky and returned by flush and close.  Single-threaded.
 */
#ifndef ULMA_TRACE_WRITER_H
#define ULMA_TRACE_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ulma_trace_writer;
struct ulma_trace_stream;

struct ulma_trace_meta {
	uint32_t flags;       /* enum ulma_meta_flag */
	uint32_t pid;         /* the traced program */
	uint64_t start_ticks; /* start calibration pair */
	uint64_t start_ns;
	uint64_t tick_hz;      /* estimated ticks per second, for traces cut before END */
	const char *command;  /* NUL-terminated, may be NULL */
};

/* A schedstat sample of one thread, cumulative since the thread began. */
struct ulma_trace_sched {
	uint64_t ticks;   /* session clock at the sample */
	uint64_t cpu_ns;  /* on a CPU */
	uint64_t wait_ns; /* runnable, waiting for a CPU */
	uint64_t gil_ns;  /* blocked waiting for the GIL, if gil_known (else 0) */
	bool gil_known;   /* the monitor could tell GIL waits apart */
};

struct ulma_trace_end {
	uint64_t end_ticks; /* end calibration pair */
	uint64_t end_ns;
	uint64_t events;    /* events written */
	uint64_t lost;      /* events dropped */
	uint32_t failures;  /* enum ulma_shm_failure */
	int32_t exit_status; /* wait status of the program, or -1 */
};

/* Create path anew (safe_file.h: whatever was there is replaced, never
 * written through) and write the file header and META chunk.
 * Returns 0 or -errno; on error nothing is left open. */
int ulma_trace_writer_open(const char *path, const struct ulma_trace_meta *meta,
			   struct ulma_trace_writer **out);

int ulma_trace_define_file(struct ulma_trace_writer *w, uint32_t file_id, const char *path, size_t len);
int ulma_trace_define_func(struct ulma_trace_writer *w, uint32_t id, uint8_t kind, uint32_t file_id,
			   uint32_t line, const char *name, size_t len);

/* Declare a thread and get its stream (owned by the writer). */
int ulma_trace_stream_open(struct ulma_trace_writer *w, uint64_t serial, uint32_t pid, uint32_t tid,
			   struct ulma_trace_stream **out);

/* Append events.  parent_id is the id of the innermost open frame (0 if
 * none); it lets direct recursion cost no id bytes.  Errors are sticky. */
void ulma_trace_enter(struct ulma_trace_stream *s, uint64_t ticks, uint32_t cpu, uint32_t id,
		      uint32_t parent_id);
void ulma_trace_exit(struct ulma_trace_stream *s, uint64_t ticks, uint32_t cpu);
void ulma_trace_lost(struct ulma_trace_stream *s, uint64_t ticks, uint64_t count);
/* A schedstat sample of the stream's thread.  Samples are written before
 * the events they bracket. */
void ulma_trace_sched(struct ulma_trace_stream *s, const struct ulma_trace_sched *sample);

/* Write pending definitions and every stream's buffer.  Returns 0 or the
 * first write error (-errno). */
int ulma_trace_writer_flush(struct ulma_trace_writer *w);

/* Bytes written to the file so far (including flushed chunks only). */
uint64_t ulma_trace_writer_bytes(const struct ulma_trace_writer *w);

/* What to call process `pid`: its command line as shown to users (at
 * most ULMA_TRACE_MAX_NAME bytes are kept).  Written at once, before or
 * after its threads; a reader keeps the last name of a pid.  Returns 0 or
 * -errno. */
#define ULMA_TRACE_MAX_NAME 1024u
int ulma_trace_process(struct ulma_trace_writer *w, uint32_t pid, const char *name, size_t len);

/* The hook's cost per event (ps), as the program measured it at start-up.
 * Written at once; a reader keeps the last.  Returns 0 or -errno. */
int ulma_trace_overhead(struct ulma_trace_writer *w, uint64_t ps_per_event);

/* Flush, write END, close and free.  Returns 0 or the first error. */
int ulma_trace_writer_close(struct ulma_trace_writer *w, const struct ulma_trace_end *end);

/* Free without writing END (the trace stays a readable prefix). */
void ulma_trace_writer_abandon(struct ulma_trace_writer *w);

#endif
