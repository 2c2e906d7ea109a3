/* trace_writer.h - stream a trace file to disk with bounded memory.
 *
 * The monitor owns one writer.  It declares files, functions and threads,
 * then appends each thread's already well-nested events to that thread's
 * stream.  A stream is flushed as one EVENTS chunk when its buffer passes
 * 64 KiB or on ulma_trace_writer_flush; pending definitions are always
 * written first, so a definition precedes every use.  Write errors are
 * sticky and returned by flush and close.  Single-threaded.
 *
 * Appending an enter or an exit is the monitor's per-event work, so it is
 * inline: one varint, usually of one or two bytes, into a buffer that
 * always has room for an event (ulma_trace_stream is visible for that
 * reason only; its fields are the writer's).
 */
#ifndef ULMA_TRACE_WRITER_H
#define ULMA_TRACE_WRITER_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ulma/trace_format.h"
#include "varint.h"

struct ulma_trace_writer;

#define ULMA_TRACE_EVENT_MAX (4 * ULMA_VARINT_MAX) /* bytes one event can take */

/* One thread's stream; fields private to trace_writer.c but for the inline appends. */
struct ulma_trace_stream {
	uint8_t *body;      /* the pending EVENTS chunk's body */
	size_t len;
	size_t room;        /* len may reach this before the slow path: cap - 2 * ULMA_TRACE_EVENT_MAX */
	uint64_t last_ticks; /* time of the previous event in this chunk */
	uint64_t count;     /* events in the current chunk (len 0: none, chunk not begun) */
	uint32_t cpu;       /* cpu the decoder currently assumes */
	uint32_t first_cpu;
	uint64_t mem_addr;  /* the chunk's previous block address (ULMA_EXT_ALLOC, _FREE) */
	bool has_memory;    /* the pending chunk holds an ALLOC or a FREE */
	size_t cap;
	struct ulma_trace_writer *owner;
	uint64_t serial;
	uint8_t *sched;     /* pending schedstat samples, delta encoded */
	size_t sched_len, sched_cap;
	uint64_t nsched;
	unsigned sched_fields;  /* values per pending sample: 3, or 4 with the GIL clock */
	uint64_t sched_last[4]; /* previous sample: ticks, cpu, wait, gil */
};

struct ulma_trace_meta {
	uint32_t flags;       /* enum ulma_meta_flag */
	uint32_t pid;         /* the traced program */
	uint64_t start_ticks; /* start calibration pair */
	uint64_t start_ns;
	uint64_t tick_hz;      /* estimated ticks per second, for traces cut before END */
	const char *command;  /* NUL-terminated, may be NULL */
	uint64_t mem_sample_bytes; /* (version 6) --memory=sample:BYTES, 0: every allocation */
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
	/* version 3 (0 when a trace does not say) */
	uint32_t split;          /* enum ulma_split_method */
	uint64_t monitor_cpu_ns; /* CPU time the monitor used, drain and summary included */
	uint64_t switches_lost;  /* context-switch records the kernel could not deliver */
	uint32_t gil_split;      /* 1: blocked time was told apart from GIL waits */
	/* version 4 */
	uint64_t resynced;       /* frames closed without their exit, and exits that matched no
				  * entry (longjmp, C++ exceptions, a lost record) */
	/* version 5, optional (written when not 0) */
	uint64_t mem_unattributed; /* --memory: allocations and frees no thread could record */
	/* optional (written when not 0, after mem_unattributed, which is then
	 * written even when 0); readers of version 5 and 6 before it skip it */
	uint64_t refused; /* records and definitions the monitor refused as malformed (collector.h) */
};

/* Create path anew (safe_file.h: whatever was there is replaced, never
 * written through) and write the file header and META chunk.
 * Returns 0 or -errno; on error nothing is left open. */
int ulma_trace_writer_open(const char *path, const struct ulma_trace_meta *meta,
			   struct ulma_trace_writer **out);

int ulma_trace_define_file(struct ulma_trace_writer *w, uint32_t file_id, const char *path, size_t len);
/* A copy of file file_id's text, as read during the run (enum
 * ulma_source_flag).  At most ULMA_TRACE_MAX_SOURCE bytes. */
#define ULMA_TRACE_MAX_SOURCE (4u << 20)
int ulma_trace_define_source(struct ulma_trace_writer *w, uint32_t file_id, unsigned flags, const char *text,
			     size_t len);
int ulma_trace_define_func(struct ulma_trace_writer *w, uint32_t id, uint8_t kind, uint32_t file_id,
			   uint32_t line, const char *name, size_t len);

