/* shm.h - the shared-memory session format between traced program and monitor.
 *
 * One session is one memfd mapping shared by the monitor (which creates it)
 * and every traced process (which maps it by fd).  It holds, in order:
 *   - a header page: magic, version, geometry, clock mode and control words;
 *   - a thread directory: one slot per traced thread, each carrying the two
 *     positions of that thread's single-producer single-consumer ring;
 *   - the rings: slot i owns ring i, an array of fixed-size records;
 *   - a definition area: append-only (id -> kind, name, file, line) entries.
 * Every field is an integer; no pointer into either process is ever stored.
 * The reader validates the geometry against the mapping size before use.
 */
#ifndef ULMA_SHM_H
#define ULMA_SHM_H

#include <assert.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define ULMA_SHM_MAGIC UINT64_C(0x314d48534d4c5500) /* "\0ULMSHM1" */
#define ULMA_SHM_VERSION 8u /* 8: processes name themselves (ULMA_DEF_PROCESS) */
#define ULMA_CACHELINE 64

/* Header flags, fixed at session creation. */
enum ulma_shm_flag {
	ULMA_SHM_LOSSLESS = 1u << 0,  /* writers wait for room instead of dropping */
	ULMA_SHM_CLOCK_TSC = 1u << 1, /* record times are TSC ticks, else CLOCK_MONOTONIC ns */
	ULMA_SHM_NO_C_CALLS = 1u << 2, /* record Python functions only, not builtins */
	ULMA_SHM_MEMORY = 1u << 3,     /* record every allocation and free of Python's allocators
					* and native code's (--memory, docs/memory.md) */
};

/* Sticky failure bits set by writers, reported by the monitor at the end. */
enum ulma_shm_failure {
	ULMA_FAIL_DEFS_FULL = 1u << 0,  /* definition area exhausted: names shown as "?" */
	ULMA_FAIL_NO_SLOT = 1u << 1,    /* more live threads than slots: their events lost */
	ULMA_FAIL_NOMEM = 1u << 2,      /* an allocation in a slow path failed */
	ULMA_FAIL_MONITOR_GONE = 1u << 3, /* lossless writer found the monitor dead */
	ULMA_FAIL_HOOK_REPLACED = 1u << 4, /* something else took ulma's profile hook off a thread (3.9-3.11) */
	ULMA_FAIL_LINES_TRACER = 1u << 5,  /* code chosen with --lines ran on a thread that had a trace
					    * function of the program's (sys.settrace: a debugger,
					    * coverage), so its lines there were not recorded (3.9-3.11) */
	ULMA_FAIL_NOT_CALIBRATED = 1u << 6, /* the hook's cost could not be measured, at the start nor at the
					     * stop: a sys.monitoring tool of the program's watched every thread
					     * while others ran (3.12+, docs/overhead.md); times keep the cost */
};

