/* trace_reader.c - bounds-checked decoding of trace chunks (see
 * trace_reader.h and docs/trace-format.md). */
#include "trace_reader.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "array.h"
#include "idmap.h"
#include "ulma/shm.h"
#include "ulma/trace_format.h"
#include "varint.h"

#define MAX_DEPTH (1u << 20)
#define MAX_THREADS (1u << 20)
#define DENSE_FUNC_IDS (1u << 22) /* file ids below this resolve through an array */

struct thread_state {
	uint32_t *stack; /* dense function indices of open frames */
	uint32_t depth;
	uint32_t cap;
};

struct file_entry {
	char *path;
	size_t len;
};

struct reader {
	const struct ulma_trace_visitor *v;
	struct ulma_trace_status *st;
	struct ulma_idmap func_ids;   /* file id -> dense index */
	uint32_t *func_by_id;         /* the same for small ids: index + 1, 0 = undefined */
	uint32_t nfunc_by_id;
	uint32_t nfuncs;
	struct ulma_idmap file_ids;   /* file id -> index into files */
	struct file_entry *files;
	uint32_t nfiles;
	struct ulma_idmap thread_ids; /* serial + 1 -> dense index */
	struct thread_state *threads;
	uint32_t nthreads;
	bool have_meta;
	uint32_t version; /* of the file: 1 or 2 */
};

static int corrupt(struct reader *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->st->error, sizeof(r->st->error), fmt, ap);
	va_end(ap);
	return -EPROTO;
}

