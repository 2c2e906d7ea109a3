/* export_chrome.c - the Trace Event Format of Chrome's about:tracing,
 * which Perfetto's UI and trace processor also open.
 *
 * One JSON object: {"displayTimeUnit": "ns", "traceEvents": [...],
 * "otherData": {command, completeness, duration, events lost}}.  Each kept
 * frame is a complete event ({"ph": "X", "ts", "dur"} in microseconds with
 * nanosecond decimals, "pid", "tid", "name", "cat" python, c, native or
 * zone, and "args": {"loc": "file:line"} where the file and line are
 * known).  Marks are events of their own: an instant is {"ph": "i", "s":
 * "t"} on its thread, a counter's value {"ph": "C", "args": {name: value}}
 * (a counter belongs to its process in both viewers).  Each process and
 * thread gets a process_name / thread_name metadata event, the thread's
 * written at the end so that it can be the thread's last name mark.
 * Events are written as the walker closes frames, so memory stays bounded
 * whatever the trace's size; complete events need not be sorted (both
 * viewers sort them), and here a callee comes before its caller.  Times
 * count from the trace start.  In a merged MPI trace (docs/mpi.md) each
 * matched message is a flow arrow: {"ph": "s"} at its send, inside the
 * sending call's slice, and {"ph": "f", "bp": "e"} at its receive, with
 * one id made of the message's source, destination, tag, communicator and
 * number.  A process another of the trace started is a flow arrow too,
 * from its parent's main thread to the child's first slice.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_objects.h"
#include "export_text.h"
#include "ulma/shm.h"

#define FLUSH_AT 65536
#define COPY_CHUNK 32 /* on_close copies in fixed chunks: a few moves each, no call */

struct chrome {
	FILE *out;
	struct ulma_sbuf b;
	char **fields; /* per function: "name":...,"cat":...,"args":{...} */
	size_t *field_len;
	uint32_t nfields;
	char (*tails)[48]; /* per thread: ,"pid":P,"tid":T} */
	uint8_t *tail_len;
	uint32_t ntails;
	uint32_t *pids_seen;
	uint32_t npids;
	uint64_t not_finite; /* counter values JSON cannot hold (NaN, infinities), left out */
	bool first;
	struct ulma_xobjects objects; /* objects per process and type (--memory on 3.13+) */
};

static void separator(struct chrome *c)
{
	if (!c->first)
		ulma_sbuf_put(&c->b, ",\n", 2);
	c->first = false;
}

static int maybe_flush(struct chrome *c)
{
	if (c->b.nomem)
		return -ENOMEM;
	if (c->b.len < FLUSH_AT)
		return 0;
	return ulma_sbuf_flush(&c->b, c->out);
}