enum ulma_record_kind {
	ULMA_REC_ENTER = 1, /* id = function entered */
	ULMA_REC_EXIT = 2,  /* id = function left (used to resynchronise after loss) */
	ULMA_REC_LOST = 3,  /* id = number of records dropped before this one (saturating) */
	ULMA_REC_STOP = 4,  /* tracing stopped for this thread: its open frames end at this time */
	/* Native functions (-finstrument-functions): the function's address,
	 * below 2^48, is id | cpu << 32; such records carry no CPU number. */
	ULMA_REC_NATIVE_ENTER = 5,
	ULMA_REC_NATIVE_EXIT = 6,
	ULMA_REC_INSTANT = 7,     /* id = ULMA_DEF_MARK naming a point in time */
	ULMA_REC_VALUE = 8,       /* id = 32 bits of a double, the high half where cpu = 0, the low
				   * half where cpu = 1: the value of the COUNTER that follows */
	ULMA_REC_COUNTER = 9,     /* id = ULMA_DEF_MARK naming a counter; its value came just before */
	ULMA_REC_THREAD_NAME = 10, /* id = ULMA_DEF_MARK: the thread's name from now on */
	/* Lines of the code chosen with --lines (docs/lines.md): they belong
	 * to the thread's innermost open frame, a Python function's. */
	ULMA_REC_LINE = 11,        /* id = line number: the frame starts executing this line (a hit) */
	ULMA_REC_LINE_RESUME = 12, /* id = line number: the frame resumed inside this line (a generator's
				    * resume or throw); not a hit, the line's time goes on */
	/* Memory (--memory, docs/memory.md): a block of Python's allocators.
	 * Each carries a 48-bit value as id | cpu << 32, as native records do,
	 * and no CPU number.  An allocation is one ALLOC_SMALL where it fits
	 * (version 7), else MEM_SIZE then ALLOC, all with the time read after
	 * the allocator returned; a free's time is read before the block is
	 * given back, so that an address handed to another thread at once is
	 * freed before it is allocated again.  A realloc that moved or resized
	 * a block is FREE (old) then the allocation's record(s). */
	ULMA_REC_MEM_SIZE = 13, /* value = size << 2 | domain (enum ulma_mem_domain) of the ALLOC
				 * that follows; a size of 2^46 bytes or more is written as 2^46 - 1 */
	ULMA_REC_ALLOC = 14,    /* value = the block's address */
	ULMA_REC_FREE = 15,     /* value = the block's address */
	/* (version 7) an allocation in one record, for a block of fewer than
	 * ULMA_MEM_SMALL_MAX bytes at a 16-byte aligned address below 2^48:
	 * value = address | size & 15, flags = size >> 4 | domain << 6
	 * (ulma_mem_small_encode below). */
	ULMA_REC_ALLOC_SMALL = 18,
	/* Objects (--memory on Python 3.13+, docs/memory.md): a Python object
	 * of type `id` (a ULMA_DEF_TYPE definition) created or destroyed; no
	 * CPU number. */
	ULMA_REC_OBJ_NEW = 16,
	ULMA_REC_OBJ_FREE = 17,
	/* MPI (libulma_mpi.so, docs/mpi.md): an MPI event is up to
	 * ULMA_MPI_ARGS_MAX MPI_ARG records, each a 48-bit value as id | cpu << 32
	 * (no CPU number), then one MPI_EVENT whose id is the operation (enum
	 * ulma_mpi_op, src/core/mpi_event.h) and cpu the CPU; all carry the
	 * event's time. */
	ULMA_REC_MPI_ARG = 20,
	ULMA_REC_MPI_EVENT = 21,
};
#define ULMA_REC_KIND_MAX 21u

/* Python's allocator domains (PyMemAllocatorDomain's order). */
enum ulma_mem_domain {
	ULMA_MEM_RAW = 0, /* PyMem_RawMalloc: called without the GIL too */
	ULMA_MEM_MEM = 1, /* PyMem_Malloc */
	ULMA_MEM_OBJ = 2, /* PyObject_Malloc: objects */
	ULMA_MEM_NATIVE = 3, /* (version 6) malloc, mmap and the rest, called by native code
			      * directly (src/runtime/alloc.c) */
};
#define ULMA_MEM_SIZE_MAX ((UINT64_C(1) << 46) - 1)
#define ULMA_MEM_SMALL_MAX 1024u /* ALLOC_SMALL's sizes are below this */

/* ALLOC_SMALL's 48-bit value and flags byte for block addr of `size` bytes
 * in `domain`: false (nothing set) where the block does not fit one
 * record (unaligned, at 2^48 or above, or ULMA_MEM_SMALL_MAX bytes or
 * more): then MEM_SIZE and ALLOC carry it. */
static inline bool ulma_mem_small_encode(uint64_t addr, uint64_t size, unsigned domain, uint64_t *value,
					 uint8_t *flags)
{
	if ((addr & (UINT64_C(0xffff000000000000) | 15)) != 0 || size >= ULMA_MEM_SMALL_MAX)
		return false;
	*value = addr | (size & 15);
	*flags = (uint8_t)(size >> 4 | (domain & 3) << 6);
	return true;
}

/* The block an ALLOC_SMALL record's value and flags describe. */
static inline void ulma_mem_small_decode(uint64_t value, uint8_t flags, uint64_t *addr, uint64_t *size,
					 unsigned *domain)
{
	*addr = value & ~(uint64_t)15;
	*size = (value & 15) | (uint64_t)(flags & 63) << 4;
	*domain = flags >> 6;
}