static uint32_t get_u32le(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Read a varint or fail the chunk. */
#define NEED_VARINT(r, p, end, out, what)                                                      \
	do {                                                                                   \
		if (ulma_varint_get(&(p), (end), &(out)))                                      \
			return corrupt((r), "truncated %s in chunk at offset %llu", (what),    \
				       (unsigned long long)(r)->st->bytes);                    \
	} while (0)

static int parse_string(struct reader *r, const uint8_t **p, const uint8_t *end, const char **s,
			size_t *len)
{
	uint64_t n;
	NEED_VARINT(r, *p, end, n, "string length");
	if (n > (uint64_t)(end - *p))
		return corrupt(r, "string runs past its chunk at offset %llu", (unsigned long long)r->st->bytes);
	*s = (const char *)*p;
	*len = (size_t)n;
	*p += n;
	return 0;
}

static int parse_meta(struct reader *r, const uint8_t *p, const uint8_t *end)
{
	uint64_t flags, pid, t, ns, hz;
	struct ulma_trace_meta m;
	const char *cmd = NULL;
	size_t clen = 0;
	NEED_VARINT(r, p, end, flags, "meta flags");
	NEED_VARINT(r, p, end, pid, "meta pid");
	NEED_VARINT(r, p, end, t, "meta start ticks");
	NEED_VARINT(r, p, end, ns, "meta start ns");
	NEED_VARINT(r, p, end, hz, "meta tick rate");
	int err = parse_string(r, &p, end, &cmd, &clen);
	if (err)
		return err;
	uint64_t sample = 0; /* version 6 adds it; older writers end with the command */
	if (r->version >= 6 && p < end)
		NEED_VARINT(r, p, end, sample, "meta memory sampling");
	char *c = malloc(clen + 1);
	if (!c)
		return -ENOMEM;
	memcpy(c, cmd, clen);
	c[clen] = 0;
	m.flags = (uint32_t)flags;
	m.pid = (uint32_t)pid;
	m.start_ticks = t;
	m.start_ns = ns;
	m.tick_hz = hz;
	m.command = c;
	m.mem_sample_bytes = sample;
	r->have_meta = true;
	err = r->v->on_meta ? r->v->on_meta(r->v->ctx, &m) : 0;
	free(c);
	return err;
}

static int parse_defs(struct reader *r, const uint8_t *p, const uint8_t *end)
{
	while (p < end) {
		uint64_t tag, id, kind, file_id, line;
		const char *s = NULL;
		size_t len = 0;
		uint32_t idx;
		int err;
		NEED_VARINT(r, p, end, tag, "definition tag");
		if (tag == ULMA_DEFTAG_FILE) {
			NEED_VARINT(r, p, end, id, "file id");
			if ((err = parse_string(r, &p, end, &s, &len)))
				return err;
			if (id == UINT64_MAX || id > UINT32_MAX || ulma_idmap_get(&r->file_ids, id + 1, &idx))
				return corrupt(r, "file id %llu defined twice or out of range", (unsigned long long)id);
			struct file_entry *f = realloc(r->files, (r->nfiles + 1) * sizeof(*f));
			if (!f)
				return -ENOMEM;
			r->files = f;
			f[r->nfiles].path = malloc(len + 1);
			if (!f[r->nfiles].path)
				return -ENOMEM;
			memcpy(f[r->nfiles].path, s, len);
			f[r->nfiles].path[len] = 0;
			f[r->nfiles].len = len;
			if ((err = ulma_idmap_put(&r->file_ids, id + 1, r->nfiles)))
				return err;
			r->nfiles++;
		} else if (tag == ULMA_DEFTAG_FUNC) {
			uint32_t fidx;
			NEED_VARINT(r, p, end, id, "function id");
			NEED_VARINT(r, p, end, kind, "function kind");
			NEED_VARINT(r, p, end, file_id, "function file");
			NEED_VARINT(r, p, end, line, "function line");
			if ((err = parse_string(r, &p, end, &s, &len)))
				return err;
			if (id == 0 || id > UINT32_MAX || ulma_idmap_get(&r->func_ids, id, &idx))
				return corrupt(r, "function id %llu defined twice or out of range",
					       (unsigned long long)id);
			if (file_id > UINT32_MAX || !ulma_idmap_get(&r->file_ids, file_id + 1, &fidx))
				return corrupt(r, "function %llu names undefined file %llu",
					       (unsigned long long)id, (unsigned long long)file_id);
			if ((err = ulma_idmap_put(&r->func_ids, id, r->nfuncs)))
				return err;
			if (id < DENSE_FUNC_IDS) {
				if (ulma_array_grow((void **)&r->func_by_id, &r->nfunc_by_id, (uint32_t)id,
						    sizeof(*r->func_by_id)))
					return -ENOMEM;
				r->func_by_id[id] = r->nfuncs + 1;
			}
			struct ulma_trace_func f = {
				.index = r->nfuncs++,
				.id = (uint32_t)id,
				.kind = (uint8_t)kind,
				.line = line > UINT32_MAX ? UINT32_MAX : (uint32_t)line,
				.name = s,
				.name_len = len,
				.file = r->files[fidx].path,
				.file_len = r->files[fidx].len,
			};
			if (r->v->on_func && (err = r->v->on_func(r->v->ctx, &f)))
				return err;
		} else if (tag == ULMA_DEFTAG_SOURCE && r->version >= 5) {
			uint64_t flags;
			NEED_VARINT(r, p, end, file_id, "source file");
			NEED_VARINT(r, p, end, flags, "source flags");
			if ((err = parse_string(r, &p, end, &s, &len)))
				return err;
			if (file_id > UINT32_MAX || !ulma_idmap_get(&r->file_ids, file_id + 1, &idx))
				return corrupt(r, "source of undefined file %llu", (unsigned long long)file_id);
			struct ulma_trace_source src = {r->files[idx].path, r->files[idx].len, s, len,
							(unsigned)(flags & (ULMA_SOURCE_CHANGED | ULMA_SOURCE_CUT))};
			if (r->v->on_source && (err = r->v->on_source(r->v->ctx, &src)))
				return err;
		} else {
			return corrupt(r, "unknown definition tag %llu", (unsigned long long)tag);
		}
	}
	return 0;
}

static int parse_thread(struct reader *r, const uint8_t *p, const uint8_t *end)
{
	uint64_t serial, pid, tid;
	uint32_t idx;
	NEED_VARINT(r, p, end, serial, "thread serial");
	NEED_VARINT(r, p, end, pid, "thread pid");
	NEED_VARINT(r, p, end, tid, "thread tid");
	if (serial == UINT64_MAX || ulma_idmap_get(&r->thread_ids, serial + 1, &idx))
		return corrupt(r, "thread %llu declared twice", (unsigned long long)serial);
	if (r->nthreads >= MAX_THREADS)
		return corrupt(r, "more than %u threads", MAX_THREADS);
	struct thread_state *t = realloc(r->threads, (r->nthreads + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	r->threads = t;
	memset(&t[r->nthreads], 0, sizeof(*t));
	int err = ulma_idmap_put(&r->thread_ids, serial + 1, r->nthreads);
	if (err)
		return err;
	struct ulma_trace_thread info = {r->nthreads++, serial, (uint32_t)pid, (uint32_t)tid};
	return r->v->on_thread ? r->v->on_thread(r->v->ctx, &info) : 0;
}

static int grow_stack(struct reader *r, struct thread_state *t)
{
	if (t->cap >= MAX_DEPTH)
		return corrupt(r, "call stack deeper than %u frames", MAX_DEPTH);
	uint32_t cap = t->cap ? t->cap * 2 : 64;
	uint32_t *s = realloc(t->stack, cap * sizeof(*s));
	if (!s)
		return -ENOMEM;
	t->stack = s;
	t->cap = cap;
	return 0;
}

/* The dense index of file function id x, or UINT32_MAX if undefined. */
static uint32_t func_index(const struct reader *r, uint64_t x)
{
	uint32_t idx;
	if (x < r->nfunc_by_id)
		return r->func_by_id[x] ? r->func_by_id[x] - 1 : UINT32_MAX;
	if (x == 0 || x > UINT32_MAX || !ulma_idmap_get(&r->func_ids, x, &idx))
		return UINT32_MAX;
	return idx;
}

/* Hand a batch of decoded events to the visitor. */
static int deliver(struct reader *r, uint32_t tidx, const struct ulma_trace_event *ev, size_t n)
{
	if (r->v->on_events)
		return n ? r->v->on_events(r->v->ctx, tidx, ev, n) : 0;
	if (r->v->on_event)
		for (size_t i = 0; i < n; i++) {
			int err = r->v->on_event(r->v->ctx, &ev[i]);
			if (err)
				return err;
		}
	return 0;
}

/* A varint whose first byte or two are the common case; the general
 * decoder (and its bounds checks) otherwise. */
#define GET_VARINT(p, end, out, fail)                                                              \
	do {                                                                                       \
		if ((p) + 2 <= (end) && (p)[0] < 0x80) {                                           \
			(out) = (p)[0];                                                            \
			(p)++;                                                                     \
		} else if ((p) + 2 <= (end) && (p)[1] < 0x80) {                                    \
			(out) = (uint64_t)((p)[0] & 0x7f) | (uint64_t)(p)[1] << 7;                 \
			(p) += 2;                                                                  \
		} else if (ulma_varint_get(&(p), (end), &(out))) {                                 \
			goto fail;                                                                 \
		}                                                                                  \
	} while (0)

static int parse_events(struct reader *r, const uint8_t *p, const uint8_t *end)
{
	uint64_t serial, count, cpu, ticks, word, x;
	uint32_t tidx, func;
	int err;
	NEED_VARINT(r, p, end, serial, "events thread");
	NEED_VARINT(r, p, end, count, "event count");
	NEED_VARINT(r, p, end, cpu, "event cpu");
	NEED_VARINT(r, p, end, ticks, "event base time");
	if (serial == UINT64_MAX || !ulma_idmap_get(&r->thread_ids, serial + 1, &tidx))
		return corrupt(r, "events for undeclared thread %llu", (unsigned long long)serial);
	struct thread_state *t = &r->threads[tidx];
	struct ulma_trace_event batch[ULMA_TRACE_BATCH];
	size_t n = 0;
	/* the events decoded are the batches' entries less the OFF records
	 * (counted apart: they are few) */
	uint64_t delivered = 0, offs = 0, last_ticks = r->st->last_ticks, event_ticks = 0, mem_addr = 0;
	const char *what = "event";
	/* the frame events' stack in locals: every store into the batch could
	 * alias *t, which would otherwise be reloaded after each one; and its
	 * top frame's function in a register, so that a recursive entry and
	 * an exit wait on no load of what the event before them stored */
	uint32_t *stack = t->stack, depth = t->depth, cap = t->cap, top = depth ? stack[depth - 1] : 0;
	uint32_t where[2] = {(uint32_t)cpu, tidx}; /* an event's cpu and thread, as the event holds them */
	_Static_assert(offsetof(struct ulma_trace_event, thread) == offsetof(struct ulma_trace_event, cpu) + 4,
		       "cpu and thread side by side");
	while (p < end) {
		if (n == ULMA_TRACE_BATCH) {
			if ((err = deliver(r, tidx, batch, n)))
				return err;
			delivered += n;
			n = 0;
		}
		struct ulma_trace_event *ev = &batch[n];
		what = "event";
		GET_VARINT(p, end, word, truncated);
		uint64_t delta = word >> 2;
		if (ticks + delta < ticks)
			return corrupt(r, "event time overflows");
		ticks += delta;
		ev->ticks = ticks;
		memcpy((unsigned char *)ev + offsetof(struct ulma_trace_event, cpu), where, sizeof(where)); /* cpu, thread */
		ev->count = 0;
		unsigned tag = (unsigned)(word & 3);
		if (tag == ULMA_TAG_EXIT) {
			if (__builtin_expect(depth == 0, 0))
				return corrupt(r, "exit with no open frame in thread %llu", (unsigned long long)serial);
			ev->kind = ULMA_EV_EXIT;
			ev->func = top;
			if (--depth)
				top = stack[depth - 1];
			event_ticks = ticks;
			n++;
			continue;
		}
		if (tag != ULMA_TAG_EXT) {
			if (tag == ULMA_TAG_ENTER) {
				what = "function id";
				GET_VARINT(p, end, x, truncated);
				if ((func = func_index(r, x)) == UINT32_MAX)
					return corrupt(r, "event uses undefined function %llu", (unsigned long long)x);
			} else if (__builtin_expect(depth == 0, 0)) {
				return corrupt(r, "recursive entry with no open frame");
			} else {
				func = top;
			}
			if (__builtin_expect(depth == cap, 0)) {
				t->depth = depth;
				if ((err = grow_stack(r, t)))
					return err;
				stack = t->stack;
				cap = t->cap;
			}
			stack[depth++] = func;
			top = func;
			ev->kind = ULMA_EV_ENTER;
			ev->func = func;
			event_ticks = ticks;
			n++;
			continue;
		}
		t->depth = depth; /* a line event reads the stack */
		switch (tag) { /* an extension record: each case below ends with `break` or `continue` */
		default:
			what = "extension";
			GET_VARINT(p, end, x, truncated);
			if (x == ULMA_EXT_CPU) {
				what = "cpu";
				GET_VARINT(p, end, cpu, truncated);
				if (delta)
					return corrupt(r, "cpu change carries a time");
				where[0] = (uint32_t)cpu;
				continue; /* not an event of its own */
			}
			if (x == ULMA_EXT_OFF && r->version >= 3) {
				uint64_t state;
				what = "off-CPU interval";
				GET_VARINT(p, end, state, truncated);
				GET_VARINT(p, end, ev->count, truncated);
				if (state >= ULMA_OFF_STATES)
					return corrupt(r, "unknown off-CPU state %llu", (unsigned long long)state);
				ev->kind = ULMA_EV_OFF;
				ev->off = (uint8_t)state;
				ev->func = 0;
				n++; /* delivered, but not counted as an event */
				offs++;
				continue;
			}
			if ((x == ULMA_EXT_INSTANT || x == ULMA_EXT_COUNTER || x == ULMA_EXT_THREAD_NAME) &&
			    r->version >= 4) {
				uint64_t id, bits = 0;
				what = "mark";
				GET_VARINT(p, end, id, truncated);
				if (x == ULMA_EXT_COUNTER)
					GET_VARINT(p, end, bits, truncated);
				if ((func = func_index(r, id)) == UINT32_MAX)
					return corrupt(r, "mark uses undefined name %llu", (unsigned long long)id);
				if ((err = deliver(r, tidx, batch, n)))
					return err;
				delivered += n;
				n = 0;
				struct ulma_trace_mark m = {ticks, tidx, func, (uint8_t)x, 0};
				memcpy(&m.value, &bits, sizeof(bits));
				if (r->v->on_mark && (err = r->v->on_mark(r->v->ctx, &m)))
					return err;
				continue;
			}
			if ((x == ULMA_EXT_ALLOC || x == ULMA_EXT_FREE) && r->version >= 5) {
				uint64_t sd = 0, zz;
				what = "memory event";
				if (x == ULMA_EXT_ALLOC)
					GET_VARINT(p, end, sd, truncated);
				GET_VARINT(p, end, zz, truncated);
				mem_addr += zz >> 1 ^ (0 - (zz & 1)); /* zigzag delta from the chunk's previous */
				if (mem_addr >> 48)
					return corrupt(r, "block address %#llx out of range", (unsigned long long)mem_addr);
				if (!r->v->on_memory)
					continue;
				if ((err = deliver(r, tidx, batch, n)))
					return err;
				delivered += n;
				n = 0;
				struct ulma_trace_memory m = {ticks, mem_addr, sd >> 2, tidx, (uint8_t)x, (uint8_t)(sd & 3)};
				if ((err = r->v->on_memory(r->v->ctx, &m)))
					return err;
				continue;
			}
			if ((x == ULMA_EXT_OBJ_NEW || x == ULMA_EXT_OBJ_FREE) && r->version >= 6) {
				uint64_t id;
				what = "object event";
				GET_VARINT(p, end, id, truncated);
				if ((func = func_index(r, id)) == UINT32_MAX)
					return corrupt(r, "object of undefined type %llu", (unsigned long long)id);
				if (!r->v->on_object)
					continue;
				if ((err = deliver(r, tidx, batch, n)))
					return err;
				delivered += n;
				n = 0;
				struct ulma_trace_object o = {ticks, tidx, func, (uint8_t)x};
				if ((err = r->v->on_object(r->v->ctx, &o)))
					return err;
				continue;
			}
			if (x == ULMA_EXT_MPI && r->version >= 6) {
				struct ulma_trace_mpi m = {.ticks = ticks, .thread = tidx};
				uint64_t op, nargs;
				what = "MPI event";
				GET_VARINT(p, end, op, truncated);
				GET_VARINT(p, end, nargs, truncated);
				if (nargs > ULMA_MPI_ARGS_MAX)
					return corrupt(r, "MPI event with %llu arguments", (unsigned long long)nargs);
				for (unsigned k = 0; k < nargs; k++)
					GET_VARINT(p, end, m.args[k], truncated);
				if (!r->v->on_mpi || op == 0 || op > 255)
					continue;
				if ((err = deliver(r, tidx, batch, n)))
					return err;
				delivered += n;
				n = 0;
				m.op = (uint8_t)op;
				m.nargs = (uint8_t)nargs;
				if ((err = r->v->on_mpi(r->v->ctx, &m)))
					return err;
				continue;
			}
			if ((x == ULMA_EXT_LINE || x == ULMA_EXT_LINE_RESUME) && r->version >= 5) {
				what = "line";
				GET_VARINT(p, end, ev->count, truncated);
				if (t->depth == 0)
					return corrupt(r, "line event with no open frame");
				if (ev->count > UINT32_MAX)
					return corrupt(r, "line number %llu out of range", (unsigned long long)ev->count);
				ev->kind = ULMA_EV_LINE;
				ev->func = t->stack[t->depth - 1];
				ev->resumed = x == ULMA_EXT_LINE_RESUME;
				break;
			}
			if (x != ULMA_EXT_LOST)
				return corrupt(r, "unknown event extension %llu", (unsigned long long)x);
			what = "lost count";
			GET_VARINT(p, end, ev->count, truncated);
			ev->kind = ULMA_EV_LOST;
			ev->func = 0;
			break;
		}
		event_ticks = ticks;
		n++;
	}
	t->depth = depth;
	uint64_t i = delivered + n - offs;
	if (i && event_ticks > last_ticks) /* times only grow within a chunk */
		last_ticks = event_ticks;
	if (i != count)
		return corrupt(r, "events chunk holds %llu events where its header says %llu", (unsigned long long)i,
			       (unsigned long long)count);
	r->st->events += i;
	r->st->last_ticks = last_ticks;
	return deliver(r, tidx, batch, n);
truncated:
	return corrupt(r, "truncated %s in chunk at offset %llu", what, (unsigned long long)r->st->bytes);
}

/* Version 1 has three values per sample and no count of them; version 2
 * gives the count, of which a reader uses the four it knows. */
static int parse_sched(struct reader *r, const uint8_t *p, const uint8_t *end)
{
	uint64_t serial, count, fields = 3, v[4] = {0, 0, 0, 0}, d;
	uint32_t tidx;
	NEED_VARINT(r, p, end, serial, "sched thread");
	if (r->version >= 2) {
		NEED_VARINT(r, p, end, fields, "values per sample");
		if (fields < 3 || fields > 64)
			return corrupt(r, "sched chunk has %llu values per sample", (unsigned long long)fields);
	}
	NEED_VARINT(r, p, end, count, "sample count");
	if (serial == UINT64_MAX || !ulma_idmap_get(&r->thread_ids, serial + 1, &tidx))
		return corrupt(r, "samples for undeclared thread %llu", (unsigned long long)serial);
	for (uint64_t i = 0; i < count; i++) {
		for (uint64_t k = 0; k < fields; k++) {
			NEED_VARINT(r, p, end, d, "sample");
			if (k >= 4)
				continue;
			if (v[k] + d < v[k])
				return corrupt(r, "sample value overflows");
			v[k] += d;
		}
		struct ulma_trace_sched smp = {v[0], v[1], v[2], v[3], fields >= 4};
		int err = r->v->on_sched ? r->v->on_sched(r->v->ctx, tidx, &smp) : 0;
		if (err)
			return err;
	}
	if (p != end)
		return corrupt(r, "sched chunk has %td bytes after its last sample", end - p);
	return 0;
}

static int parse_end(struct reader *r, const uint8_t *p, const uint8_t *end)
{
	uint64_t v[11] = {0};
	const char *what[11] = {"end ticks",   "end ns",       "event total",      "lost total",    "failures",
				"exit status", "split method", "monitor cpu time", "lost switches", "gil split",
				"resynchronised"};
	int known = r->version >= 4 ? 11 : r->version >= 3 ? 10 : 6;
	for (int i = 0; i < known; i++)
		NEED_VARINT(r, p, end, v[i], what[i]);
	struct ulma_trace_end e = {v[0], v[1], v[2], v[3], (uint32_t)v[4], (int32_t)(uint32_t)v[5],
				   (uint32_t)v[6], v[7], v[8], (uint32_t)v[9], v[10], 0, 0};
	if (r->version >= 5 && p < end) /* optional in version 5: written with --memory */
		NEED_VARINT(r, p, end, e.mem_unattributed, "unattributed memory records");
	if (r->version >= 5 && p < end) /* optional: written when the monitor refused records */
		NEED_VARINT(r, p, end, e.refused, "refused records");
	r->st->complete = true;
	return r->v->on_end ? r->v->on_end(r->v->ctx, &e) : 0;
}

static int parse_process(struct reader *r, const uint8_t *p, const uint8_t *end)
{
	uint64_t pid, len;
	NEED_VARINT(r, p, end, pid, "process id");
	NEED_VARINT(r, p, end, len, "process name length");
	if (pid == 0 || pid > UINT32_MAX)
		return corrupt(r, "process id %llu out of range", (unsigned long long)pid);
	if (len > ULMA_TRACE_MAX_NAME || len > (uint64_t)(end - p))
		return corrupt(r, "process name of %llu bytes in a chunk of %td", (unsigned long long)len, end - p);
	struct ulma_trace_process proc = {(uint32_t)pid, (const char *)p, (size_t)len, 0};
	p += len;
	if (p < end) { /* optional: the parent's pid; later fields are skipped */
		uint64_t ppid;
		NEED_VARINT(r, p, end, ppid, "parent process id");
		if (ppid > UINT32_MAX)
			return corrupt(r, "parent process id %llu out of range", (unsigned long long)ppid);
		proc.ppid = (uint32_t)ppid;
	}
	return r->v->on_process ? r->v->on_process(r->v->ctx, &proc) : 0;
}

static int parse_mpi_rank(struct reader *r, const uint8_t *p, const uint8_t *end)
{
	uint64_t pid, rank, size, len;
	NEED_VARINT(r, p, end, pid, "rank's process id");
	NEED_VARINT(r, p, end, rank, "rank");
	NEED_VARINT(r, p, end, size, "ranks in the run");
	NEED_VARINT(r, p, end, len, "host name length");
	if (pid > UINT32_MAX || rank >= size || size > UINT32_MAX)
		return corrupt(r, "rank %llu of %llu (pid %llu) out of range", (unsigned long long)rank,
			       (unsigned long long)size, (unsigned long long)pid);
	if (len > ULMA_TRACE_MAX_NAME || len > (uint64_t)(end - p))
		return corrupt(r, "host name of %llu bytes in a chunk of %td", (unsigned long long)len, end - p);
	struct ulma_trace_rank rk = {
		.pid = (uint32_t)pid, .rank = (uint32_t)rank, .size = (uint32_t)size, .host = (const char *)p, .host_len = (size_t)len};
	p += len;
	if (p < end) { /* a merged trace's */
		uint64_t init, fin;
		rk.merged = true;
		NEED_VARINT(r, p, end, rk.events, "rank's events");
		NEED_VARINT(r, p, end, rk.mpi_ns, "rank's time in MPI");
		NEED_VARINT(r, p, end, init, "clock offset at MPI_Init");
		NEED_VARINT(r, p, end, fin, "clock offset at MPI_Finalize");
		NEED_VARINT(r, p, end, rk.unmatched, "rank's unmatched messages");
		rk.offset_init_ns = ulma_unzigzag(init);
		rk.offset_final_ns = ulma_unzigzag(fin);
	}
	if (p != end)
		return corrupt(r, "rank chunk has %td bytes too many", end - p);
	return r->v->on_mpi_rank ? r->v->on_mpi_rank(r->v->ctx, &rk) : 0;
}

static int parse_mpi_merge(struct reader *r, const uint8_t *p, const uint8_t *end)
{
	struct ulma_trace_merge m;
	NEED_VARINT(r, p, end, m.ranks, "merged ranks");
	NEED_VARINT(r, p, end, m.moved, "events moved");
	NEED_VARINT(r, p, end, m.max_move_ns, "largest move");
	NEED_VARINT(r, p, end, m.max_offset_ns, "largest clock offset");
	NEED_VARINT(r, p, end, m.messages, "messages");
	NEED_VARINT(r, p, end, m.unmatched, "unmatched messages");
	NEED_VARINT(r, p, end, m.moves, "moves");
	if (p != end)
		return corrupt(r, "merge chunk has %td bytes too many", end - p);
	return r->v->on_mpi_merge ? r->v->on_mpi_merge(r->v->ctx, &m) : 0;
}

static int parse_chunk(struct reader *r, uint32_t type, const uint8_t *p, const uint8_t *end)
{
	if (!r->have_meta && type != ULMA_CHUNK_META)
		return corrupt(r, "trace does not start with its session record");
	switch (type) {
	case ULMA_CHUNK_META:
		if (r->have_meta)
			return corrupt(r, "second session record at offset %llu", (unsigned long long)r->st->bytes);
		return parse_meta(r, p, end);
	case ULMA_CHUNK_DEFS:
		return parse_defs(r, p, end);
	case ULMA_CHUNK_THREAD:
		return parse_thread(r, p, end);
	case ULMA_CHUNK_EVENTS:
		return parse_events(r, p, end);
	case ULMA_CHUNK_END:
		return parse_end(r, p, end);
	case ULMA_CHUNK_SCHED:
		return parse_sched(r, p, end);
	case ULMA_CHUNK_OVERHEAD:
		NEED_VARINT(r, p, end, r->st->overhead_ps, "overhead per event");
		if (p != end)
			return corrupt(r, "overhead chunk has %td bytes too many", end - p);
		return r->v->on_overhead ? r->v->on_overhead(r->v->ctx, r->st->overhead_ps) : 0;
	case ULMA_CHUNK_PROCESS:
		return parse_process(r, p, end);
	case ULMA_CHUNK_MPI_RANK:
		return r->version >= 6 ? parse_mpi_rank(r, p, end) : 0;
	case ULMA_CHUNK_MPI_MERGE:
		return r->version >= 6 ? parse_mpi_merge(r, p, end) : 0;
	default:
		return 0; /* a newer writer's chunk: skip it */
	}
}

static void reader_free(struct reader *r)
{
	for (uint32_t i = 0; i < r->nfiles; i++)
		free(r->files[i].path);
	free(r->files);
	for (uint32_t i = 0; i < r->nthreads; i++)
		free(r->threads[i].stack);
	free(r->threads);
	ulma_idmap_free(&r->func_ids);
	free(r->func_by_id);
	ulma_idmap_free(&r->file_ids);
	ulma_idmap_free(&r->thread_ids);
}

int ulma_trace_read(FILE *f, const struct ulma_trace_visitor *v, struct ulma_trace_status *st)
{
	struct reader r = {.v = v, .st = st};
	uint8_t fh[ULMA_TRACE_FILE_HEADER];
	uint8_t *payload = NULL;
	size_t cap = 0;
	int err = 0;

	memset(st, 0, sizeof(*st));
	if (fread(fh, 1, sizeof(fh), f) != sizeof(fh) || memcmp(fh, ULMA_TRACE_MAGIC, 8) != 0) {
		if (ferror(f))
			return -EIO;
		return corrupt(&r, "not an ulma trace (bad magic)");
	}
	r.version = get_u32le(fh + 8);
	if (r.version < ULMA_TRACE_MIN_VERSION || r.version > ULMA_TRACE_VERSION)
		return corrupt(&r, "unsupported trace version %u (this ulma reads %u to %u)", r.version,
			       ULMA_TRACE_MIN_VERSION, ULMA_TRACE_VERSION);
	st->bytes = sizeof(fh);
	st->version = r.version;
	for (;;) {
		uint8_t ch[ULMA_TRACE_CHUNK_HEADER];
		size_t got = fread(ch, 1, sizeof(ch), f);
		if (got != sizeof(ch)) {
			if (ferror(f))
				err = -EIO;
			break; /* clean end, or cut inside a chunk header */
		}
		uint32_t type = get_u32le(ch), len = get_u32le(ch + 4), crc = get_u32le(ch + 8);
		if (len > ULMA_TRACE_MAX_CHUNK) {
			err = corrupt(&r, "chunk at offset %llu claims %u bytes", (unsigned long long)st->bytes, len);
			break;
		}
		if (len > cap) {
			uint8_t *p = realloc(payload, len);
			if (!p) {
				err = -ENOMEM;
				break;
			}
			payload = p;
			cap = len;
		}
		if (fread(payload, 1, len, f) != len) {
			if (ferror(f))
				err = -EIO;
			break; /* cut inside a payload: the prefix before it stands */
		}
		if (ulma_crc32c(0, payload, len) != crc) {
			err = corrupt(&r, "checksum mismatch in chunk at offset %llu", (unsigned long long)st->bytes);
			break;
		}
		err = parse_chunk(&r, type, payload, len ? payload + len : payload);
		if (err)
			break;
		st->bytes += sizeof(ch) + len;
		if (st->complete)
			break;
	}
	if (!err && !r.have_meta)
		err = corrupt(&r, "trace holds no session record (empty or cut in its first chunk)");
	free(payload);
	reader_free(&r);
	return err;
}

/* Why a file of this type is no trace, or NULL for a regular file. */
static const char *not_a_trace(mode_t mode)
{
	if (S_ISREG(mode))
		return NULL;
	if (S_ISDIR(mode))
		return "it is a directory";
	if (S_ISFIFO(mode))
		return "it is a FIFO, not a regular file";
	if (S_ISSOCK(mode))
		return "it is a socket, not a regular file";
	if (S_ISCHR(mode))
		return "it is a character device, not a regular file";
	if (S_ISBLK(mode))
		return "it is a block device, not a regular file";
	return "it is not a regular file";
}

int ulma_trace_open(const char *path, FILE **out, const char **why)
{
	struct stat st;
	*out = NULL;
	*why = NULL;
	/* O_NONBLOCK: a FIFO is refused below, not waited on */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	*why = not_a_trace(st.st_mode);
	if (*why) {
		close(fd);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	(void)fcntl(fd, F_SETFL, 0); /* plain blocking reads from here on */
	*out = fdopen(fd, "rb");
	if (!*out) {
		int e = errno;
		close(fd);
		return -e;
	}
	return 0;
}

int ulma_trace_read_path(const char *path, const struct ulma_trace_visitor *v,
			 struct ulma_trace_status *st)
{
	FILE *f;
	const char *why;
	int err = ulma_trace_open(path, &f, &why);
	if (err) {
		memset(st, 0, sizeof(*st));
		return err;
	}
	err = ulma_trace_read(f, v, st);
	fclose(f);
	return err;
}
