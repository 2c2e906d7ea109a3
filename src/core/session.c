/* session.c - shared-memory session layout and its slow paths (see session.h). */
#include "session.h"

#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ULMA_PAGE 4096u

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 64;
	while (p < v && p < (1u << 30))
		p <<= 1;
	return p;
}

void ulma_session_config_default(struct ulma_session_config *cfg)
{
	cfg->slot_count = 1024;
	cfg->ring_records = 1u << 18;
	cfg->defs_size = 16u << 20;
	cfg->lossless = false;
	cfg->use_tsc = true;
	cfg->c_calls = true;
	cfg->memory = false;
}

/* Compute the layout for a geometry; shared by create and validate. */
static void layout(struct ulma_shm_header *h)
{
	h->slots_offset = align_up(sizeof(struct ulma_shm_header), ULMA_PAGE);
	h->rings_offset = align_up(h->slots_offset + (uint64_t)h->slot_count * sizeof(struct ulma_shm_slot),
				   ULMA_PAGE);
	h->defs_offset = align_up(h->rings_offset + (uint64_t)h->slot_count * h->ring_records *
							    sizeof(struct ulma_record),
				  ULMA_PAGE);
	h->total_size = align_up(h->defs_offset + h->defs_size, ULMA_PAGE);
}

static int map_view(int fd, size_t size, struct ulma_session *out)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	out->hdr = p;
	out->size = size;
	return 0;
}

/* Point at the areas the (valid, filled-in) header describes. */
static void bind_areas(struct ulma_session *s)
{
	uint8_t *base = (uint8_t *)s->hdr;
	s->slots = (struct ulma_shm_slot *)(base + s->hdr->slots_offset);
	s->rings = (struct ulma_record *)(base + s->hdr->rings_offset);
	s->defs = base + s->hdr->defs_offset;
}

int ulma_session_create(const struct ulma_session_config *cfg, struct ulma_session *out)
{
	struct ulma_shm_header geo;
	int err;

	memset(out, 0, sizeof(*out));
	out->fd = -1;
	if (cfg->slot_count == 0 || cfg->slot_count > 65536 || cfg->defs_size < 4096 ||
	    cfg->defs_size > (UINT64_C(1) << 32))
		return -EINVAL;
	memset(&geo, 0, sizeof(geo));
	geo.slot_count = cfg->slot_count;
	geo.ring_records = pow2_at_least(cfg->ring_records);
	geo.defs_size = align_up(cfg->defs_size, 8);
	layout(&geo);

	out->fd = memfd_create("ulma-session", MFD_CLOEXEC);
	if (out->fd < 0)
		return -errno;
	/* memfd_create makes it 0777; opening /proc/<pid>/fd/<n> checks the mode */
	if (fchmod(out->fd, 0600) < 0)
		goto err_fd;
	if (ftruncate(out->fd, (off_t)geo.total_size) < 0)
		goto err_fd;
	err = map_view(out->fd, geo.total_size, out);
	if (err)
		goto err_fd_errno;
	/* the mapping is zero-filled: atomics start at 0, slots FREE */
	struct ulma_shm_header *h = out->hdr;
	h->version = ULMA_SHM_VERSION;
	h->header_size = sizeof(*h);
	h->total_size = geo.total_size;
	h->flags = (cfg->lossless ? ULMA_SHM_LOSSLESS : 0) | (cfg->use_tsc ? ULMA_SHM_CLOCK_TSC : 0) |
		   (cfg->c_calls ? 0 : ULMA_SHM_NO_C_CALLS) | (cfg->memory ? ULMA_SHM_MEMORY : 0);
	h->mem_sample_bytes = cfg->memory ? cfg->memory_sample_bytes : 0;
	h->slot_count = geo.slot_count;
	h->ring_records = geo.ring_records;
	h->record_size = sizeof(struct ulma_record);
	h->slots_offset = geo.slots_offset;
	h->rings_offset = geo.rings_offset;
	h->defs_offset = geo.defs_offset;
	h->defs_size = geo.defs_size;
	h->monitor_pid = (uint32_t)getpid();
	atomic_store_explicit(&h->next_id, 1, memory_order_relaxed);
	bind_areas(out);
	/* release: a process that sees the magic sees the whole header */
	atomic_thread_fence(memory_order_release);
	h->magic = ULMA_SHM_MAGIC;
	return 0;

err_fd:
	err = -errno;
err_fd_errno:
	close(out->fd);
	out->fd = -1;
	return err;
}

