/* export_walk.h - the decoding step every exporter shares: a trace turned
 * into a filtered, well-nested stream of frames per thread.
 *
 * The walker reads a trace with the trace reader, converts ticks to
 * nanoseconds since the trace start (with the END calibration pair, found by
 * a quick scan of the chunk headers before decoding), and applies the
 * export filters: thread and process, a time window, a minimum duration,
 * and include / exclude patterns.  A frame that a filter removes is
 * transparent: its time goes to the nearest kept ancestor, and its kept
 * descendants hang from that ancestor.  A frame straddling the window is
 * clipped to it.
 *
 * Times are corrected as the summary's are (overhead.h): each thread's
 * clock loses the hook's measured cost at each of its events, so a frame
 * loses the cost of the events inside it and of its exit, and its self
 * time the cost of its exit and its children's entries, exactly the
 * summary's rule (filter.no_correction keeps them raw; cost_ps says which).
 *
 * Frames are announced lazily: whether a frame is kept is known only when
 * it closes (its duration), so its open callback comes when it or a
 * descendant is first known to be kept.  Per thread, opens and closes still
 * arrive well nested and in time order; threads interleave in chunk order.
 * Open frames at the end are closed at the end of the trace.
 *
 * Marks (version 4: instants, counter values, thread names) come to
 * on_mark in time order with their thread's opens and closes, at the
 * thread's corrected time: the time of the mark less the hook's cost of
 * the events before it, never before the previous event, so a mark inside
 * a frame lies inside it in every export.  Marks are not events and cost
 * nothing.  The thread and process filters and the time window apply to
 * them (a thread name always passes the window: it names the thread from
 * then on); the function patterns and the minimum duration do not.  When
 * a filter delays frames' opens, a thread's marks wait for the opens
 * before them, so memory then also holds the marks inside frames not yet
 * known to be kept.
 *
 * A sink may also ask for a profile (profile.h) of the passing threads:
 * the walk then feeds it every event of theirs as recorded, through
 * profile_feed.h as `ulma report` does, with the trace's source copies
 * and, in a trace recorded with --memory, its allocations and frees and
 * the objects created and destroyed, and finishes it at the end.  It is the line data's one aggregation
 * (profile_lines.h) for the exports that show lines; the time window,
 * the minimum duration and the patterns do not cut it.
 *
 * Memory is the function and thread tables plus one stack per thread.
 * Single-threaded.  Functions returning int give 0 or a negative errno
 * (-EPROTO for a corrupt trace, with the reason in the status), or a sink
 * callback's non-zero value.
 */
#ifndef ULMA_EXPORT_WALK_H
#define ULMA_EXPORT_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../core/idmap.h"
#include "../core/trace_reader.h"
#include "pid_names.h"
#include "profile_feed.h"
#include "ulma/shm.h"

#define ULMA_WALK_NONE UINT32_MAX
#define ULMA_WALK_ALL (-1)

struct ulma_walk_filter {
	int64_t tid;             /* OS thread id, or ULMA_WALK_ALL */
	int64_t pid;             /* process id, or ULMA_WALK_ALL */
	uint64_t from_ns;        /* window start, ns since the trace start */
	uint64_t to_ns;          /* window end (inclusive); UINT64_MAX for none */
	uint64_t min_duration_ns; /* frames shorter than this are dropped */
	const char *const *include; /* fnmatch patterns on name or file; none = all */
	size_t ninclude;
	const char *const *exclude;
	size_t nexclude;
	bool no_correction;       /* times as measured, the hook's cost included */
};

/* The default filter: everything. */
void ulma_walk_filter_init(struct ulma_walk_filter *f);

struct ulma_walk_func {
	char *name; /* NUL-terminated, owned by the walker */
	char *file;
	uint32_t line;
	uint8_t kind; /* enum ulma_def_kind */
	bool pass;    /* include / exclude patterns let it through */
	uint32_t key; /* index of the first function with the same name, file
		       * and line: exporters merge on it (a trace may define a
		       * function twice, e.g. once per forked process) */
};

