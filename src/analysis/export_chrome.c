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
 * number.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_text.h"
#include "ulma/shm.h"

#define FLUSH_AT 65536

struct chrome {
	FILE *out;
	struct ulma_sbuf b;
	char **fields; /* per function: "name":...,"cat":...,"args":{...} */
	uint32_t nfields;
	uint32_t *pids_seen;
	uint32_t npids;
	uint64_t not_finite; /* counter values JSON cannot hold (NaN, infinities), left out */
	bool first;
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
		c->nfields = n;
	}
	struct ulma_sbuf s = {0};
	ulma_sbuf_puts(&s, "\"name\":");
	ulma_sbuf_json(&s, f->name);
	ulma_sbuf_printf(&s, ",\"cat\":\"%s\"", ulma_walk_kind_name(f->kind));
	if (ulma_walk_func_located(f)) {
		struct ulma_sbuf loc = {0};
		ulma_sbuf_printf(&loc, "%s:%u", f->file, f->line);
		ulma_sbuf_puts(&s, ",\"args\":{\"loc\":");
		ulma_sbuf_json(&s, loc.p ? loc.p : "");
		ulma_sbuf_puts(&s, "}");
		if (loc.nomem)
			s.nomem = true;
		ulma_sbuf_free(&loc);
	}
	if (s.nomem) {
		ulma_sbuf_free(&s);
		return -ENOMEM;
	}
	free(c->fields[func]);
	c->fields[func] = s.p;
	return 0;
}

static int on_thread(void *ctx, const struct ulma_walk *w, uint32_t thread)
{
	struct chrome *c = ctx;
	const struct ulma_walk_thread *t = &w->threads[thread];
	bool known = false;
	for (uint32_t i = 0; i < c->npids && !known; i++)
		known = c->pids_seen[i] == t->pid;
	if (!known) {
		uint32_t *p = realloc(c->pids_seen, (size_t)(c->npids + 1) * sizeof(*p));
		if (!p)
			return -ENOMEM;
		c->pids_seen = p;
		p[c->npids++] = t->pid;
		struct ulma_sbuf name = {0};
		const char *label = ulma_walk_process_name(w, t->pid);
		if (label)
			ulma_sbuf_printf(&name, "%s (pid %u)", label, t->pid);
		else
			ulma_sbuf_printf(&name, "pid %u", t->pid);
		separator(c);
		ulma_sbuf_printf(&c->b, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"tid\":0,\"args\":{\"name\":",
				 t->pid);
		ulma_sbuf_json(&c->b, name.p ? name.p : "");
		ulma_sbuf_puts(&c->b, "}}");
		if (name.nomem)
			c->b.nomem = true;
		ulma_sbuf_free(&name);
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
			ulma_sbuf_json(&c->b, w->funcs[t->name].name);
		else
			ulma_sbuf_printf(&c->b, "\"%s %u\"", t->tid == t->pid ? "main thread" : "thread", t->tid);
		ulma_sbuf_puts(&c->b, "}}");
	}
}

/* ns as microseconds with three decimals */
static void put_us(struct ulma_sbuf *b, uint64_t ns)
{
	char frac[4] = {'.', (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10), (char)('0' + ns % 10)};
	ulma_sbuf_u64(b, ns / 1000);
	ulma_sbuf_put(b, frac, 4);
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

static int on_close(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	struct chrome *c = ctx;
	const struct ulma_walk_thread *t = &w->threads[thread];
	separator(c);
	ulma_sbuf_puts(&c->b, "{\"ph\":\"X\",");
	ulma_sbuf_puts(&c->b, f->func < c->nfields && c->fields[f->func] ? c->fields[f->func] : "\"name\":\"?\"");
	ulma_sbuf_puts(&c->b, ",\"ts\":");
	put_us(&c->b, f->start_ns);
	ulma_sbuf_puts(&c->b, ",\"dur\":");
	put_us(&c->b, f->end_ns - f->start_ns);
	return end_event(c, t);
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
	ulma_sbuf_json(&c->b, name);
	if (m->kind == ULMA_EXT_COUNTER) {
		ulma_sbuf_puts(&c->b, ",\"args\":{");
		ulma_sbuf_json(&c->b, name);
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
	if ((e->op != ULMA_MPI_SEND && e->op != ULMA_MPI_RECV) || e->nargs < 5 || m->rank == UINT32_MAX ||
	    e->args[4] == ULMA_MPI_SEQ_NONE)
		return 0;
	bool send = e->op == ULMA_MPI_SEND;
	uint64_t parts[5] = {send ? m->rank : e->args[0], send ? e->args[0] : m->rank, e->args[1], e->args[2],
			     e->args[4]};
	uint64_t id = UINT64_C(0xcbf29ce484222325);
	for (int k = 0; k < 5; k++)
		id = (id ^ parts[k]) * UINT64_C(0x100000001b3) ^ (id >> 31);
	separator(c);
	ulma_sbuf_puts(&c->b, send ? "{\"ph\":\"s\"" : "{\"ph\":\"f\",\"bp\":\"e\"");
	ulma_sbuf_printf(&c->b, ",\"cat\":\"mpi\",\"name\":\"message tag %lld, %llu bytes\",\"id\":%llu,\"ts\":",
			 (long long)ulma_unzigzag(e->args[1]), (unsigned long long)e->args[3],
			 (unsigned long long)(id & ((UINT64_C(1) << 53) - 1)));
	put_us(&c->b, m->at_ns);
	return end_event(c, &w->threads[thread]);
}

int ulma_export_chrome(FILE *in, const struct ulma_export_opts *o, FILE *out, const char *dir,
		       struct ulma_export_result *res)
{
	struct chrome c = {.out = out, .first = true};
	struct ulma_walk w;
	(void)dir;
	ulma_sbuf_puts(&c.b, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
	struct ulma_walk_sink sink = {&c, on_func, on_thread, NULL, on_close, NULL, NULL, on_mark, NULL, on_mpi};
	int err = ulma_export_walk(in, o, &w, &sink, res);
	if (!err) {
		thread_names(&c, &w);
		ulma_sbuf_puts(&c.b, "\n],\"otherData\":{\"producer\":\"ulma export\",\"command\":");
		ulma_sbuf_json(&c.b, w.command ? w.command : "");
		char note[ULMA_WALK_NOTE_MAX];
		ulma_walk_times_note(&w, note, sizeof(note));
		ulma_sbuf_puts(&c.b, ",\"times\":");
		ulma_sbuf_json(&c.b, note);
		ulma_sbuf_printf(&c.b, ",\"complete\":%s,\"duration_ns\":%llu,\"lost_events\":%llu",
				 w.complete ? "true" : "false", (unsigned long long)w.duration_ns,
				 (unsigned long long)w.lost);
		if (c.not_finite)
			ulma_sbuf_printf(&c.b, ",\"counter_values_not_finite\":%llu", (unsigned long long)c.not_finite);
		ulma_sbuf_puts(&c.b, "}}\n");
		err = ulma_sbuf_flush(&c.b, out);
	}
	for (uint32_t i = 0; i < c.nfields; i++)
		free(c.fields[i]);
	free(c.fields);
	free(c.pids_seen);
	ulma_sbuf_free(&c.b);
	ulma_walk_free(&w);
	return err;
}
