/* profile_memory.h - allocations per function, leaks and the peak
 * (`--memory`, docs/memory.md).
 *
 * The profile's memory half, fed with the same thread streams as its
 * calls: the monitor live and `ulma report` from the trace call
 * ulma_profile_mem_alloc and ulma_profile_mem_free between the thread's enters and
 * exits, so an allocation belongs to the thread's top frame when it comes.
 *
 * - Self: per function, the blocks allocated while it was on top
 *   (alloc_count, alloc_bytes) and, of those, the ones freed since, by any
 *   function or thread (free_count, free_bytes).  So net = alloc - freed
 *   is what the function still holds, and the leaks of its stacks add up
 *   to it (memray's and tracemalloc's view: a block belongs to where it
 *   was allocated).
 * - Total: the allocations made anywhere below a function's outermost
 *   frame, as total time is.  Each thread keeps, per depth, what the frame
 *   there and its finished callees allocated; a frame's exit adds its sum
 *   to its parent's and, at a function's outermost frame, to its total.
 *   Nothing happens at entries, and an exit looks at it only when the
 *   thread has allocated (its `mem` is set): a profile without memory
 *   pays one predictable branch per exit.
 * - Live blocks: address -> size, time, function and calling context, one
 *   table per profile, keyed by process and address and laid out by
 *   address (mem_table.h), so that the events of neighbouring blocks touch
 *   neighbouring memory.  A calling
 *   context is a node of a tree (parent, function) built only from the
 *   stacks that allocate; each thread keeps its stack's nodes per depth,
 *   valid up to the depth its last exit left, so an allocation walks only
 *   the frames entered since.
 * - Threads drain in any order (each ring in its own order, but one
 *   thread's records may wait unpublished while another's are read), so
 *   the address of a block one thread freed may come back allocated by
 *   another before that free is seen, and a free may come before the
 *   allocation it frees.  The times decide: a free's time is read before
 *   the block is given back, an allocation's after it was got, so an
 *   address's true history alternates allocation < free < allocation...
 *   An address keeps its live block (with its time) or, once freed, a
 *   ghost with the time of its latest free.  An allocation older than
 *   what the address holds was freed before it; an allocation newer than
 *   a live block retires that block (its free is still in a ring, and
 *   will be stale: older than the block then live); a free older than
 *   the live block is stale.  Each block is counted freed once, whatever
 *   the order.  Only the peak is taken in the order records are applied,
 *   which may run a ring batch (32 records) per thread apart from the
 *   order of time (docs/memory.md).
 * - Peak: per process, the highest live bytes and when.  The per-function
 *   live bytes are copied at a new peak once the live bytes have grown by
 *   1/64 since the last copy, so "who held the peak" is exact to within
 *   1.6% of the peak and costs O(functions) about 700 times between 1 KiB
 *   and 100 MiB.
 *
 * Bounds (docs/memory.md): the live table holds at most
 * ULMA_MEM_TABLE_ENTRIES_MAX entries, live blocks and ghosts (24 bytes
 * each, and their chunks', mem_table.h); blocks beyond it are counted
 * (untracked) but not kept.  Calling contexts
 * stop growing at ULMA_MEM_NODES_MAX nodes (deeper frames fold into the
 * deepest kept).  Ghosts: at most ULMA_MEM_GHOSTS_MAX or as many as live
 * blocks, whichever is more; then the older half is forgotten (a free no
 * allocation matched counts as of an unknown block).
 *
 * Single-threaded, like the profile.  Functions returning int give 0 or
 * -ENOMEM.
 */
#ifndef ULMA_PROFILE_MEMORY_H
#define ULMA_PROFILE_MEMORY_H

#include <stdint.h>

#include "mem_table.h"
#include "profile.h"
#include "profile_objects.h"

#define ULMA_MEM_NODES_MAX (1u << 22)           /* calling contexts */
#define ULMA_MEM_GHOSTS_MAX (1u << 18)          /* freed addresses remembered, at least */
#define ULMA_MEM_PROCS_MAX 65535u               /* processes told apart (the rest share the last) */
#define ULMA_MEM_NO_FUNC UINT32_MAX             /* an allocation with no frame open */

struct ulma_mem_func {
	uint64_t alloc_count; /* self: allocated while the function was on top */
	uint64_t alloc_bytes;
	uint64_t free_count;  /* of those blocks, freed since (anywhere) */
	uint64_t free_bytes;
	uint64_t total_alloc_count; /* allocated below its outermost frame */
	uint64_t total_alloc_bytes;
	uint64_t live_bytes; /* its blocks live now */
	uint64_t peak_bytes; /* its blocks live at the peak (the copy above) */
	/* of alloc_*, free_bytes: native code's blocks (ULMA_MEM_NATIVE), not Python's allocators' */
	uint64_t native_alloc_count;
	uint64_t native_alloc_bytes;
	uint64_t native_free_bytes;
};

/* Per depth of a thread: what the frame there and its finished callees allocated. */
struct ulma_mem_acc {
	uint64_t count;
	uint64_t bytes;
};

/* A thread's memory state (struct ulma_thread_row's `mem`). */
struct ulma_mem_thread {
	struct ulma_mem_acc *acc; /* per depth */
	uint32_t *node;           /* node[d]: the calling context of the first d frames */
	uint32_t cap;             /* entries of acc; node has cap + 1 */
	uint32_t valid;           /* node[0 .. valid] are the current stack's */
	uint32_t proc;            /* index of its process */
};