/* What a function is, as the exporters label it: "python", "c" (a
 * Python-level C function, kinds 2-5), "native" (a C/C++ function traced
 * with -finstrument-functions) or "zone" (a zone of the C API).  A kind
 * this ulma does not know is labelled "python", as before there were
 * kinds. */
static inline const char *ulma_walk_kind_name(uint8_t kind)
{
	if (ulma_def_is_c(kind))
		return "c";
	if (kind == ULMA_DEF_NATIVE)
		return "native";
	if (kind == ULMA_DEF_ZONE)
		return "zone";
	return "python";
}

/* Whether f's file and line say where it is: not for a C function (file
 * "~", line 0, as pstats has it), nor for a native function without debug
 * information (the monitor gives it "~" and 0 too). */
static inline bool ulma_walk_func_located(const struct ulma_walk_func *f)
{
	if (ulma_def_is_c(f->kind))
		return false;
	return f->kind != ULMA_DEF_NATIVE || f->line != 0 || f->file[0] != '~' || f->file[1] != 0;
}

struct ulma_walk_frame {
	uint32_t func;
	uint32_t parent;   /* func of the nearest kept ancestor, or ULMA_WALK_NONE */
	uint32_t depth;    /* number of kept ancestors */
	uint32_t cpu;      /* open: the CPU it was entered on; close: the one it left on */
	uint64_t start_ns; /* clipped to the window */
	uint64_t end_ns;   /* close only */
	uint64_t self_ns;  /* close only: end - start minus kept children */
};

/* A frame's open or close, for a sink taking them in batches (on_edges):
 * 16 bytes, the flag and the time in one word (the walker's times stay
 * below 9.2e18 ns, ticks_to_ns's cap, so 63 bits hold them; the flag in
 * the low bit, each is one shift or mask away). */
struct ulma_walk_edge {
	uint64_t open : 1; /* 1: an open, 0: a close */
	uint64_t ns : 63;  /* an open's start, a close's end */
	uint32_t func;
	uint32_t cpu;      /* the CPU of its entry or exit, as the frame's (ulma_walk_frame) */
};
_Static_assert(sizeof(struct ulma_walk_edge) == 16, "an edge in 16 bytes");

/* A mark in a thread's stream. */
struct ulma_walk_mark {
	uint32_t name;  /* index in funcs of the definition naming it (kind ULMA_DEF_MARK) */
	uint8_t kind;   /* ULMA_EXT_INSTANT, ULMA_EXT_COUNTER or ULMA_EXT_THREAD_NAME */
	uint64_t at_ns; /* since the trace start, on the thread's corrected clock */
	double value;   /* ULMA_EXT_COUNTER: the counter's value (any double, NaN included) */
};

/* An MPI event of a merged trace (docs/mpi.md): as the reader gives it,
 * with its time and the rank of the process that recorded it. */
struct ulma_walk_mpi {
	const struct ulma_trace_mpi *ev;
	uint64_t at_ns; /* since the trace start, on the thread's corrected clock */
	uint32_t rank;  /* UINT32_MAX: its process is not a rank of the trace */
};

/* The id of the message an MPI send or receive belongs to, the same on
 * both sides (a hash of sender, receiver, communicator, tag and the
 * sender's sequence number), below 2^53 so that JSON holds it exactly;
 * false for any other MPI event, or one the merge could not match. */
bool ulma_walk_mpi_message_id(const struct ulma_walk_mpi *m, uint64_t *id);

struct ulma_walk_thread {
	uint64_t serial;
	uint32_t pid;
	uint32_t tid;
	bool pass;          /* the thread / process filter lets it through */
	bool seen;          /* any event yet */
	uint64_t first_ns;  /* first event */
	uint64_t last_ns;   /* last event */
	uint64_t lost;      /* events the recorder dropped in this thread */
	uint64_t shift_fp;  /* the hook's cost of its events so far, taken out of its times
			     * (ns, 32.32 fixed point) */
	uint32_t cpu;       /* CPU of the latest event */
	uint64_t kept;      /* frames kept */
	uint32_t name;      /* funcs index of its latest thread-name mark, or ULMA_WALK_NONE */
	/* private: the shadow stack */
	struct walk_slot *stack;
	uint32_t depth;
	uint32_t cap;
	/* private: marks held back until the frames around them are announced */
	struct ulma_walk_mark *held;
	uint32_t held_first, nheld, cap_held;
};