/* Declare a thread and get its stream (owned by the writer). */
int ulma_trace_stream_open(struct ulma_trace_writer *w, uint64_t serial, uint32_t pid, uint32_t tid,
			   struct ulma_trace_stream **out);

/* The hot part of a stream, held in locals while a loop appends many
 * events (ulma_trace_cursor_get ... _put): stores through a byte pointer
 * may alias anything in memory, so a stream's fields would be reloaded
 * after every byte; a cursor's stay in registers. */
struct ulma_trace_cursor {
	uint8_t *p;     /* next byte */
	uint8_t *limit; /* p may reach this before the slow path; the body's start when no chunk is begun */
	uint64_t last;  /* time of the previous event */
	uint64_t count; /* events in the chunk */
	uint32_t cpu;   /* cpu the decoder assumes */
};

static inline void ulma_trace_cursor_get(const struct ulma_trace_stream *s, struct ulma_trace_cursor *c)
{
	c->p = s->body + s->len;
	c->limit = s->len ? s->body + s->room : s->body; /* a chunk not begun takes the slow path */
	c->last = s->last_ticks;
	c->count = s->count;
	c->cpu = s->cpu;
}

static inline void ulma_trace_cursor_put(struct ulma_trace_stream *s, const struct ulma_trace_cursor *c)
{
	s->len = (size_t)(c->p - s->body);
	s->last_ticks = c->last;
	s->count = c->count;
	s->cpu = c->cpu;
}

/* Slow path of the appends: start a chunk, state a cpu change, make room. */
void ulma_trace_begin_slow(struct ulma_trace_stream *s, uint64_t *ticks, uint32_t cpu);

/* Append the event word for `tag` at `ticks`, `d` ticks after the
 * stream's previous event, for a loop that keeps the stream's clock in a
 * variable of its own (the monitor's collector_calls.c: one clock for the
 * profile, the trace and the records): c->last is neither read nor
 * updated here, the caller sets it when the loop ends.  One predictable
 * branch on the fast path. */
static inline __attribute__((always_inline)) void
ulma_trace_cursor_word_delta(struct ulma_trace_stream *s, struct ulma_trace_cursor *c, uint64_t ticks, uint64_t d,
			     uint32_t cpu, unsigned tag)
{
	uint64_t w = d << 2 | tag;
	if (__builtin_expect((c->p >= c->limit) | (cpu != c->cpu), 0)) {
	slow:
		c->last = ticks - d;
		ulma_trace_cursor_put(s, c);
		uint64_t t = ticks; /* >= the stream's last: unchanged (a local: its address is taken) */
		ulma_trace_begin_slow(s, &t, cpu);
		ulma_trace_cursor_get(s, c);
		d = ticks - c->last;
		w = d << 2 | tag;
	}
	if (w < 0x80) {
		c->p[0] = (uint8_t)w;
		c->p++;
	} else if (w < 0x4000) {
		c->p[0] = (uint8_t)(w | 0x80);
		c->p[1] = (uint8_t)(w >> 7);
		c->p += 2;
	} else if (d < (UINT64_C(1) << 61)) {
		c->p += ulma_varint_put(c->p, w);
	} else { /* too wide beside its tag: the slow path starts a chunk with an absolute time */
		goto slow;
	}
	c->count++;
}

/* Append the event word for `tag` at `ticks` (clamped so time never runs
 * back within a chunk). */
static inline void ulma_trace_cursor_word(struct ulma_trace_stream *s, struct ulma_trace_cursor *c, uint64_t ticks,
					  uint32_t cpu, unsigned tag)
{
	uint64_t t = ticks < c->last ? c->last : ticks;
	ulma_trace_cursor_word_delta(s, c, t, t - c->last, cpu, tag);
	c->last = t;
}

/* The id after an entry's word: none for direct recursion. */
static inline void ulma_trace_cursor_enter_id(struct ulma_trace_cursor *c, uint32_t id, bool same_as_parent)
{
	if (same_as_parent)
		return;
	if (id < 0x80)
		*c->p++ = (uint8_t)id;
	else
		c->p += ulma_varint_put(c->p, id);
}

/* Append an entry of function `id`; same_as_parent: the innermost open
 * frame is the same function (direct recursion costs no id bytes). */
static inline void ulma_trace_cursor_enter(struct ulma_trace_stream *s, struct ulma_trace_cursor *c, uint64_t ticks,
					   uint32_t cpu, uint32_t id, bool same_as_parent)
{
	ulma_trace_cursor_word(s, c, ticks, cpu, same_as_parent ? ULMA_TAG_ENTER_SAME : ULMA_TAG_ENTER);
	ulma_trace_cursor_enter_id(c, id, same_as_parent);
}