/* Record flags. */
enum ulma_record_flag {
	ULMA_RECF_PROXY = 1u << 0, /* written by another thread on this one's behalf (its frames
				    * open at a start, its STOP): says nothing of where it runs */
};

/* One event in a ring: 16 bytes, written by the hook, read by the monitor. */
struct ulma_record {
	uint64_t time; /* TSC ticks or ns, per ULMA_SHM_CLOCK_TSC */
	uint32_t id;
	uint16_t cpu;  /* CPU the event was taken on, from rdtscp or getcpu */
	uint8_t kind;  /* enum ulma_record_kind */
	uint8_t flags; /* enum ulma_record_flag */
};
static_assert(sizeof(struct ulma_record) == 16, "ring record is 16 bytes");

enum ulma_slot_state {
	ULMA_SLOT_FREE = 0,    /* no owner; a writer may claim it with a CAS */
	ULMA_SLOT_CLAIMED = 1, /* a writer is initialising it */
	ULMA_SLOT_ACTIVE = 2,  /* owned by a live thread */
	ULMA_SLOT_CLOSED = 3,  /* writer done; monitor drains it, then frees it */
};

/* Thread directory entry.  The three cache lines keep the writer's position,
 * the reader's position and the rarely written identity apart. */
struct ulma_shm_slot {
	_Atomic uint32_t state; /* enum ulma_slot_state */
	uint32_t pid;
	uint32_t tid;
	uint32_t reserved;
	uint64_t serial; /* session-unique thread number, set before ACTIVE */
	uint64_t gil_addr; /* the thread's interpreter lock: a futex wait on an */
	uint32_t gil_len;  /* address in [gil_addr, gil_addr + gil_len) waits for */
	uint32_t reserved2; /* the GIL (0, 0: unknown).  Set before ACTIVE. */
	uint64_t claimed_at; /* session clock when claimed: older records in the ring
			      * are a previous owner's (set before ACTIVE) */
	uint8_t pad0[ULMA_CACHELINE - 48];
	_Atomic uint64_t head; /* records published by the writer (only grows) */
	uint8_t pad1[ULMA_CACHELINE - 8];
	_Atomic uint64_t tail; /* records consumed by the monitor (only grows) */
	uint8_t pad2[ULMA_CACHELINE - 8];
};
static_assert(sizeof(struct ulma_shm_slot) == 3 * ULMA_CACHELINE, "slot is 3 cache lines");

/* Session header at offset 0.  Geometry is written once by the creator
 * before any other process maps the session; control words are atomics. */
struct ulma_shm_header {
	uint64_t magic;
	uint32_t version;
	uint32_t header_size;   /* sizeof(struct ulma_shm_header) */
	uint64_t total_size;    /* bytes in the mapping */
	uint32_t flags;         /* enum ulma_shm_flag */
	uint32_t slot_count;
	uint32_t ring_records;  /* records per ring, a power of two */
	uint32_t record_size;   /* sizeof(struct ulma_record) */
	uint64_t slots_offset;
	uint64_t rings_offset;
	uint64_t defs_offset;
	uint64_t defs_size;
	uint32_t monitor_pid;
	uint32_t reserved0;
	uint8_t pad0[ULMA_CACHELINE];