struct ulma_walk;
struct ulma_calltree;

/* What an exporter receives.  Each callback may be NULL.  A non-zero
 * return stops the walk and is returned by ulma_walk_run. */
struct ulma_walk_sink {
	void *ctx;
	int (*on_func)(void *ctx, const struct ulma_walk *w, uint32_t func);
	int (*on_thread)(void *ctx, const struct ulma_walk *w, uint32_t thread); /* passing threads only */
	int (*on_open)(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f);
	int (*on_close)(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f);
	/* a sink that builds a call tree: when nothing is filtered the walker
	 * feeds it straight from the events (calltree.h, and
	 * ulma_walk_feeds_tree says so); on_open is then not called, and
	 * on_close only for frames lasting at least *close_from (never if it
	 * is NULL) */
	struct ulma_calltree *tree;
	const uint64_t *close_from;
	/* a mark of a passing thread that the filters keep (see above); the
	 * thread's name is already updated for a thread-name mark */
	int (*on_mark)(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_mark *m);
	/* a profile the walk feeds (see above; initialised and freed by the
	 * sink), or NULL; its function and thread indices are the walk's */
	struct ulma_profile *profile;
	/* an MPI event of a passing thread, in the time window */
	int (*on_mpi)(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_mpi *m);
	/* a passing thread left its CPU at at_ns (its corrected clock, as a
	 * mark's) for ns (the kernel's figure) in `state` (enum
	 * ulma_off_state), leaving CPU `cpu` (the record's: where the thread
	 * ran since it last came back, events or not): the trace's OFF
	 * records, in time order per thread but not held back with the marks,
	 * so they may come before the delayed opens of frames that began
	 * earlier */
	int (*on_off)(void *ctx, const struct ulma_walk *w, uint32_t thread, uint8_t state, uint32_t cpu,
		      uint64_t at_ns, uint64_t ns);
	/* an allocation or a free of a passing thread (--memory traces), at
	 * its corrected time as an OFF record's, and not held back either */
	int (*on_memory)(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_trace_memory *m,
			 uint64_t at_ns);
	/* optional, for a sink that needs of a frame only its function,
	 * times and CPU: when nothing is filtered (and no tree is fed), a thread's
	 * opens and closes in batches, in order, instead of on_open and
	 * on_close, which still take the frames the walk closes at its end
	 * and every frame of a filtered walk.  The walk's thread state is
	 * up to date at each call. */
	int (*on_edges)(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_edge *e,
			size_t n);
	/* an object created or destroyed by a passing thread (--memory on
	 * Python 3.13+; o->type is a funcs index of kind ULMA_DEF_TYPE), at
	 * its corrected time as an allocation's, not held back either */
	int (*on_object)(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_trace_object *o,
			 uint64_t at_ns);
};

struct ulma_walk {
	struct ulma_walk_filter filter;
	struct ulma_walk_func *funcs;
	uint32_t nfuncs;
	uint32_t cap_funcs;
	struct ulma_walk_thread *threads;
	uint32_t nthreads;
	uint32_t cap_threads;
	/* session facts, valid once the walk has begun */
	uint32_t pid;         /* the traced program: META's pid, else the first thread's (0 before it) */
	uint64_t start_ns;    /* CLOCK_MONOTONIC at the trace start: times count from here */
	char *command;        /* its command line, may be NULL */
	struct ulma_pid_names names; /* what to call each process, where the trace says */
	uint64_t duration_ns; /* trace start to end (or last event) */
	bool complete;        /* the trace has its END chunk */
	uint64_t events;      /* events decoded */
	uint64_t frames;      /* frames kept */
	uint64_t lost;        /* events the recorder dropped (markers in the streams read) */
	uint64_t cost_ps;     /* the hook's cost per event taken out of the times (0: none) */
	/* private */
	bool keep_all; /* no filter: frames are announced as they open */
	bool tsc;
	uint64_t ticks0;
	double ns_per_tick;
	uint64_t ns_per_tick_fp; /* the same, 32.32 fixed point */
	uint64_t cost_fp;        /* cost_ps in ns, 32.32 fixed point */
	bool have_end;
	uint64_t end_ticks, end_ns;
	bool have_last_cost;   /* the trace's last OVERHEAD figure, found before decoding */
	uint64_t last_cost_ps;
	const struct ulma_walk_sink *sink;
	struct ulma_idmap keys; /* hash of name, file, line -> func */
	struct ulma_idmap rank_of_pid; /* a merged MPI trace's: pid + 1 -> rank + 1 */
	struct ulma_idmap parent_of_pid; /* pid + 1 -> its parent's pid, where a PROCESS chunk says */
	struct ulma_profile_feed feed; /* into sink->profile */
	struct ulma_trace_end end;     /* END's facts, for the profile */
};