/* Append an allocation (ULMA_EXT_ALLOC: block addr of `size` bytes in
 * `domain`) or a free (ULMA_EXT_FREE of addr; size and domain unused),
 * as ulma_trace_alloc and ulma_trace_free do: not events of their own,
 * the address a zigzag delta from the chunk's previous one. */
static inline __attribute__((always_inline)) void
ulma_trace_cursor_memory(struct ulma_trace_stream *s, struct ulma_trace_cursor *c, uint64_t ticks, bool alloc,
			 uint64_t addr, uint64_t size, unsigned domain)
{
	ulma_trace_cursor_word(s, c, ticks, c->cpu, ULMA_TAG_EXT);
	c->count--;
	static_assert(ULMA_EXT_ALLOC < 0x80 && ULMA_EXT_FREE < 0x80, "one byte each");
	*c->p++ = alloc ? ULMA_EXT_ALLOC : ULMA_EXT_FREE;
	if (alloc)
		c->p += ulma_varint_put(c->p, size << 2 | (domain & 3));
	uint64_t d = addr - s->mem_addr; /* after the word, which may have begun a chunk */
	c->p += ulma_varint_put(c->p, d << 1 ^ (uint64_t)((int64_t)d >> 63));
	s->mem_addr = addr;
	s->has_memory = true;
}

static inline void ulma_trace_cursor_exit(struct ulma_trace_stream *s, struct ulma_trace_cursor *c, uint64_t ticks,
					  uint32_t cpu)
{
	ulma_trace_cursor_word(s, c, ticks, cpu, ULMA_TAG_EXIT);
}

/* A line event (ulma_trace_line) through the cursor. */
static inline void ulma_trace_cursor_line(struct ulma_trace_stream *s, struct ulma_trace_cursor *c, uint64_t ticks,
					  uint32_t cpu, uint32_t line, bool resumed)
{
	ulma_trace_cursor_word(s, c, ticks, cpu, ULMA_TAG_EXT);
	*c->p++ = resumed ? ULMA_EXT_LINE_RESUME : ULMA_EXT_LINE;
	if (line < 0x80)
		*c->p++ = (uint8_t)line;
	else
		c->p += ulma_varint_put(c->p, line);
}

/* The same, one event at a time.  Errors are sticky. */
static inline void ulma_trace_enter(struct ulma_trace_stream *s, uint64_t ticks, uint32_t cpu, uint32_t id,
				    bool same_as_parent)
{
	struct ulma_trace_cursor c;
	ulma_trace_cursor_get(s, &c);
	ulma_trace_cursor_enter(s, &c, ticks, cpu, id, same_as_parent);
	ulma_trace_cursor_put(s, &c);
}

static inline void ulma_trace_exit(struct ulma_trace_stream *s, uint64_t ticks, uint32_t cpu)
{
	struct ulma_trace_cursor c;
	ulma_trace_cursor_get(s, &c);
	ulma_trace_cursor_exit(s, &c, ticks, cpu);
	ulma_trace_cursor_put(s, &c);
}

void ulma_trace_lost(struct ulma_trace_stream *s, uint64_t ticks, uint64_t count);
/* The thread left CPU `cpu` at `ticks` and was off it `ns` (enum
 * ulma_off_state).  The record is on that CPU (a cpu change before it if
 * the stream was on another): where the thread ran since it last came
 * back, events or not.  ULMA_TRACE_SAME_CPU: the stream's current CPU. */
#define ULMA_TRACE_SAME_CPU UINT32_MAX
void ulma_trace_off(struct ulma_trace_stream *s, uint64_t ticks, uint32_t cpu, unsigned state, uint64_t ns);
/* A line event of the stream's innermost frame: it starts `line` (a hit),
 * or goes on in it after a resume.  Counted as an event. */
void ulma_trace_line(struct ulma_trace_stream *s, uint64_t ticks, uint32_t line, bool resumed);
/* Memory (--memory): block addr of `size` bytes allocated in domain
 * (enum ulma_mem_domain), or freed, at `ticks`.  Not events. */
void ulma_trace_alloc(struct ulma_trace_stream *s, uint64_t ticks, uint64_t addr, uint64_t size, unsigned domain);
void ulma_trace_free(struct ulma_trace_stream *s, uint64_t ticks, uint64_t addr);
/* An object of the type defined as id created (ULMA_EXT_OBJ_NEW) or
 * destroyed (ULMA_EXT_OBJ_FREE) at `ticks`.  Not an event. */