static int on_func(void *ctx, const struct ulma_walk *w, uint32_t func)
{
	struct chrome *c = ctx;
	const struct ulma_walk_func *f = &w->funcs[func];
	if (func >= c->nfields) {
		uint32_t n = func + 1 > c->nfields * 2 ? func + 1 : c->nfields * 2;
		char **p = realloc(c->fields, (size_t)n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		memset(p + c->nfields, 0, (size_t)(n - c->nfields) * sizeof(*p));
		c->fields = p;
		size_t *l = realloc(c->field_len, (size_t)n * sizeof(*l));
		if (!l)
			return -ENOMEM;
		c->field_len = l;
		c->nfields = n;
	}
	struct ulma_sbuf s = {0};
	ulma_sbuf_puts(&s, "\"name\":");
	ulma_sbuf_json_text(&s, f->name);
	ulma_sbuf_printf(&s, ",\"cat\":\"%s\"", ulma_walk_kind_name(f->kind));
	if (ulma_walk_func_located(f)) {
		struct ulma_sbuf loc = {0};
		ulma_sbuf_printf(&loc, "%s:%u", f->file, f->line);
		ulma_sbuf_puts(&s, ",\"args\":{\"loc\":");
		ulma_sbuf_json_text(&s, loc.p ? loc.p : "");
		ulma_sbuf_puts(&s, "}");
		if (loc.nomem)
			s.nomem = true;
		ulma_sbuf_free(&loc);
	}
	if (s.nomem) {
		ulma_sbuf_free(&s);
		return -ENOMEM;
	}
	char *padded = realloc(s.p, s.len + COPY_CHUNK); /* on_close copies whole chunks */
	if (!padded) {
		ulma_sbuf_free(&s);
		return -ENOMEM;
	}
	free(c->fields[func]);
	c->fields[func] = padded;
	c->field_len[func] = s.len;
	return 0;
}

static int on_thread(void *ctx, const struct ulma_walk *w, uint32_t thread)
{
	struct chrome *c = ctx;
	const struct ulma_walk_thread *t = &w->threads[thread];
	if (thread >= c->ntails) {
		uint32_t n = thread + 1 > c->ntails * 2 ? thread + 1 : c->ntails * 2;
		char(*p)[48] = realloc(c->tails, (size_t)n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		c->tails = p;
		uint8_t *l = realloc(c->tail_len, n);
		if (!l)
			return -ENOMEM;
		c->tail_len = l;
		c->ntails = n;
	}
	c->tail_len[thread] = (uint8_t)snprintf(c->tails[thread], sizeof(c->tails[thread]), ",\"pid\":%u,\"tid\":%u}",
						t->pid, t->tid);
	bool known = false;
	for (uint32_t i = 0; i < c->npids && !known; i++)
		known = c->pids_seen[i] == t->pid;
	if (!known) {
		uint32_t *p = realloc(c->pids_seen, (size_t)(c->npids + 1) * sizeof(*p));
		if (!p)
			return -ENOMEM;
		c->pids_seen = p;
		p[c->npids++] = t->pid;
		const char *label = ulma_walk_process_name(w, t->pid);
		if (label) { /* the viewers add the pid themselves; without a name they show it alone */
			separator(c);
			ulma_sbuf_printf(&c->b,
					 "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"tid\":0,\"args\":{\"name\":",
					 t->pid);
			ulma_sbuf_json_text(&c->b, label);
			ulma_sbuf_puts(&c->b, "}}");
		}
	}
	separator(c);
	ulma_sbuf_printf(&c->b,
			 "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%u,\"tid\":%u,\"args\":{\"sort_index\":%llu}}",
			 t->pid, t->tid, (unsigned long long)t->serial);
	return maybe_flush(c);
}

/* Every passing thread's name, once its last name mark is known. */
static void thread_names(struct chrome *c, const struct ulma_walk *w)
{
	for (uint32_t i = 0; i < w->nthreads; i++) {
		const struct ulma_walk_thread *t = &w->threads[i];
		if (!t->pass)
			continue;
		separator(c);
		ulma_sbuf_printf(&c->b, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":",
				 t->pid, t->tid);
		if (t->name < w->nfuncs)
			ulma_sbuf_json_text(&c->b, w->funcs[t->name].name);
		else
			ulma_sbuf_printf(&c->b, "\"%s %u\"", t->tid == t->pid ? "main thread" : "thread", t->tid);
		ulma_sbuf_puts(&c->b, "}}");
	}
}

/* ns as microseconds, with the decimals it needs (none to three) */
static void put_us(struct ulma_sbuf *b, uint64_t ns)
{
	char frac[4] = {'.', (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10), (char)('0' + ns % 10)};
	size_t n = 4;
	while (n > 1 && frac[n - 1] == '0')
		n--;
	ulma_sbuf_u64(b, ns / 1000);
	if (n > 1)
		ulma_sbuf_put(b, frac, n);
}

/* An event's closing fields: ,"pid":P,"tid":T} and the flush that may follow. */
static int end_event(struct chrome *c, const struct ulma_walk_thread *t)
{
	ulma_sbuf_puts(&c->b, ",\"pid\":");
	ulma_sbuf_u64(&c->b, t->pid);
	ulma_sbuf_puts(&c->b, ",\"tid\":");
	ulma_sbuf_u64(&c->b, t->tid);
	ulma_sbuf_put(&c->b, "}", 1);
	return maybe_flush(c);
}

/* put_us, at p. */
static inline char *put_us_at(char *p, uint64_t ns)
{
	p = ulma_put_decimal(p, ns / 1000);
	unsigned frac = (unsigned)(ns % 1000);
	if (frac) {
		*p++ = '.';
		*p++ = (char)('0' + frac / 100);
		frac %= 100;
		if (frac) {
			*p++ = (char)('0' + frac / 10);
			if (frac % 10)
				*p++ = (char)('0' + frac % 10);
		}
	}
	return p;
}

/* A complete event, written straight into the buffer (one per frame: the
 * hot path). */
static int on_close(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	struct chrome *c = ctx;
	(void)w;
	static const char unknown[COPY_CHUNK] = "\"name\":\"?\"";
	bool known = f->func < c->nfields && c->fields[f->func];
	const char *fields = known ? c->fields[f->func] : unknown;
	size_t flen = known ? c->field_len[f->func] : strlen(unknown);
	char *p = ulma_sbuf_room(&c->b, flen + COPY_CHUNK + 128);
	if (!p)
		return -ENOMEM;
	char *start = p;
	if (!c->first) {
		*p++ = ',';
		*p++ = '\n';
	}
	c->first = false;
	memcpy(p, "{\"ph\":\"X\",", 10);
	p += 10;
	for (size_t i = 0; i < flen; i += COPY_CHUNK)
		memcpy(p + i, fields + i, COPY_CHUNK);
	p += flen;
	memcpy(p, ",\"ts\":", 6);
	p = put_us_at(p + 6, f->start_ns);
	memcpy(p, ",\"dur\":", 7);
	p = put_us_at(p + 7, f->end_ns - f->start_ns);
	memcpy(p, c->tails[thread], sizeof(c->tails[thread]));
	p += c->tail_len[thread];
	c->b.len += (size_t)(p - start);
	c->b.p[c->b.len] = 0;
	return c->b.len < FLUSH_AT ? 0 : ulma_sbuf_flush(&c->b, c->out);
}

/* An instant on its thread, a counter's value on its process; a thread's
 * name waits for the end (thread_names). */
static int on_mark(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_mark *m)
{
	struct chrome *c = ctx;
	const struct ulma_walk_thread *t = &w->threads[thread];
	const char *name = w->funcs[m->name].name;
	if (m->kind == ULMA_EXT_INSTANT) {
		separator(c);
		ulma_sbuf_puts(&c->b, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"instant\",\"name\":");
	} else if (m->kind == ULMA_EXT_COUNTER) {
		if (!isfinite(m->value)) {
			c->not_finite++;
			return 0;
		}
		separator(c);
		ulma_sbuf_puts(&c->b, "{\"ph\":\"C\",\"cat\":\"counter\",\"name\":");
	} else {
		return 0;
	}
	ulma_sbuf_json_text(&c->b, name);
	if (m->kind == ULMA_EXT_COUNTER) {
		ulma_sbuf_puts(&c->b, ",\"args\":{");
		ulma_sbuf_json_text(&c->b, name);
		ulma_sbuf_put(&c->b, ":", 1);
		ulma_sbuf_double(&c->b, m->value);
		ulma_sbuf_put(&c->b, "}", 1);
	}
	ulma_sbuf_puts(&c->b, ",\"ts\":");
	put_us(&c->b, m->at_ns);
	return end_event(c, t);
}

/* A message's end: the start of its flow at the send, its finish at the receive. */
static int on_mpi(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_mpi *m)
{
	struct chrome *c = ctx;
	const struct ulma_trace_mpi *e = m->ev;
	uint64_t id;
	if (!ulma_walk_mpi_message_id(m, &id))
		return 0;
	bool send = e->op == ULMA_MPI_SEND;
	separator(c);
	ulma_sbuf_puts(&c->b, send ? "{\"ph\":\"s\"" : "{\"ph\":\"f\",\"bp\":\"e\"");
	ulma_sbuf_printf(&c->b, ",\"cat\":\"mpi\",\"name\":\"message tag %lld, %llu bytes\",\"id\":%llu,\"ts\":",
			 (long long)ulma_unzigzag(e->args[1]), (unsigned long long)e->args[3],
			 (unsigned long long)id);
	put_us(&c->b, m->at_ns);
	return end_event(c, &w->threads[thread]);
}

/* Parent -> child process flows (ulma_walk_spawns): {"ph": "s"} on the
 * parent's thread just before the child's first event, {"ph": "f", "bp":
 * "e"} on the child's thread at it, in its first slice. */
static int spawn_flows(struct chrome *c, const struct ulma_walk *w)
{
	struct ulma_walk_spawn *s;
	uint32_t n;
	int err = ulma_walk_spawns(w, &s, &n);
	for (uint32_t i = 0; i < n && !err; i++) {
		for (int end = 0; end < 2 && !err; end++) {
			separator(c);
			ulma_sbuf_puts(&c->b, end ? "{\"ph\":\"f\",\"bp\":\"e\"" : "{\"ph\":\"s\"");
			ulma_sbuf_printf(&c->b, ",\"cat\":\"process\",\"name\":\"pid %u started pid %u\",\"id\":%llu,\"ts\":",
					 s[i].ppid, s[i].pid, (unsigned long long)s[i].flow_id);
			put_us(&c->b, end || !s[i].at_ns ? s[i].at_ns : s[i].at_ns - 1);
			err = end_event(c, &w->threads[end ? s[i].child_thread : s[i].parent_thread]);
		}
	}
	free(s);
	return err;
}

static int on_object(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_trace_object *o,
		     uint64_t at_ns)
{
	struct chrome *c = ctx;
	return ulma_xobjects_add(&c->objects, w, thread, o, at_ns);
}

/* The types with the most objects of each process, as counters of the
 * process ({"ph": "C", "cat": "objects"}), known only at the end. */
static int object_counters(struct chrome *c, const struct ulma_walk *w)
{
	struct ulma_series_point pts[2 * ULMA_XOBJ_BUCKETS + 1];
	char name[ULMA_WALK_LABEL_MAX];
	int err = 0;
	ulma_xobjects_choose(&c->objects);
	for (uint32_t i = 0; i < c->objects.n && !err; i++) {
		const struct ulma_xobj_track *t = &c->objects.t[i];
		if (!t->drawn)
			continue;
		ulma_xobjects_name(w, t, name, sizeof(name));
		uint32_t n = ulma_series_points(&t->s, pts);
		for (uint32_t k = 0; k < n && !err; k++) {
			separator(c);
			ulma_sbuf_puts(&c->b, "{\"ph\":\"C\",\"cat\":\"objects\",\"name\":");
			ulma_sbuf_json_text(&c->b, name);
			ulma_sbuf_puts(&c->b, ",\"args\":{");
			ulma_sbuf_json_text(&c->b, name);
			ulma_sbuf_put(&c->b, ":", 1);
			ulma_sbuf_double(&c->b, pts[k].v);
			ulma_sbuf_puts(&c->b, "},\"ts\":");
			put_us(&c->b, pts[k].at);
			err = end_event(c, &w->threads[t->thread]);
		}
	}
	return err;
}

int ulma_export_chrome(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
		       struct ulma_export_result *res)
{
	struct chrome c = {.out = out, .first = true};
	struct ulma_walk w;
	(void)dir;
	ulma_sbuf_puts(&c.b, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
	struct ulma_walk_sink sink = {.ctx = &c,
				      .on_func = on_func,
				      .on_thread = on_thread,
				      .on_close = on_close,
				      .on_mark = on_mark,
				      .on_mpi = on_mpi,
				      .on_object = on_object};
	int err = ulma_export_walk(in, o, &w, &sink, res);
	if (!err)
		err = spawn_flows(&c, &w);
	if (!err)
		err = object_counters(&c, &w);
	if (!err) {
		thread_names(&c, &w);
		ulma_sbuf_puts(&c.b, "\n],\"otherData\":{\"producer\":\"ulma export\",\"command\":");
		ulma_sbuf_json_text(&c.b, w.command ? w.command : "");
		char note[ULMA_WALK_NOTE_MAX];
		ulma_walk_times_note(&w, note, sizeof(note));
		ulma_sbuf_puts(&c.b, ",\"times\":");
		ulma_sbuf_json_text(&c.b, note);
		ulma_sbuf_printf(&c.b, ",\"complete\":%s,\"duration_ns\":%llu,\"lost_events\":%llu",
				 w.complete ? "true" : "false", (unsigned long long)w.duration_ns,
				 (unsigned long long)w.lost);
		if (c.not_finite)
			ulma_sbuf_printf(&c.b, ",\"counter_values_not_finite\":%llu", (unsigned long long)c.not_finite);
		if (c.objects.left_out)
			ulma_sbuf_printf(&c.b, ",\"object_events_not_drawn\":%llu", (unsigned long long)c.objects.left_out);
		ulma_sbuf_puts(&c.b, "}}\n");
		err = ulma_sbuf_flush(&c.b, out);
	}
	for (uint32_t i = 0; i < c.nfields; i++)
		free(c.fields[i]);
	free(c.fields);
	free(c.field_len);
	free(c.tails);
	free(c.tail_len);
	free(c.pids_seen);
	ulma_xobjects_free(&c.objects);
	ulma_sbuf_free(&c.b);
	ulma_walk_free(&w);
	return err;
}