/* A live-block table entry (mem_table.h): size ULMA_MEM_GHOST for a freed
 * address (a ghost), with ticks its latest free and func 1 if that free
 * matched a block seen, else 0; node | ULMA_MEM_NODE_NATIVE for a native
 * block. */
#define ULMA_MEM_GHOST UINT64_MAX
#define ULMA_MEM_NODE_NATIVE (UINT32_C(1) << 31) /* above ULMA_MEM_NODES_MAX */

struct ulma_mem_node {
	uint32_t parent;
	uint32_t func; /* ULMA_MEM_NO_FUNC for the root, node 0 */
};

struct ulma_mem_proc {
	uint32_t pid;
	uint64_t live_bytes;
	uint64_t native_live_bytes; /* of live_bytes, native code's blocks */
	uint64_t counted_bytes;     /* live_bytes when last written as a counter (the collector's) */
	uint64_t uncounted_lo, uncounted_hi; /* live_bytes in [lo, hi) need no counter yet (the
					      * collector's; hi 0: not set) */
	uint64_t live_blocks;
	uint64_t peak_bytes;
	uint64_t peak_ticks;
	uint64_t peak_rss_bytes; /* the highest of its "memory: RSS (bytes)" counter marks */
};

struct ulma_profile_memory {
	struct ulma_mem_func *funcs; /* per function index */
	uint32_t nfuncs;
	struct ulma_mem_table table; /* live blocks and ghosts by process and address */
	uint64_t nghosts;
	uint64_t unmatched; /* ghosts whose free matched no block (yet) */
	struct ulma_mem_node *nodes;
	uint32_t nnodes, cap_nodes;
	uint32_t *node_index; /* hash of (parent, func) -> node + 1; 0 empty */
	uint32_t node_mask;
	struct ulma_mem_proc *procs;
	uint32_t nprocs, cap_procs;
	/* the peak of the process with the highest, and the copy's moment */
	uint32_t peak_proc;
	uint64_t snap_bytes;
	/* the whole run */
	uint64_t alloc_count, alloc_bytes, free_count, free_bytes;
	uint64_t native_alloc_count, native_alloc_bytes; /* of alloc_*: native code's */
	uint64_t outside_count, outside_bytes; /* allocated with no frame open */
	uint64_t unknown_frees;   /* frees of blocks allocated before tracing (or lost, or untracked);
				   * with `unmatched`, all of them */
	uint64_t untracked;       /* blocks not kept: the live table was full */
	uint64_t unmatched_allocs; /* ALLOC records whose size was lost (collector) */
	uint64_t unattributed;    /* allocations and frees no thread could record (the session's count) */
	struct ulma_profile_objects objects; /* objects per type (3.13+, profile_objects.h) */
	bool objects_recorded;               /* the program counted objects (an OBJ record came) */
	uint64_t sample_bytes; /* --memory=sample:BYTES: blocks are samples, their sizes estimates (0: exact) */
};

/* Start recording memory in p (the session or the trace says so). */
int ulma_profile_memory_enable(struct ulma_profile *p);
void ulma_profile_memory_free(struct ulma_profile_memory *m);

/* Block addr (below 2^48) of `size` bytes in `domain` (enum
 * ulma_mem_domain) allocated by thread `thread` at ticks, by its top
 * frame. */
int ulma_profile_mem_alloc(struct ulma_profile *p, uint32_t thread, uint64_t addr, uint64_t size, unsigned domain,
			   uint64_t ticks);
/* Block addr freed by thread `thread` at ticks. */
int ulma_profile_mem_free(struct ulma_profile *p, uint32_t thread, uint64_t addr, uint64_t ticks);

/* One group of live blocks by calling context (node). */
struct ulma_mem_leak {
	uint32_t node;
	uint64_t bytes;
	uint64_t count;
	uint64_t native_bytes; /* of bytes and count: native code's blocks */
	uint64_t native_count;
};

/* The blocks still live, grouped by calling context, largest first (*out
 * owned by the caller; *n of them).  0 or -ENOMEM. */
int ulma_profile_memory_leaks(const struct ulma_profile *p, struct ulma_mem_leak **out, uint32_t *n);

/* The same of process `pid`'s blocks only: what it holds now (none if the
 * process allocated nothing).  0 or -ENOMEM. */
int ulma_profile_memory_live_of(const struct ulma_profile *p, uint32_t pid, struct ulma_mem_leak **out, uint32_t *n);

/* The functions of calling context `node`, outermost first, at most max of
 * the innermost.  Returns how many were written. */
uint32_t ulma_profile_memory_stack(const struct ulma_profile *p, uint32_t node, uint32_t *funcs, uint32_t max);

/* The memory row of function f (zeros if it allocated nothing). */
struct ulma_mem_func ulma_profile_memory_func(const struct ulma_profile *p, uint32_t f);

/* The counter mark the monitor writes a process's resident bytes as. */
#define ULMA_MEM_RSS_COUNTER "memory: RSS (bytes)"

/* Process `pid` held `bytes` resident (a sample of its RSS).  0 or -ENOMEM. */
int ulma_profile_mem_rss(struct ulma_profile *p, uint32_t pid, uint64_t bytes);

/* The highest RSS any one process was seen at (0: never sampled). */
uint64_t ulma_profile_memory_peak_rss(const struct ulma_profile *p);

/* The process with the highest peak (NULL: nothing allocated). */
const struct ulma_mem_proc *ulma_profile_memory_peak(const struct ulma_profile *p);

#endif