void ulma_trace_object(struct ulma_trace_stream *s, uint64_t ticks, unsigned ext, uint32_t id);
/* A mark (ULMA_EXT_INSTANT, _COUNTER with `value`, _THREAD_NAME) of
 * definition id at `ticks`.  Not an event. */
void ulma_trace_mark(struct ulma_trace_stream *s, uint64_t ticks, unsigned ext, uint32_t id, double value);
/* An MPI event (version 6, docs/mpi.md): operation `op` (enum
 * ulma_mpi_op) with its n arguments (at most ULMA_MPI_ARGS_MAX, each
 * below 2^48), at `ticks`.  Not an event. */
void ulma_trace_mpi(struct ulma_trace_stream *s, uint64_t ticks, unsigned op, const uint64_t *args, unsigned n);
/* A schedstat sample of the stream's thread.  Samples are written before
 * the events they bracket. */
void ulma_trace_sched(struct ulma_trace_stream *s, const struct ulma_trace_sched *sample);

/* Write the stream's pending EVENTS chunk (and the definitions and
 * samples before it) now.  Returns 0 or the first write error (-errno). */
int ulma_trace_stream_flush(struct ulma_trace_stream *s);

/* Whether the stream's pending chunk holds an ALLOC or a FREE record. */
static inline bool ulma_trace_stream_has_memory(const struct ulma_trace_stream *s)
{
	return s->len && s->has_memory;
}

/* Write pending definitions and every stream's buffer.  Returns 0 or the
 * first write error (-errno). */
int ulma_trace_writer_flush(struct ulma_trace_writer *w);

/* Bytes written to the file so far (including flushed chunks only). */
uint64_t ulma_trace_writer_bytes(const struct ulma_trace_writer *w);

/* What to call process `pid`: its command line as shown to users (at
 * most ULMA_TRACE_MAX_NAME bytes are kept), and its parent's pid `ppid`
 * (0: unknown, and then not written).  Written at once, before or after
 * its threads; a reader keeps the last name of a pid.  Returns 0 or
 * -errno. */
#define ULMA_TRACE_MAX_NAME 1024u
int ulma_trace_process(struct ulma_trace_writer *w, uint32_t pid, uint32_t ppid, const char *name, size_t len);

/* An MPI rank (version 6, docs/mpi.md): in a rank's own trace, who it
 * was; in a merged trace, also what the merge found of it. */
struct ulma_trace_rank {
	uint32_t pid;
	uint32_t rank;
	uint32_t size;       /* ranks in MPI_COMM_WORLD */
	const char *host;    /* not NUL-terminated; at most ULMA_TRACE_MAX_NAME bytes are kept */
	size_t host_len;
	bool merged;         /* the fields below are present (written by `ulma merge`) */
	uint64_t events;
	uint64_t mpi_ns;     /* time inside MPI calls, all threads */
	int64_t offset_init_ns;  /* its clock minus rank 0's at MPI_Init ... */
	int64_t offset_final_ns; /* ... and at MPI_Finalize (the init one if there is none) */
	uint64_t unmatched;  /* its sends and receives that have no partner */
};
int ulma_trace_mpi_rank(struct ulma_trace_writer *w, const struct ulma_trace_rank *rank);

/* What `ulma merge` did (version 6): one per merged trace. */
struct ulma_trace_merge {
	uint64_t ranks;
	uint64_t moved;         /* events the logical-clock pass moved later */
	uint64_t max_move_ns;   /* the largest such move */
	uint64_t max_offset_ns; /* the largest clock offset to rank 0, in absolute value */
	uint64_t messages;      /* matched point-to-point messages */
	uint64_t unmatched;     /* sends and receives without a partner */
	uint64_t moves; /* receives and collective exits it moved (each moves the rest of its rank) */
};
int ulma_trace_mpi_merge(struct ulma_trace_writer *w, const struct ulma_trace_merge *merge);

/* The hook's cost per event (ps), as the program measured it at start-up.
 * Written at once; a reader keeps the last.  Returns 0 or -errno. */
int ulma_trace_overhead(struct ulma_trace_writer *w, uint64_t ps_per_event);

/* Flush, write END, close and free.  Returns 0 or the first error. */
int ulma_trace_writer_close(struct ulma_trace_writer *w, const struct ulma_trace_end *end);

/* Free without writing END (the trace stays a readable prefix). */
void ulma_trace_writer_abandon(struct ulma_trace_writer *w);

#endif