int ulma_session_map_fd(int fd, struct ulma_session *out)
{
	struct ulma_shm_header geo;
	off_t end = lseek(fd, 0, SEEK_END);

	memset(out, 0, sizeof(*out));
	out->fd = -1;
	if (end < 0)
		return -errno;
	if ((uint64_t)end < sizeof(geo) || pread(fd, &geo, sizeof(geo), 0) != (ssize_t)sizeof(geo))
		return -EPROTO;
	if (geo.magic != ULMA_SHM_MAGIC || geo.version != ULMA_SHM_VERSION ||
	    geo.header_size != sizeof(geo) || geo.record_size != sizeof(struct ulma_record) ||
	    geo.total_size != (uint64_t)end || geo.slot_count == 0 || geo.slot_count > 65536 ||
	    geo.ring_records < 64 || (geo.ring_records & (geo.ring_records - 1)) != 0)
		return -EPROTO;
	struct ulma_shm_header expect = geo;
	layout(&expect);
	if (expect.slots_offset != geo.slots_offset || expect.rings_offset != geo.rings_offset ||
	    expect.defs_offset != geo.defs_offset || expect.total_size != geo.total_size)
		return -EPROTO;
	int err = map_view(fd, geo.total_size, out);
	if (!err)
		bind_areas(out);
	return err;
}

void ulma_session_unmap(struct ulma_session *s)
{
	if (s->hdr)
		munmap(s->hdr, s->size);
	if (s->fd >= 0)
		close(s->fd);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

int ulma_session_claim_slot(struct ulma_session *s, uint32_t pid, uint32_t tid,
			    struct ulma_ring_writer *w)
{
	struct ulma_shm_header *h = s->hdr;
	for (uint32_t i = 0; i < h->slot_count; i++) {
		struct ulma_shm_slot *slot = &s->slots[i];
		uint32_t expected = ULMA_SLOT_FREE;
		if (atomic_load_explicit(&slot->state, memory_order_relaxed) != ULMA_SLOT_FREE)
			continue;
		/* acquire: see the monitor's reset of head and tail before reusing them */
		if (!atomic_compare_exchange_strong_explicit(&slot->state, &expected, ULMA_SLOT_CLAIMED,
							     memory_order_acquire, memory_order_relaxed))
			continue;
		slot->pid = pid;
		slot->tid = tid;
		slot->serial = atomic_fetch_add_explicit(&h->next_serial, 1, memory_order_relaxed);
		slot->gil_addr = s->gil_addr;
		slot->gil_len = s->gil_len;
		uint32_t cpu;
		slot->claimed_at = ulma_clock_now((h->flags & ULMA_SHM_CLOCK_TSC) != 0, &cpu);
		uint32_t used = atomic_load_explicit(&h->slots_used, memory_order_relaxed);
		while (used < i + 1 && !atomic_compare_exchange_weak_explicit(&h->slots_used, &used, i + 1,
									       memory_order_relaxed,
									       memory_order_relaxed))
			;
		ulma_ring_writer_init(w, h, slot, ulma_session_ring(s, i), h->ring_records,
				      (h->flags & ULMA_SHM_CLOCK_TSC) != 0);
		/* release: identity is visible before the monitor sees ACTIVE */
		atomic_store_explicit(&slot->state, ULMA_SLOT_ACTIVE, memory_order_release);
		return (int)i;
	}
	atomic_fetch_or_explicit(&h->failures, ULMA_FAIL_NO_SLOT, memory_order_relaxed);
	return -ENOSPC;
}

void ulma_session_close_slot(struct ulma_ring_writer *w)
{
	ulma_ring_writer_flush(w);
	/* release: every published record precedes CLOSED */
	atomic_store_explicit(&w->slot->state, ULMA_SLOT_CLOSED, memory_order_release);
}

int ulma_session_next_def_after_hole(const struct ulma_session *s, uint64_t hole, uint64_t *next)
{
	uint64_t used = atomic_load_explicit(&s->hdr->defs_used, memory_order_acquire);
	uint64_t limit = used < s->hdr->defs_size ? used : s->hdr->defs_size;
	for (uint64_t off = hole + 8; off + sizeof(struct ulma_shm_def) <= limit; off += 8) {
		uint64_t probe = off;
		struct ulma_def_view v;
		const struct ulma_shm_def *d = (const struct ulma_shm_def *)(s->defs + off);
		if (d->magic == ULMA_DEF_MAGIC && ulma_session_next_def(s, &probe, &v) == 1) {
			*next = off;
			return 1;
		}
	}
	return 0;
}

void ulma_session_recycle_slot(struct ulma_session *s, uint32_t i)
{
	struct ulma_shm_slot *slot = &s->slots[i];
	/* give back the pages the ring touched: memory follows the threads
	 * alive, not the threads ever started.  Old records need no clearing:
	 * they predate the next owner's claimed_at. */
	uint64_t used = atomic_load_explicit(&slot->head, memory_order_relaxed);
	uint64_t bytes = (used < s->hdr->ring_records ? used : s->hdr->ring_records) * sizeof(struct ulma_record);
	if (s->fd >= 0 && bytes) {
		uint64_t off = (uint64_t)((uint8_t *)ulma_session_ring(s, i) - (uint8_t *)s->hdr);
		(void)fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
				(off_t)align_up(bytes, ULMA_PAGE));
	}
	atomic_store_explicit(&slot->head, 0, memory_order_relaxed);
	atomic_store_explicit(&slot->tail, 0, memory_order_relaxed);
	slot->pid = slot->tid = 0;
	/* release: the reset positions are visible to the next claimer */
	atomic_store_explicit(&slot->state, ULMA_SLOT_FREE, memory_order_release);
}