	_Atomic uint64_t defs_used;     /* bytes of the definition area handed out */
	_Atomic uint32_t next_id;       /* next function id; 0 is never used */
	_Atomic uint32_t failures;      /* enum ulma_shm_failure, sticky */
	_Atomic uint64_t next_serial;   /* next thread serial */
	_Atomic uint64_t lost_unmarked; /* drops no LOST marker reports: no free slot, or a ring still full at thread exit */
	_Atomic uint64_t heartbeat_ns;  /* monitor's CLOCK_MONOTONIC, refreshed while alive */
	_Atomic uint32_t program_pid;   /* the process that ran `ulma run`'s bootstrap, else the
					 * first that started tracing (0: neither yet) */
	_Atomic uint32_t tracing;       /* 1 while some process traces into the session */
	_Atomic uint64_t started;       /* count of start() calls on the session */
	_Atomic uint64_t overhead_ps;   /* the hook's cost per event in ps, measured by the
					 * first process to start (0: not yet) */
	_Atomic uint32_t slots_used;    /* one past the highest slot ever claimed */
	uint64_t mem_sample_bytes;         /* --memory=sample:BYTES (fixed at creation): allocations are
					    * sampled, one every BYTES bytes on average; 0: every one */
	_Atomic uint64_t mem_unattributed; /* --memory: allocations and frees no thread could
					    * record (no slot, or tracing stopping meanwhile) */
};
static_assert(sizeof(struct ulma_shm_header) <= 4096, "header fits in one page");
static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free for shared memory");

/* What a definition names.  The C kinds differ in what their name's owner
 * is (docs/trace-format.md, "Definitions"); the pstats export names each
 * as cProfile does.  Traces written before kinds 3-5 existed have every C
 * function as ULMA_DEF_C.  Test for C through ulma_def_is_c. */
enum ulma_def_kind {
	ULMA_DEF_PY = 1,            /* Python code object: qualified name (bare before 3.11) */
	ULMA_DEF_C = 2,             /* a module's C function: "module.function" */
	ULMA_DEF_C_METHOD = 3,      /* a method of a type's instances: "Type.method", the type defining it */
	ULMA_DEF_C_CLASSMETHOD = 4, /* a method of a class itself (classmethod, staticmethod, a type's
				     * __new__): "Class.method", the class defining it */
	ULMA_DEF_C_UNBOUND = 5,     /* a C function bound to no object: "module.function" or "function" */
	ULMA_DEF_NATIVE = 6,        /* a native function, named by the monitor from its address */
	ULMA_DEF_ZONE = 7,          /* a zone of the C API or ulma.zone(): name, file, line */
	ULMA_DEF_MODULE = 8,        /* session only: an ELF object a process loaded: name = its
				     * path, file = its load bias in 16 hex digits,
				     * line = the pid of the process */
	ULMA_DEF_MARK = 9,          /* the name of an instant, a counter or a thread */
	ULMA_DEF_LINES_WANTED = 10, /* session only, written by the monitor before the program
				     * starts: name = a --lines pattern (docs/lines.md) */
	ULMA_DEF_LINES_MATCHED = 11, /* session only, written by a traced process as it stops
				      * tracing: name = a pattern it was given, line = how many
				      * code objects it chose for it (0: none) */
	ULMA_DEF_TYPE = 12,         /* a Python type whose objects are counted (ULMA_REC_OBJ_*):
				     * name = its tp_name */
	ULMA_DEF_PROCESS = 13,      /* (version 8) session only, written by a traced process before
				     * its first thread claims a slot (in each session it maps, and
				     * again in a forked child or after an exec): name = what to call
				     * it, its command line as src/core/proc_name.h formats it;
				     * file = its parent's pid in decimal; line = its pid */
};

static inline bool ulma_def_is_c(unsigned kind)
{
	return kind >= ULMA_DEF_C && kind <= ULMA_DEF_C_UNBOUND;
}

#define ULMA_DEF_MAGIC 0x46454455u /* "UDEF" */

/* Definition entry in the definition area.  `size` is 0 until the entry is
 * complete; the writer stores it last, with release ordering.  A process
 * that dies between reserving an entry and completing it leaves a hole: the
 * magic lets a reader find the next complete entry beyond it. */
struct ulma_shm_def {
	_Atomic uint32_t size; /* whole entry in bytes, a multiple of 8 */
	uint32_t magic;        /* ULMA_DEF_MAGIC */
	uint32_t id;
	uint32_t line;
	uint8_t kind; /* enum ulma_def_kind */
	uint8_t reserved;
	uint16_t name_len;
	uint16_t file_len;
	uint16_t reserved2;
	/* name_len bytes of name, then file_len bytes of file (UTF-8, unterminated) */
};
static_assert(sizeof(struct ulma_shm_def) == 24, "definition header is 24 bytes");

#endif
