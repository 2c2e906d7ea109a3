/* session.h - create, map and use a shared-memory tracing session.
 *
 * The monitor creates a session (a memfd) and passes its fd to the traced
 * program, which maps it.  Writers claim a thread slot and intern function
 * definitions; the monitor walks the slots and the definition area.  Every
 * offset read from the mapping is checked against its size, so a corrupt or
 * foreign segment gives an error, never a stray access.
 *
 * Errors are negative errno values.  No function here prints or exits.
 */
#ifndef ULMA_SESSION_H
#define ULMA_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"
#include "ulma/shm.h"

struct ulma_session_config {
	uint32_t slot_count;   /* thread slots; live threads beyond this lose events */
	uint32_t ring_records; /* per ring; rounded up to a power of two */
	uint64_t defs_size;    /* bytes for definitions */
	bool lossless;
	bool use_tsc;
	bool c_calls; /* record calls of builtins and other C functions */
	bool memory;  /* record Python's allocations and frees (docs/memory.md) */
	uint64_t memory_sample_bytes; /* with memory: sample one allocation every so many bytes (0: all) */
};

/* Defaults: 1024 slots of 256 Ki records (4 MiB) and 16 MiB of definitions.
 * The memfd is sparse; only pages a thread touches cost memory. */
void ulma_session_config_default(struct ulma_session_config *cfg);

/* A process's view of a mapped session.  Owned by whoever created or mapped
 * it; release with ulma_session_unmap. */
struct ulma_session {
	struct ulma_shm_header *hdr;
	struct ulma_shm_slot *slots;
	struct ulma_record *rings;
	uint8_t *defs;
	size_t size;
	int fd; /* -1 if closed */
	/* this process's GIL, copied into each slot it claims (0, 0: none) */
	uint64_t gil_addr;
	uint32_t gil_len;
};

/* Monitor: create and map a new session.  The fd is close-on-exec; the
 * caller chooses how to pass it on.  Returns 0 or -errno. */
int ulma_session_create(const struct ulma_session_config *cfg, struct ulma_session *out);

/* Program: map the session behind fd and validate its header.  Does not
 * take ownership of fd.  Returns 0, -EPROTO for a foreign or corrupt
 * segment, or -errno. */
int ulma_session_map_fd(int fd, struct ulma_session *out);

/* Unmap and close.  Accepts a zeroed or half-built session. */
void ulma_session_unmap(struct ulma_session *s);

static inline uint64_t ulma_session_capacity(const struct ulma_session *s)
{
	return s->hdr->ring_records;
}

static inline struct ulma_record *ulma_session_ring(const struct ulma_session *s, uint32_t slot)
{
	return s->rings + (size_t)slot * s->hdr->ring_records;
}

/* Writer: claim a free slot for (pid, tid) and set up w on it.  Returns the
 * slot index, or -ENOSPC when every slot is taken (the failure bit is set). */
int ulma_session_claim_slot(struct ulma_session *s, uint32_t pid, uint32_t tid,
			    struct ulma_ring_writer *w);

/* Writer: the thread is done; the monitor may drain and recycle the slot. */
void ulma_session_close_slot(struct ulma_ring_writer *w);

/* Writer: store a definition and return its new id, or 0 if the area is
 * full (failure bit set).  Every reader takes a name for a C string, so a
 * NUL byte in name or file is stored as U+FFFD (the rest of the name
 * follows).  A string that does not fit the 16-bit length (65535 bytes)
 * is cut at a character boundary and ends in ULMA_DEF_CUT_MARK, so the
 * cut shows wherever the name does. */
#define ULMA_DEF_CUT_MARK "..."
uint32_t ulma_session_define(struct ulma_session *s, uint8_t kind, const char *name, size_t name_len,
			     const char *file, size_t file_len, uint32_t line);

/* A definition as read back from the area.  Pointers point into the mapping. */
struct ulma_def_view {
	uint32_t id;
	uint32_t line;
	uint8_t kind;
	uint16_t name_len;
	uint16_t file_len;
	const char *name;
	const char *file;
};

/* Monitor: read the definition at *cursor.  Returns 1 and advances the
 * cursor, 0 if none is complete there yet, or -EPROTO if it is corrupt. */
int ulma_session_next_def(const struct ulma_session *s, uint64_t *cursor, struct ulma_def_view *out);

/* Monitor: the entry at `hole` has stayed incomplete (its writer may have
 * died).  Find the next complete entry after it: returns 1 and *next, or 0
 * if there is none yet.  The hole may still complete later; re-read it. */
int ulma_session_next_def_after_hole(const struct ulma_session *s, uint64_t hole, uint64_t *next);

/* Monitor: a CLOSED slot is fully drained; reset it and make it FREE. */
void ulma_session_recycle_slot(struct ulma_session *s, uint32_t slot);

#endif