static const char nul_stand_in[] = "\xef\xbf\xbd"; /* U+FFFD */
#define NUL_STAND_IN_LEN (sizeof(nul_stand_in) - 1)
#define CUT_MARK_LEN (sizeof(ULMA_DEF_CUT_MARK) - 1)

/* How a string is stored (ulma_session_define): NUL bytes grow to U+FFFD,
 * and past UINT16_MAX bytes it is cut before a whole character and marked. */
struct stored_string {
	size_t kept; /* bytes of the string stored */
	size_t size; /* bytes stored, the cut mark included */
	bool cut;
};

static size_t stored_size(char c)
{
	return c ? 1 : NUL_STAND_IN_LEN;
}

static struct stored_string plan_string(const char *s, size_t len)
{
	struct stored_string p = {len, 0, false};
	for (size_t i = 0; i < len; i++)
		p.size += stored_size(s[i]);
	if (p.size <= UINT16_MAX)
		return p;
	size_t room = UINT16_MAX - CUT_MARK_LEN, i = 0, size = 0;
	while (size + stored_size(s[i]) <= room) /* stops before len: the whole does not fit */
		size += stored_size(s[i++]);
	while (i > 0 && ((unsigned char)s[i] & 0xc0) == 0x80) /* s[i] continues a character: drop it all */
		size -= stored_size(s[--i]);
	return (struct stored_string){i, size + CUT_MARK_LEN, true};
}

static uint8_t *store_string(uint8_t *out, const char *s, struct stored_string p)
{
	for (size_t i = 0; i < p.kept; i++) {
		if (s[i]) {
			*out++ = (uint8_t)s[i];
		} else {
			memcpy(out, nul_stand_in, NUL_STAND_IN_LEN);
			out += NUL_STAND_IN_LEN;
		}
	}
	if (p.cut) {
		memcpy(out, ULMA_DEF_CUT_MARK, CUT_MARK_LEN);
		out += CUT_MARK_LEN;
	}
	return out;
}

uint32_t ulma_session_define(struct ulma_session *s, uint8_t kind, const char *name, size_t name_len,
			     const char *file, size_t file_len, uint32_t line)
{
	struct ulma_shm_header *h = s->hdr;
	struct stored_string name_plan = plan_string(name, name_len), file_plan = plan_string(file, file_len);
	uint64_t need = align_up(sizeof(struct ulma_shm_def) + name_plan.size + file_plan.size, 8);
	uint64_t off = atomic_fetch_add_explicit(&h->defs_used, need, memory_order_relaxed);
	if (off + need > h->defs_size) {
		atomic_fetch_or_explicit(&h->failures, ULMA_FAIL_DEFS_FULL, memory_order_relaxed);
		return 0;
	}
	struct ulma_shm_def *d = (struct ulma_shm_def *)(s->defs + off);
	uint32_t id = atomic_fetch_add_explicit(&h->next_id, 1, memory_order_relaxed);
	d->magic = ULMA_DEF_MAGIC;
	d->id = id;
	d->line = line;
	d->kind = kind;
	d->name_len = (uint16_t)name_plan.size;
	d->file_len = (uint16_t)file_plan.size;
	store_string(store_string((uint8_t *)(d + 1), name, name_plan), file, file_plan);
	/* release: the entry's bytes are complete before its size says so */
	atomic_store_explicit(&d->size, (uint32_t)need, memory_order_release);
	return id;
}

int ulma_session_next_def(const struct ulma_session *s, uint64_t *cursor, struct ulma_def_view *out)
{
	uint64_t off = *cursor;
	uint64_t limit = s->hdr->defs_size;
	if (off + sizeof(struct ulma_shm_def) > limit)
		return 0;
	struct ulma_shm_def *d = (struct ulma_shm_def *)(s->defs + off);
	/* acquire: pairs with the writer's release of size */
	uint32_t size = atomic_load_explicit(&d->size, memory_order_acquire);
	if (size == 0)
		return 0;
	if ((size & 7) || size < sizeof(*d) || off + size > limit || d->magic != ULMA_DEF_MAGIC ||
	    sizeof(*d) + (uint64_t)d->name_len + d->file_len > size || d->id == 0)
		return -EPROTO;
	out->id = d->id;
	out->line = d->line;
	out->kind = d->kind;
	out->name_len = d->name_len;
	out->file_len = d->file_len;
	out->name = (const char *)(d + 1);
	out->file = out->name + d->name_len;
	*cursor = off + size;
	return 1;
}
