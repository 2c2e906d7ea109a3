/* trace_writer.c - chunked, delta-varint trace encoding (see trace_writer.h
 * and docs/trace-format.md). */
#include "trace_writer.h"

#include "mpi_event.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "crc32c.h"
#include "safe_file.h"
#include "ulma/trace_format.h"
#include "varint.h"

#define STREAM_FLUSH_BYTES (64u << 10)

struct buf {
	uint8_t *data;
	size_t len;
	size_t cap;
};

struct ulma_trace_writer {
	int fd;
	int error; /* first -errno, sticky */
	uint64_t bytes;
	struct buf defs;
	struct ulma_trace_stream **streams;
	size_t nstreams;
	size_t cap_streams;
};

/* Make room for n more bytes; on failure record -ENOMEM and return false. */
static bool buf_reserve(struct ulma_trace_writer *w, struct buf *b, size_t n)
{
	if (b->len + n <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + n)
		cap *= 2;
	uint8_t *p = realloc(b->data, cap);
	if (!p) {
		if (!w->error)
			w->error = -ENOMEM;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

static void buf_varint(struct buf *b, uint64_t v)
{
	b->len += ulma_varint_put(b->data + b->len, v);
}

static void buf_bytes(struct buf *b, const void *p, size_t n)
{
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void put_u32le(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static int write_all(struct ulma_trace_writer *w, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t r = writev(w->fd, iov, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		w->bytes += (uint64_t)r;
		while (n > 0 && (size_t)r >= iov->iov_len) {
			r -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + r;
			iov->iov_len -= (size_t)r;
		}
	}
	return 0;
}

/* Write one chunk whose payload is prefix followed by body. */
static int write_chunk(struct ulma_trace_writer *w, uint32_t type, const uint8_t *prefix, size_t plen,
		       const uint8_t *body, size_t blen)
{
	uint8_t hdr[ULMA_TRACE_CHUNK_HEADER];
	if (w->error)
		return w->error;
	if (plen + blen > ULMA_TRACE_MAX_CHUNK)
		return w->error = -EFBIG;
	uint32_t crc = ulma_crc32c(ulma_crc32c(0, prefix, plen), body, blen);
	put_u32le(hdr, type);
	put_u32le(hdr + 4, (uint32_t)(plen + blen));
	put_u32le(hdr + 8, crc);
	struct iovec iov[3] = {{hdr, sizeof(hdr)}, {(void *)prefix, plen}, {(void *)body, blen}};
	int err = write_all(w, iov, 3);
	if (err)
		w->error = err;
	return err;
}

static int flush_defs(struct ulma_trace_writer *w)
{
	if (w->defs.len == 0)
		return w->error;
	int err = write_chunk(w, ULMA_CHUNK_DEFS, NULL, 0, w->defs.data, w->defs.len);
	w->defs.len = 0;
	return err;
}

/* SCHED payload: varint serial, values per sample (3 or 4), count, then
 * per sample the deltas of ticks, cpu ns, wait ns (and GIL ns) from the
 * previous sample (the first from 0). */
static int flush_sched(struct ulma_trace_stream *s)
{
	struct ulma_trace_writer *w = s->owner;
	uint8_t prefix[3 * ULMA_VARINT_MAX];
	size_t n = 0;
	if (s->nsched == 0)
		return w->error;
	n += ulma_varint_put(prefix + n, s->serial);
	n += ulma_varint_put(prefix + n, s->sched_fields);
	n += ulma_varint_put(prefix + n, s->nsched);
	int err = write_chunk(w, ULMA_CHUNK_SCHED, prefix, n, s->sched, s->sched_len);
	s->sched_len = 0;
	s->nsched = 0;
	memset(s->sched_last, 0, sizeof(s->sched_last));
	return err;
}

/* EVENTS payload: varint serial, count, first cpu; then the body, which
 * opens with the absolute time of the first event.  The thread's pending
 * samples go first: a reader has them before the events they bracket. */
static int flush_stream(struct ulma_trace_stream *s)
{
	struct ulma_trace_writer *w = s->owner;
	uint8_t prefix[4 * ULMA_VARINT_MAX];
	size_t n = 0;
	int err = flush_defs(w);
	if (err)
		return err;
	if ((err = flush_sched(s)))
		return err;
	if (s->len == 0)
		return w->error;
	n += ulma_varint_put(prefix + n, s->serial);
	n += ulma_varint_put(prefix + n, s->count);
	n += ulma_varint_put(prefix + n, s->first_cpu);
	err = write_chunk(w, ULMA_CHUNK_EVENTS, prefix, n, s->body, s->len);
	s->len = 0;
	s->count = 0;
	return err;
}

int ulma_trace_stream_flush(struct ulma_trace_stream *s)
{
	return flush_stream(s);
}

int ulma_trace_writer_open(const char *path, const struct ulma_trace_meta *meta,
			   struct ulma_trace_writer **out)
{
	struct ulma_trace_writer *w = calloc(1, sizeof(*w));
	int err;
	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->fd = ulma_safe_create(path, 0644);
	if (w->fd < 0) {
		err = w->fd;
		goto err_free;
	}
	uint8_t fh[ULMA_TRACE_FILE_HEADER] = {0};
	memcpy(fh, ULMA_TRACE_MAGIC, 8);
	put_u32le(fh + 8, ULMA_TRACE_VERSION);
	struct iovec iov = {fh, sizeof(fh)};
	err = write_all(w, &iov, 1);
	if (err)
		goto err_close;

	size_t clen = meta->command ? strlen(meta->command) : 0;
	struct buf m = {0};
	if (!buf_reserve(w, &m, 8 * ULMA_VARINT_MAX + clen)) {
		err = -ENOMEM;
		goto err_close;
	}
	buf_varint(&m, meta->flags);
	buf_varint(&m, meta->pid);
	buf_varint(&m, meta->start_ticks);
	buf_varint(&m, meta->start_ns);
	buf_varint(&m, meta->tick_hz);
	buf_varint(&m, clen);
	buf_bytes(&m, meta->command ? meta->command : "", clen);
	buf_varint(&m, meta->mem_sample_bytes);
	err = write_chunk(w, ULMA_CHUNK_META, NULL, 0, m.data, m.len);
	free(m.data);
	if (err)
		goto err_close;
	*out = w;
	return 0;

err_close:
	close(w->fd);
err_free:
	free(w);
	return err;
}

int ulma_trace_define_file(struct ulma_trace_writer *w, uint32_t file_id, const char *path, size_t len)
{
	if (!buf_reserve(w, &w->defs, 3 * ULMA_VARINT_MAX + len))
		return w->error;
	buf_varint(&w->defs, ULMA_DEFTAG_FILE);
	buf_varint(&w->defs, file_id);
	buf_varint(&w->defs, len);
	buf_bytes(&w->defs, path, len);
	return 0;
}

int ulma_trace_define_source(struct ulma_trace_writer *w, uint32_t file_id, unsigned flags, const char *text,
			     size_t len)
{
	if (!buf_reserve(w, &w->defs, 4 * ULMA_VARINT_MAX + len))
		return w->error;
	buf_varint(&w->defs, ULMA_DEFTAG_SOURCE);
	buf_varint(&w->defs, file_id);
	buf_varint(&w->defs, flags);
	buf_varint(&w->defs, len);
	buf_bytes(&w->defs, text, len);
	return 0;
}

int ulma_trace_define_func(struct ulma_trace_writer *w, uint32_t id, uint8_t kind, uint32_t file_id,
			   uint32_t line, const char *name, size_t len)
{
	if (!buf_reserve(w, &w->defs, 6 * ULMA_VARINT_MAX + len))
		return w->error;
	buf_varint(&w->defs, ULMA_DEFTAG_FUNC);
	buf_varint(&w->defs, id);
	buf_varint(&w->defs, kind);
	buf_varint(&w->defs, file_id);
	buf_varint(&w->defs, line);
	buf_varint(&w->defs, len);
	buf_bytes(&w->defs, name, len);
	return 0;
}

int ulma_trace_stream_open(struct ulma_trace_writer *w, uint64_t serial, uint32_t pid, uint32_t tid,
			   struct ulma_trace_stream **out)
{
	uint8_t p[3 * ULMA_VARINT_MAX];
	size_t n = 0;
	*out = NULL;
	if (w->nstreams == w->cap_streams) {
		size_t cap = w->cap_streams ? w->cap_streams * 2 : 16;
		struct ulma_trace_stream **v = realloc(w->streams, cap * sizeof(*v));
		if (!v)
			return w->error = -ENOMEM;
		w->streams = v;
		w->cap_streams = cap;
	}
	struct ulma_trace_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return w->error = -ENOMEM;
	s->owner = w;
	s->serial = serial;
	s->cap = STREAM_FLUSH_BYTES + 2 * ULMA_TRACE_EVENT_MAX;
	s->room = STREAM_FLUSH_BYTES;
	if (!(s->body = malloc(s->cap))) {
		free(s);
		return w->error = -ENOMEM;
	}
	w->streams[w->nstreams++] = s;
	int err = flush_defs(w);
	if (err)
		return err;
	n += ulma_varint_put(p + n, serial);
	n += ulma_varint_put(p + n, pid);
	n += ulma_varint_put(p + n, tid);
	err = write_chunk(w, ULMA_CHUNK_THREAD, p, n, NULL, 0);
	if (err)
		return err;
	*out = s;
	return 0;
}

void ulma_trace_begin_slow(struct ulma_trace_stream *s, uint64_t *ticks, uint32_t cpu)
{
	/* a full buffer, or a delta too wide for 61 bits beside its tag: start
	 * a chunk, whose first event carries an absolute time */
	if (s->len >= s->room || (s->len && *ticks > s->last_ticks && *ticks - s->last_ticks >= (UINT64_C(1) << 61)))
		flush_stream(s);
	if (s->owner->error) { /* writing has failed: keep appending into a buffer never written */
		s->len = 0;
		s->count = 0;
	}
	if (s->len == 0) {
		s->count = 0;
		s->len = ulma_varint_put(s->body, *ticks);
		s->last_ticks = *ticks;
		s->first_cpu = s->cpu = cpu;
		s->mem_addr = 0;
		s->has_memory = false;
	}
	if (*ticks < s->last_ticks)
		*ticks = s->last_ticks;
	if (cpu != s->cpu) {
		s->len += ulma_varint_put(s->body + s->len, ULMA_TAG_EXT);
		s->len += ulma_varint_put(s->body + s->len, ULMA_EXT_CPU);
		s->len += ulma_varint_put(s->body + s->len, cpu);
		s->cpu = cpu;
	}
}

/* An extension record's word at ticks on cpu; counted as an event or not. */
static void ext_word_on(struct ulma_trace_stream *s, uint64_t ticks, uint32_t cpu, bool event)
{
	struct ulma_trace_cursor c;
	ulma_trace_cursor_get(s, &c);
	ulma_trace_cursor_word(s, &c, ticks, cpu, ULMA_TAG_EXT);
	if (!event)
		c.count--;
	ulma_trace_cursor_put(s, &c);
}

/* The same on the stream's current CPU. */
static void ext_word(struct ulma_trace_stream *s, uint64_t ticks, bool event)
{
	ext_word_on(s, ticks, s->cpu, event);
}

void ulma_trace_lost(struct ulma_trace_stream *s, uint64_t ticks, uint64_t count)
{
	ext_word(s, ticks, true);
	s->len += ulma_varint_put(s->body + s->len, ULMA_EXT_LOST);
	s->len += ulma_varint_put(s->body + s->len, count);
}

void ulma_trace_off(struct ulma_trace_stream *s, uint64_t ticks, uint32_t cpu, unsigned state, uint64_t ns)
{
	ext_word_on(s, ticks, cpu == ULMA_TRACE_SAME_CPU ? s->cpu : cpu, false); /* not an event of its own */
	s->len += ulma_varint_put(s->body + s->len, ULMA_EXT_OFF);
	s->len += ulma_varint_put(s->body + s->len, state);
	s->len += ulma_varint_put(s->body + s->len, ns);
}

void ulma_trace_line(struct ulma_trace_stream *s, uint64_t ticks, uint32_t line, bool resumed)
{
	ext_word(s, ticks, true);
	s->len += ulma_varint_put(s->body + s->len, resumed ? ULMA_EXT_LINE_RESUME : ULMA_EXT_LINE);
	s->len += ulma_varint_put(s->body + s->len, line);
}

/* Addresses are zigzag deltas from the chunk's previous one: blocks are
 * mostly near each other, so two or three bytes instead of seven
 * (ulma_trace_cursor_memory). */
void ulma_trace_alloc(struct ulma_trace_stream *s, uint64_t ticks, uint64_t addr, uint64_t size, unsigned domain)
{
	struct ulma_trace_cursor c;
	ulma_trace_cursor_get(s, &c);
	ulma_trace_cursor_memory(s, &c, ticks, true, addr, size, domain);
	ulma_trace_cursor_put(s, &c);
}

void ulma_trace_free(struct ulma_trace_stream *s, uint64_t ticks, uint64_t addr)
{
	struct ulma_trace_cursor c;
	ulma_trace_cursor_get(s, &c);
	ulma_trace_cursor_memory(s, &c, ticks, false, addr, 0, 0);
	ulma_trace_cursor_put(s, &c);
}

void ulma_trace_object(struct ulma_trace_stream *s, uint64_t ticks, unsigned ext, uint32_t id)
{
	ext_word(s, ticks, false); /* not an event of its own */
	s->len += ulma_varint_put(s->body + s->len, ext);
	s->len += ulma_varint_put(s->body + s->len, id);
}

void ulma_trace_mpi(struct ulma_trace_stream *s, uint64_t ticks, unsigned op, const uint64_t *args, unsigned n)
{
	if (n > ULMA_MPI_ARGS_MAX)
		n = ULMA_MPI_ARGS_MAX;
	ext_word(s, ticks, false); /* not an event of its own */
	s->len += ulma_varint_put(s->body + s->len, ULMA_EXT_MPI);
	s->len += ulma_varint_put(s->body + s->len, op);
	s->len += ulma_varint_put(s->body + s->len, n);
	for (unsigned i = 0; i < n; i++) /* 48 bits at most: 7 bytes, so the event fits the stream's slack */
		s->len += ulma_varint_put(s->body + s->len, args[i] & ((UINT64_C(1) << 48) - 1));
}

void ulma_trace_mark(struct ulma_trace_stream *s, uint64_t ticks, unsigned ext, uint32_t id, double value)
{
	ext_word(s, ticks, false); /* not an event of its own */
	s->len += ulma_varint_put(s->body + s->len, ext);
	s->len += ulma_varint_put(s->body + s->len, id);
	if (ext == ULMA_EXT_COUNTER) {
		uint64_t bits;
		memcpy(&bits, &value, sizeof(bits));
		s->len += ulma_varint_put(s->body + s->len, bits);
	}
}

void ulma_trace_sched(struct ulma_trace_stream *s, const struct ulma_trace_sched *sample)
{
	uint64_t v[4] = {sample->ticks, sample->cpu_ns, sample->wait_ns, sample->gil_ns};
	unsigned fields = sample->gil_known ? 4 : 3;
	if (s->nsched && fields != s->sched_fields)
		flush_sched(s); /* a chunk holds samples of one shape */
	s->sched_fields = fields;
	for (unsigned i = 0; i < fields; i++)
		if (v[i] < s->sched_last[i])
			return; /* samples only grow; a stale one carries nothing */
	struct buf b = {s->sched, s->sched_len, s->sched_cap};
	bool ok = buf_reserve(s->owner, &b, 4 * ULMA_VARINT_MAX);
	s->sched = b.data;
	s->sched_cap = b.cap;
	if (!ok)
		return;
	for (unsigned i = 0; i < fields; i++) {
		s->sched_len += ulma_varint_put(s->sched + s->sched_len, v[i] - s->sched_last[i]);
		s->sched_last[i] = v[i];
	}
	s->nsched++;
	if (s->sched_len >= STREAM_FLUSH_BYTES)
		flush_sched(s);
}

int ulma_trace_writer_flush(struct ulma_trace_writer *w)
{
	flush_defs(w);
	for (size_t i = 0; i < w->nstreams; i++)
		flush_stream(w->streams[i]);
	return w->error;
}

uint64_t ulma_trace_writer_bytes(const struct ulma_trace_writer *w)
{
	return w->bytes;
}

void ulma_trace_writer_abandon(struct ulma_trace_writer *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nstreams; i++) {
		free(w->streams[i]->body);
		free(w->streams[i]->sched);
		free(w->streams[i]);
	}
	free(w->streams);
	free(w->defs.data);
	if (w->fd >= 0)
		close(w->fd);
	free(w);
}

int ulma_trace_mpi_rank(struct ulma_trace_writer *w, const struct ulma_trace_rank *r)
{
	uint8_t p[12 * ULMA_VARINT_MAX];
	size_t len = r->host_len > ULMA_TRACE_MAX_NAME ? ULMA_TRACE_MAX_NAME : r->host_len;
	size_t n = ulma_varint_put(p, r->pid);
	n += ulma_varint_put(p + n, r->rank);
	n += ulma_varint_put(p + n, r->size);
	n += ulma_varint_put(p + n, len);
	uint8_t tail[6 * ULMA_VARINT_MAX];
	size_t m = 0;
	if (r->merged) {
		m += ulma_varint_put(tail + m, r->events);
		m += ulma_varint_put(tail + m, r->mpi_ns);
		m += ulma_varint_put(tail + m, ulma_zigzag(r->offset_init_ns));
		m += ulma_varint_put(tail + m, ulma_zigzag(r->offset_final_ns));
		m += ulma_varint_put(tail + m, r->unmatched);
	}
	uint8_t *body = malloc(n + len + m);
	if (!body)
		return -ENOMEM;
	memcpy(body, p, n);
	memcpy(body + n, r->host, len);
	memcpy(body + n + len, tail, m);
	int rc = write_chunk(w, ULMA_CHUNK_MPI_RANK, body, n + len + m, NULL, 0);
	free(body);
	return rc;
}

int ulma_trace_mpi_merge(struct ulma_trace_writer *w, const struct ulma_trace_merge *m)
{
	uint8_t p[8 * ULMA_VARINT_MAX];
	size_t n = ulma_varint_put(p, m->ranks);
	n += ulma_varint_put(p + n, m->moved);
	n += ulma_varint_put(p + n, m->max_move_ns);
	n += ulma_varint_put(p + n, m->max_offset_ns);
	n += ulma_varint_put(p + n, m->messages);
	n += ulma_varint_put(p + n, m->unmatched);
	n += ulma_varint_put(p + n, m->moves);
	return write_chunk(w, ULMA_CHUNK_MPI_MERGE, p, n, NULL, 0);
}

int ulma_trace_process(struct ulma_trace_writer *w, uint32_t pid, uint32_t ppid, const char *name, size_t len)
{
	uint8_t p[2 * ULMA_VARINT_MAX + ULMA_TRACE_MAX_NAME + ULMA_VARINT_MAX];
	if (len > ULMA_TRACE_MAX_NAME)
		len = ULMA_TRACE_MAX_NAME;
	size_t n = ulma_varint_put(p, pid);
	n += ulma_varint_put(p + n, len);
	memcpy(p + n, name, len);
	n += len;
	if (ppid) /* optional: the parent, where the monitor knew it */
		n += ulma_varint_put(p + n, ppid);
	return write_chunk(w, ULMA_CHUNK_PROCESS, p, n, NULL, 0);
}

int ulma_trace_overhead(struct ulma_trace_writer *w, uint64_t ps_per_event)
{
	uint8_t p[ULMA_VARINT_MAX];
	size_t n = ulma_varint_put(p, ps_per_event);
	return write_chunk(w, ULMA_CHUNK_OVERHEAD, p, n, NULL, 0);
}

int ulma_trace_writer_close(struct ulma_trace_writer *w, const struct ulma_trace_end *end)
{
	uint8_t p[13 * ULMA_VARINT_MAX];
	size_t n = 0;
	int err = ulma_trace_writer_flush(w);
	if (!err) {
		n += ulma_varint_put(p + n, end->end_ticks);
		n += ulma_varint_put(p + n, end->end_ns);
		n += ulma_varint_put(p + n, end->events);
		n += ulma_varint_put(p + n, end->lost);
		n += ulma_varint_put(p + n, end->failures);
		n += ulma_varint_put(p + n, (uint64_t)(uint32_t)end->exit_status);
		n += ulma_varint_put(p + n, end->split);
		n += ulma_varint_put(p + n, end->monitor_cpu_ns);
		n += ulma_varint_put(p + n, end->switches_lost);
		n += ulma_varint_put(p + n, end->gil_split);
		n += ulma_varint_put(p + n, end->resynced);
		if (end->mem_unattributed || end->refused)
			n += ulma_varint_put(p + n, end->mem_unattributed);
		if (end->refused)
			n += ulma_varint_put(p + n, end->refused);
		err = write_chunk(w, ULMA_CHUNK_END, p, n, NULL, 0);
	}
	if (close(w->fd) < 0 && !err)
		err = -errno;
	w->fd = -1;
	ulma_trace_writer_abandon(w);
	return err;
}