/* Prepare a walker; the filter's pattern arrays must outlive it. */
void ulma_walk_init(struct ulma_walk *w, const struct ulma_walk_filter *filter);
void ulma_walk_free(struct ulma_walk *w);

/* A label for process `pid`: its name where the trace has one (a PROCESS
 * chunk; for the program, a trace older than those chunks has the
 * session's command), else NULL. */
const char *ulma_walk_process_name(const struct ulma_walk *w, uint32_t pid);

/* The pid of process `pid`'s parent, where the trace says (its PROCESS
 * chunk), else 0. */
uint32_t ulma_walk_parent_pid(const struct ulma_walk *w, uint32_t pid);

/* A process started by another of the trace, for the exporters' flows
 * parent -> child: the child's earliest passing thread (the one with the
 * first event) and a passing thread of the parent (its main thread, else
 * its earliest).  Valid once the walk has run. */
struct ulma_walk_spawn {
	uint32_t pid, ppid;
	uint32_t child_thread;  /* walk thread index */
	uint32_t parent_thread; /* walk thread index */
	uint64_t at_ns;         /* the child thread's first event */
	uint64_t flow_id;       /* 2^53 + 2 * pid: beyond any MPI message's id
				 * (ulma_walk_mpi_message_id), and still exact in a
				 * JSON number (a double) */
};
/* Every such process, in an array *out (malloc'd, the caller frees it;
 * NULL when *n is 0) sorted by at_ns.  0 or -ENOMEM. */
int ulma_walk_spawns(const struct ulma_walk *w, struct ulma_walk_spawn **out, uint32_t *n);

/* A thread's label for the exporters' lanes: "main thread 456 (pid 456)" or
 * "thread 457 (pid 456)", after "NAME: " where the process has a name;
 * a thread named by a mark is "main-loop 456 (pid 456)" (its last name).
 * Cut to `cap` bytes, NUL included. */
#define ULMA_WALK_LABEL_MAX 320
void ulma_walk_thread_label(const struct ulma_walk *w, const struct ulma_walk_thread *t, char *out, size_t cap);

/* Whether the walk feeds the sink's tree itself (see ulma_walk_sink). */
static inline bool ulma_walk_feeds_tree(const struct ulma_walk *w)
{
	return w->keep_all && w->sink && w->sink->tree;
}

/* One line saying which times the output holds: the hook's cost taken out
 * (and how much per event), or as measured. */
#define ULMA_WALK_NOTE_MAX 160
void ulma_walk_times_note(const struct ulma_walk *w, char *out, size_t cap);

/* Decode f (from its current position; seekable files get the exact END
 * calibration) and feed sink.  st receives the reader's status: on -EPROTO
 * st->error says why.  A trace cut short is not an error (st->complete
 * false). */
int ulma_walk_run(struct ulma_walk *w, FILE *f, const struct ulma_walk_sink *sink, struct ulma_trace_status *st);

/* Parse a duration or time: digits with an optional suffix ns, us, ms or s
 * (fractions allowed with a suffix: "1.5ms").  Returns 0 or -EINVAL. */
int ulma_walk_parse_ns(const char *s, uint64_t *out);

#endif
