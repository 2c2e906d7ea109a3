/* live_view.c - layout, drawing and keys of the live table (see live_view.h). */
#include "live_view.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../analysis/display_width.h"
#include "../analysis/profile_memory.h"
#include "live_relay.h"
#include "live_table.h"
#include "live_term.h"
#include "live_text.h"
#include "ulma/shm.h"

#define REFRESH_NS UINT64_C(500000000)
#define RELAY_WAIT_MS 3000 /* for the relay to write the program's last output */

/* Fixed columns, right-aligned, each with at least one leading space.
 * cpu% run% blk% are there only when the profile has schedstat data; cpu%
 * is one wider, for its sort mark.  gil% (of the self time, the part of
 * blk% spent waiting for the GIL) follows, when GIL waits are told apart
 * and the terminal is at least GIL_MIN_COLS wide: at 80 columns its five
 * characters would come out of the function and file names.
 *
 * nat% (of the total time, the part with a C function or native code on
 * top) comes last, from NAT_MIN_COLS on, for the same reason.  Last, as in
 * the summary: it is a share of the total, not of the self time the split
 * divides, and a column shown only when there is room goes at the end, so
 * that the narrow table is the wide one cut short.  At 100 columns, with
 * every column on, function and file:line still get 21-22 characters each,
 * more than the 16-17 they have at 80.
 *
 * With --memory, mem (the bytes of the function's blocks live now, or the
 * process's) and peak (at the process's peak: what the function held
 * then, or the process's highest) end the row. */
#define W_CALLS 9
#define W_TIME 7
#define W_PCT 7
#define W_CPU 6
#define W_SHARE 5
#define GIL_MIN_COLS 100
#define NAT_MIN_COLS 100
#define W_MEM 8

enum column_shown {
	SHOWN_ALWAYS,
	SHOWN_SPLIT, /* with schedstat data */
	SHOWN_GIL,   /* with GIL waits told apart, on a wide terminal */
	SHOWN_NAT,   /* on a wide terminal */
	SHOWN_MEM,   /* with --memory */
};

struct column {
	const char *name;
	enum ulma_live_sort key; /* ULMA_SORT_COUNT: not a sort key */
	unsigned width;
	enum column_shown shown;
};

static const struct column columns[] = {
	{"calls", ULMA_SORT_CALLS, W_CALLS, SHOWN_ALWAYS}, {"total", ULMA_SORT_TOTAL, W_TIME, SHOWN_ALWAYS},
	{"self", ULMA_SORT_SELF, W_TIME, SHOWN_ALWAYS},    {"self %", ULMA_SORT_COUNT, W_PCT, SHOWN_ALWAYS},
	{"cpu%", ULMA_SORT_CPU, W_CPU, SHOWN_SPLIT},       {"run%", ULMA_SORT_COUNT, W_SHARE, SHOWN_SPLIT},
	{"blk%", ULMA_SORT_COUNT, W_SHARE, SHOWN_SPLIT},   {"gil%", ULMA_SORT_COUNT, W_SHARE, SHOWN_GIL},
	{"nat%", ULMA_SORT_COUNT, W_SHARE, SHOWN_NAT},     {"mem", ULMA_SORT_MEM, W_MEM, SHOWN_MEM},
	{"peak", ULMA_SORT_COUNT, W_MEM, SHOWN_MEM},
};

/* The process view (v): the same idea, one row per process, then its
 * command; its nat% is of the self time, all its threads' time in traced
 * code. */
static const struct column proc_columns[] = {
	{"pid", ULMA_SORT_NAME, 8, SHOWN_ALWAYS},         {"thr", ULMA_SORT_COUNT, 4, SHOWN_ALWAYS},
	{"events", ULMA_SORT_CALLS, W_CALLS, SHOWN_ALWAYS}, {"lost", ULMA_SORT_COUNT, 8, SHOWN_ALWAYS},
	{"self", ULMA_SORT_SELF, W_TIME, SHOWN_ALWAYS},   {"state", ULMA_SORT_COUNT, 6, SHOWN_ALWAYS},
	{"cpus", ULMA_SORT_COUNT, 6, SHOWN_SPLIT},        {"cpu%", ULMA_SORT_CPU, W_CPU, SHOWN_SPLIT},
	{"run%", ULMA_SORT_COUNT, W_SHARE, SHOWN_SPLIT},  {"blk%", ULMA_SORT_COUNT, W_SHARE, SHOWN_SPLIT},
	{"gil%", ULMA_SORT_COUNT, W_SHARE, SHOWN_GIL},    {"nat%", ULMA_SORT_COUNT, W_SHARE, SHOWN_NAT},
	{"mem", ULMA_SORT_MEM, W_MEM, SHOWN_MEM},         {"peak", ULMA_SORT_COUNT, W_MEM, SHOWN_MEM},
};
#define MAX_COLUMNS (sizeof(proc_columns) / sizeof(proc_columns[0]))
#define MAX_RUNNING_PIDS 1024

static const char *const sort_names[ULMA_SORT_COUNT] = {"self", "total", "calls", "cpu", "mem", "name"};


struct ulma_live {
	struct ulma_live_source src;
	struct ulma_clock_calibration cal;
	struct ulma_live_table table;
	struct ulma_relay relay;
	struct ulma_live_text out;  /* the frame */
	struct ulma_live_text line; /* the line being built */
	char cwd[4096];
	bool showing, closed, paused, full_redraw;
	bool key_ready;   /* the last sleep saw the terminal readable */
	bool relay_ready; /* and word from the relay */
	enum ulma_live_sort sort;
	bool split; /* the snapshot has on-CPU and runnable times */
	bool gil;   /* and GIL waits, and the terminal has room for them */
	bool nat;   /* the terminal has room for the native share */
	bool procs; /* showing processes, not functions */
	uint32_t scroll;
	unsigned rows, cols;
	uint64_t next_refresh_ns;
	/* the status as of the last snapshot (frozen while paused) */
	uint64_t snap_ns, snap_ticks, rate_ns, rate_events;
	double events_per_s;
	uint64_t cleared_ns; /* 0 if never */
	uint32_t live_threads, live_processes;
	uint32_t running_pids[MAX_RUNNING_PIDS]; /* the first live_processes of them; more: unknown */
	uint64_t lost, trace_bytes;
};

static double ticks_s(const struct ulma_live *lv, uint64_t ticks)
{
	return (double)ulma_clock_ticks_to_ns(&lv->cal, ticks) / 1e9;
}

/* ---- snapshot ---- */

static uint64_t now_ticks(const struct ulma_live *lv)
{
	uint32_t cpu;
	return ulma_clock_now(lv->src.use_tsc, &cpu);
}

/* Threads writing now, and the processes they belong to. */
static void count_running(struct ulma_live *lv)
{
	const struct ulma_session *s = lv->src.col->session;
	uint32_t *pids = lv->running_pids, npids = 0, threads = 0;
	bool many = false;
	for (uint32_t i = 0; i < s->hdr->slot_count; i++) {
		const struct ulma_shm_slot *slot = &s->slots[i];
		if (atomic_load_explicit(&slot->state, memory_order_acquire) != ULMA_SLOT_ACTIVE)
			continue;
		threads++;
		uint32_t k = 0;
		while (k < npids && pids[k] != slot->pid)
			k++;
		if (k == npids) {
			if (npids < MAX_RUNNING_PIDS)
				pids[npids++] = slot->pid;
			else
				many = true;
		}
	}
	lv->live_threads = threads;
	lv->live_processes = npids + many;
}

enum process_state { PROCESS_ENDED, PROCESS_RUNNING, PROCESS_UNKNOWN };
static const char *const state_names[] = {"ended", "run", "?"};

/* Running while the process has a thread writing, ended after; unknown
 * past the pids we keep. */
static enum process_state process_state(const struct ulma_live *lv, uint32_t pid)
{
	uint32_t known = lv->live_processes < MAX_RUNNING_PIDS ? lv->live_processes : MAX_RUNNING_PIDS;
	for (uint32_t i = 0; i < known; i++)
		if (lv->running_pids[i] == pid)
			return PROCESS_RUNNING;
	return lv->live_processes > MAX_RUNNING_PIDS ? PROCESS_UNKNOWN : PROCESS_ENDED;
}

static void snapshot(struct ulma_live *lv)
{
	const struct ulma_profile *p = &lv->src.col->profile;
	uint64_t now = ulma_clock_monotonic_ns();
	lv->snap_ticks = now_ticks(lv);
	/* the program measures the hook's cost as it starts: from then on, times are corrected */
	double ns_per_event = (double)lv->src.col->overhead_ps / 1000.0;
	if (!lv->src.no_correction && ns_per_event > 0 && lv->cal.ns_per_tick > 0)
		ulma_live_table_set_cost(&lv->table, ns_per_event / lv->cal.ns_per_tick, ns_per_event);
	if (ulma_live_table_update(&lv->table, p, lv->snap_ticks) == 0)
		ulma_live_table_sort(&lv->table, p, lv->sort);
	if (lv->rate_ns == 0 || now - lv->rate_ns >= REFRESH_NS / 2) {
		uint64_t events = ulma_profile_events(p);
		uint64_t since = lv->rate_ns ? lv->rate_ns : lv->src.start.ns;
		uint64_t counted = lv->rate_ns ? lv->rate_events : 0;
		if (now > since)
			lv->events_per_s = (double)(events - counted) * 1e9 / (double)(now - since);
		lv->rate_ns = now;
		lv->rate_events = events;
	}
	count_running(lv);
	lv->lost = p->lost + atomic_load(&lv->src.col->session->hdr->lost_unmarked);
	lv->trace_bytes = lv->src.writer ? ulma_trace_writer_bytes(lv->src.writer) : 0;
	lv->split = p->split != ULMA_PROFILE_SPLIT_NONE;
	lv->snap_ns = now;
}

/* ---- drawing ---- */

static unsigned visible_rows(const struct ulma_live *lv)
{
	return lv->rows > 3 ? lv->rows - 3 : 0;
}

/* Rows of the table on show: functions or processes. */
static uint32_t table_rows(const struct ulma_live *lv)
{
	return lv->procs ? lv->table.nprocs : lv->table.nrows;
}

static void clamp_scroll(struct ulma_live *lv)
{
	unsigned vis = visible_rows(lv);
	uint32_t n = table_rows(lv);
	uint32_t max = n > vis ? n - vis : 0;
	if (lv->scroll > max)
		lv->scroll = max;
}

/* Put the line built in lv->line on row r (1-based): attr, the text cut
 * to the width, padded to it (pad) or followed by a clear.  Nothing is
 * written past the last column, so nothing wraps or is clipped by the
 * terminal. */
static void emit_line(struct ulma_live *lv, unsigned r, const char *attr, bool pad)
{
	struct ulma_live_text *o = &lv->out, *l = &lv->line;
	ulma_live_text_putf(o, "\033[%u;1H", r);
	ulma_live_text_puts(o, attr);
	size_t n = ulma_display_head(l->buf, l->len, lv->cols);
	unsigned w = ulma_display_width_of(l->buf, n);
	ulma_live_text_put(o, l->buf, n);
	if (pad && w < lv->cols)
		ulma_live_text_spaces(o, lv->cols - w);
	ulma_live_text_puts(o, "\033[0m");
	if (!pad && w < lv->cols)
		ulma_live_text_puts(o, "\033[K");
	l->len = 0;
}

static void draw_status(struct ulma_live *lv)
{
	char rate[32], lost[32], size[32], el[32];
	ulma_live_seconds((double)(lv->snap_ns - lv->src.start.ns) / 1e9, el, sizeof(el));
	ulma_live_human_count(lv->events_per_s, rate, sizeof(rate));
	ulma_live_human_count((double)lv->lost, lost, sizeof(lost));
	ulma_live_human_bytes(lv->trace_bytes, size, sizeof(size));
	ulma_live_text_putf(&lv->line, "elapsed %s  events/s %s  lost %s  threads %u  processes %u", el, rate, lost,
	     lv->live_threads, lv->live_processes);
	if (lv->src.writer)
		ulma_live_text_putf(&lv->line, "  trace %s", size);
	emit_line(lv, 1, "\033[1m", false);
}

/* The number columns of the view on show, into cols (MAX_COLUMNS); their count. */
static unsigned view_columns(const struct ulma_live *lv, struct column *cols)
{
	const struct column *all = lv->procs ? proc_columns : columns;
	unsigned nall = lv->procs ? sizeof(proc_columns) / sizeof(proc_columns[0]) : sizeof(columns) / sizeof(columns[0]);
	bool shown[] = {[SHOWN_ALWAYS] = true, [SHOWN_SPLIT] = lv->split, [SHOWN_GIL] = lv->gil, [SHOWN_NAT] = lv->nat,
			[SHOWN_MEM] = lv->src.col->profile.memory != NULL};
	unsigned n = 0;
	for (unsigned i = 0; i < nall; i++)
		if (shown[all[i].shown])
			cols[n++] = all[i];
	return n;
}

/* Functions: function and file:line (nw and fw wide), then the numbers.
 * Processes: the numbers, then the command (nw wide). */
static void draw_header(struct ulma_live *lv, unsigned nw, unsigned fw)
{
	struct ulma_live_text *l = &lv->line;
	struct column cols[MAX_COLUMNS];
	unsigned n = view_columns(lv, cols);
	if (!lv->procs) {
		ulma_live_text_cell(l, lv->sort == ULMA_SORT_NAME ? "function*" : "function", nw, false);
		ulma_live_text_put(l, " ", 1);
		ulma_live_text_cell(l, "file:line", fw, false);
	}
	for (unsigned i = 0; i < n; i++) { /* the sort column is marked with '*' */
		enum ulma_live_sort key = lv->procs && lv->sort == ULMA_SORT_TOTAL ? ULMA_SORT_SELF : lv->sort;
		bool mark = cols[i].key == key;
		ulma_live_text_putf(l, "%*s%s", (int)cols[i].width - mark, cols[i].name, mark ? "*" : "");
	}
	if (lv->procs) {
		ulma_live_text_put(l, " ", 1);
		ulma_live_text_cell(l, "command", nw, false);
	}
	emit_line(lv, 2, "\033[7m", true);
}

/* Self time's shares on a CPU, runnable and blocked, and waiting for the
 * GIL if shown; "-" without self time. */
static void put_split(struct ulma_live *lv, uint64_t self_ticks, uint64_t cpu_ns, uint64_t wait_ns, uint64_t gil_ns)
{
	uint64_t self_ns = ulma_clock_ticks_to_ns(&lv->cal, self_ticks);
	if (self_ns == 0) {
		ulma_live_text_putf(&lv->line, "%*s%*s%*s", W_CPU, "-", W_SHARE, "-", W_SHARE, "-");
		if (lv->gil)
			ulma_live_text_putf(&lv->line, "%*s", W_SHARE, "-");
		return;
	}
	struct ulma_live_split sp = ulma_live_split_of(self_ns, cpu_ns, wait_ns, gil_ns);
	ulma_live_text_putf(&lv->line, "%*.0f%*.0f%*.0f", W_CPU, sp.cpu, W_SHARE, sp.run, W_SHARE, sp.blk);
	if (lv->gil)
		ulma_live_text_putf(&lv->line, "%*.0f", W_SHARE, sp.gil);
}

/* The native share of a time, if shown; "-" without time. */
static void put_native(struct ulma_live *lv, uint64_t native_ticks, uint64_t ticks)
{
	if (!lv->nat)
		return;
	if (ticks == 0)
		ulma_live_text_putf(&lv->line, "%*s", W_SHARE, "-");
	else
		ulma_live_text_putf(&lv->line, "%*.0f", W_SHARE, 100.0 * (double)native_ticks / (double)ticks);
}

/* mem and peak (--memory). */
static void put_memory(struct ulma_live *lv, uint64_t live, uint64_t peak)
{
	if (!lv->src.col->profile.memory)
		return;
	uint64_t v[2] = {live, peak};
	for (int i = 0; i < 2; i++) { /* at most 7 characters: 1023K, 999.9M, 12.34G */
		if (v[i] < (UINT64_C(1000) << 20))
			ulma_live_text_putf(&lv->line, v[i] < (UINT64_C(1) << 20) ? "%*.0fK" : "%*.1fM", W_MEM - 1,
			     (double)v[i] / (v[i] < (UINT64_C(1) << 20) ? 1024.0 : 1048576.0));
		else
			ulma_live_text_putf(&lv->line, "%*.2fG", W_MEM - 1, (double)v[i] / (double)(UINT64_C(1) << 30));
	}
}

/* A count, exact while it fits in `width` less its leading space. */
static void put_count(struct ulma_live_text *l, uint64_t v, unsigned width)
{
	char buf[32];
	if (snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v) >= (int)width)
		ulma_live_human_count((double)v, buf, sizeof(buf));
	ulma_live_text_putf(l, "%*s", (int)width, buf);
}

static void draw_row(struct ulma_live *lv, unsigned r, const struct ulma_live_row *row, unsigned nw, unsigned fw)
{
	const struct ulma_func_row *f = &lv->src.col->profile.funcs[row->func];
	struct ulma_live_text *l = &lv->line;
	char where[4200], tot[32], self[32];
	const char *file = f->file && *f->file ? f->file : "?";
	size_t cl = strlen(lv->cwd);
	if (cl > 1 && strncmp(file, lv->cwd, cl) == 0 && file[cl] == '/')
		file += cl + 1;
	if (strcmp(file, "~") == 0)
		snprintf(where, sizeof(where), "~");
	else
		snprintf(where, sizeof(where), "%s:%u", file, f->line);
	ulma_live_text_cell(l, f->name && *f->name ? f->name : "?", nw, false);
	ulma_live_text_put(l, " ", 1);
	ulma_live_text_cell(l, where, fw, true);
	put_count(l, row->n.calls, W_CALLS);
	ulma_live_seconds(ticks_s(lv, row->n.total_ticks), tot, sizeof(tot));
	ulma_live_seconds(ticks_s(lv, row->n.self_ticks), self, sizeof(self));
	double pct = lv->table.self_sum ? 100.0 * (double)row->n.self_ticks / (double)lv->table.self_sum : 0.0;
	ulma_live_text_putf(l, "%*s%*s%*.1f%%", W_TIME, tot, W_TIME, self, W_PCT - 1, pct);
	if (lv->split)
		put_split(lv, row->n.self_ticks, row->n.self_cpu_ns, row->n.self_wait_ns, row->n.self_gil_ns);
	put_native(lv, row->n.total_native_ticks, row->n.total_ticks);
	struct ulma_mem_func m = ulma_profile_memory_func(&lv->src.col->profile, row->func);
	put_memory(lv, m.live_bytes, m.peak_bytes);
	emit_line(lv, r, "", false);
}

/* pid thr events lost self state [cpus cpu% run% blk% [gil%]] [nat%] command.  cpus is
 * the process's CPU time over its wall time since its first event (or the
 * clear), up to now while it runs: 1.00 is one CPU kept busy. */
static void draw_proc_row(struct ulma_live *lv, unsigned r, const struct ulma_live_proc *pr, unsigned cw)
{
	struct ulma_live_text *l = &lv->line;
	char self[32];
	enum process_state state = process_state(lv, pr->pid);
	ulma_live_seconds(ticks_s(lv, pr->n.self_ticks), self, sizeof(self));
	ulma_live_text_putf(l, "%8u%4u", pr->pid, pr->threads);
	put_count(l, pr->n.events, W_CALLS);
	put_count(l, pr->n.lost, 8);
	ulma_live_text_putf(l, "%*s%6s", W_TIME, self, state_names[state]);
	if (lv->split) {
		uint64_t end = state == PROCESS_RUNNING && lv->snap_ticks > pr->last_ticks ? lv->snap_ticks : pr->last_ticks;
		uint64_t wall = end > pr->first_ticks ? ulma_clock_ticks_to_ns(&lv->cal, end - pr->first_ticks) : 0;
		if (wall)
			ulma_live_text_putf(l, "%6.2f", (double)pr->n.self_cpu_ns / (double)wall);
		else
			ulma_live_text_putf(l, "%6s", "-");
		put_split(lv, pr->n.self_ticks, pr->n.self_cpu_ns, pr->n.self_wait_ns, pr->n.self_gil_ns);
	}
	put_native(lv, pr->n.native_ticks, pr->n.self_ticks);
	const struct ulma_profile_memory *m = lv->src.col->profile.memory;
	struct ulma_mem_proc mp = {0};
	for (uint32_t i = 0; m && i < m->nprocs; i++)
		if (m->procs[i].pid == pr->pid)
			mp = m->procs[i];
	put_memory(lv, mp.live_bytes, mp.peak_bytes);
	ulma_live_text_put(l, " ", 1);
	const char *name = ulma_pid_names_get(&lv->src.col->profile.names, pr->pid);
	ulma_live_text_cell(l, name ? name : "?", cw, false);
	emit_line(lv, r, "", false);
}

static void draw_keys(struct ulma_live *lv, unsigned r)
{
	char where[64] = "", cleared[48] = "";
	unsigned vis = visible_rows(lv);
	uint32_t n = table_rows(lv);
	if (n > 0) {
		uint32_t last = lv->scroll + vis < n ? lv->scroll + vis : n;
		snprintf(where, sizeof(where), "  rows %u-%u of %u", lv->scroll + 1, last, n);
	}
	if (lv->cleared_ns)
		snprintf(cleared, sizeof(cleared), "  cleared %.0fs ago",
			 (double)(lv->snap_ns - lv->cleared_ns) / 1e9);
	/* what matters most first: a narrow terminal cuts the end */
	ulma_live_text_putf(&lv->line, "s sort: %s  v %s  c clear  p pause  q close view%s%s%s  up/down scroll",
	     sort_names[lv->sort], lv->procs ? "functions" : "processes", lv->paused ? "  PAUSED" : "", where,
	     cleared);
	emit_line(lv, r, lv->paused ? "\033[7m" : "", false);
}

static void draw(struct ulma_live *lv)
{
	ulma_term_size(&lv->rows, &lv->cols);
	lv->gil = lv->split && lv->src.col->profile.has_gil && lv->cols >= GIL_MIN_COLS;
	lv->nat = lv->cols >= NAT_MIN_COLS;
	clamp_scroll(lv);
	lv->out.len = lv->line.len = 0;
	lv->out.failed = lv->line.failed = false;
	if (lv->full_redraw)
		ulma_live_text_puts(&lv->out, "\033[0m\033[H\033[2J");
	/* function and file:line share what the numbers leave, file:line the
	 * odd one; a process's command has it all */
	struct column cols[MAX_COLUMNS];
	unsigned numbers = 0, n = view_columns(lv, cols);
	for (unsigned i = 0; i < n; i++)
		numbers += cols[i].width;
	unsigned least = lv->procs ? 8 : 16;
	unsigned rest = lv->cols > numbers + least + 1 ? lv->cols - numbers - 1 : least;
	unsigned nw = lv->procs ? rest : rest / 2, fw = rest - rest / 2;
	draw_status(lv);
	if (lv->rows >= 3)
		draw_header(lv, nw, fw);
	unsigned vis = visible_rows(lv);
	for (unsigned i = 0; i < vis; i++) {
		uint32_t k = lv->scroll + i;
		if (k < table_rows(lv) && lv->procs) {
			draw_proc_row(lv, 3 + i, &lv->table.procs[k], nw);
		} else if (k < table_rows(lv)) {
			draw_row(lv, 3 + i, &lv->table.rows[k], nw, fw);
		} else {
			emit_line(lv, 3 + i, "", false);
		}
	}
	if (lv->rows >= 2)
		draw_keys(lv, lv->rows);
	if (lv->out.failed)
		return;
	int r = ulma_term_write(lv->out.buf, lv->out.len);
	lv->full_redraw = r != 0; /* a frame cut short leaves debris: clear next time */
}

/* ---- life cycle ---- */

int ulma_live_open(const struct ulma_live_source *src, struct ulma_live **out)
{
	*out = NULL;
	int err = ulma_term_open();
	if (err)
		return err;
	struct ulma_live *lv = calloc(1, sizeof(*lv));
	if (!lv) {
		ulma_term_close();
		return -ENOMEM;
	}
	lv->src = *src;
	ulma_clock_calibrate(src->use_tsc, &src->start, NULL, src->hz, &lv->cal);
	ulma_live_table_init(&lv->table);
	ulma_live_table_set_clock(&lv->table, lv->cal.ns_per_tick);
	if (!getcwd(lv->cwd, sizeof(lv->cwd)))
		lv->cwd[0] = 0;
	lv->relay = (struct ulma_relay){.pid = 0, .slave = -1, .ctl = -1, .released = false};
	err = src->hold_output ? ulma_relay_start(&lv->relay, ulma_term_fd(), ulma_term_saved_modes()) : 0;
	if (err) {
		ulma_term_close();
		free(lv);
		return err;
	}
	*out = lv;
	return 0;
}

int ulma_live_program_fd(const struct ulma_live *lv, int fd)
{
	if (!lv || lv->relay.slave < 0 || (fd != STDOUT_FILENO && fd != STDERR_FILENO))
		return -1;
	return ulma_term_is_same(fd) ? lv->relay.slave : -1;
}

/* Give the screen back.  The relay lets the held output through at the
 * next tick (or at ulma_live_close), once the caller has said why the view
 * closed: that line then never lands inside the program's output. */
static void close_view(struct ulma_live *lv)
{
	if (lv->showing)
		ulma_term_leave();
	lv->showing = false;
	lv->closed = true;
}

void ulma_live_started(struct ulma_live *lv)
{
	if (!lv)
		return;
	ulma_relay_spawned(&lv->relay);
	if (ulma_term_enter() != 0) {
		close_view(lv);
		return;
	}
	lv->showing = true;
	lv->full_redraw = true;
	lv->key_ready = true;
	snapshot(lv);
	draw(lv);
	lv->next_refresh_ns = ulma_clock_monotonic_ns() + REFRESH_NS;
}

bool ulma_live_showing(const struct ulma_live *lv)
{
	return lv && lv->showing;
}

/* Apply one key.  Returns true if the view must close. */
static bool key(struct ulma_live *lv, int k)
{
	unsigned page = visible_rows(lv) > 1 ? visible_rows(lv) - 1 : 1;
	switch (k) {
	case 'q':
	case 'Q':
		return true;
	case 's':
	case 'S':
		do /* by on-CPU time only when there is one, by memory only with --memory */
			lv->sort = (enum ulma_live_sort)((lv->sort + 1) % ULMA_SORT_COUNT);
		while ((lv->sort == ULMA_SORT_CPU && !lv->split) ||
		       (lv->sort == ULMA_SORT_MEM && !lv->src.col->profile.memory));
		ulma_live_table_sort(&lv->table, &lv->src.col->profile, lv->sort);
		lv->scroll = 0;
		break;
	case 'v':
	case 'V':
		lv->procs = !lv->procs;
		lv->scroll = 0;
		break;
	case 'c':
	case 'C':
		/* even when paused: the user sees the table restart from zero */
		if (ulma_live_table_clear(&lv->table, &lv->src.col->profile, now_ticks(lv)) == 0)
			lv->cleared_ns = ulma_clock_monotonic_ns();
		snapshot(lv);
		lv->scroll = 0;
		break;
	case 'p':
	case 'P':
	case ' ':
		lv->paused = !lv->paused;
		if (!lv->paused)
			snapshot(lv);
		break;
	case ULMA_KEY_UP:
		lv->scroll = lv->scroll > 0 ? lv->scroll - 1 : 0;
		break;
	case ULMA_KEY_DOWN:
		lv->scroll++;
		break;
	case ULMA_KEY_PGUP:
		lv->scroll = lv->scroll > page ? lv->scroll - page : 0;
		break;
	case ULMA_KEY_PGDN:
		lv->scroll += page;
		break;
	case ULMA_KEY_HOME:
		lv->scroll = 0;
		break;
	case ULMA_KEY_END:
		lv->scroll = UINT32_MAX;
		break;
	case 0x0c: /* Ctrl-L */
		lv->full_redraw = true;
		break;
	default:
		return false;
	}
	clamp_scroll(lv);
	return false;
}

enum ulma_live_result ulma_live_tick(struct ulma_live *lv)
{
	if (!lv)
		return ULMA_LIVE_OFF;
	if (!lv->showing) {
		if (lv->closed)
			ulma_relay_release(&lv->relay);
		return ULMA_LIVE_OFF;
	}
	bool redraw = false;
	int k;
	/* first: after Ctrl-Z and `bg` the terminal is not ours to read; and
	 * output the relay cannot hold must go straight to the terminal */
	unsigned ev = ulma_term_events();
	bool relay_full = lv->relay_ready && ulma_relay_full(&lv->relay);
	lv->relay_ready = false;
	if ((ev & ULMA_TERM_LOST) || relay_full) {
		close_view(lv);
		return ULMA_LIVE_CLOSED;
	}
	if (ev & (ULMA_TERM_RESIZED | ULMA_TERM_RESUMED)) {
		lv->full_redraw = true;
		redraw = true;
	}
	/* read keys only when the last sleep saw the terminal readable */
	while (lv->key_ready && (k = ulma_term_key()) != ULMA_KEY_NONE) {
		if (key(lv, k)) {
			close_view(lv);
			return ULMA_LIVE_CLOSED;
		}
		redraw = true;
	}
	lv->key_ready = false;
	uint64_t now = ulma_clock_monotonic_ns();
	if (now >= lv->next_refresh_ns) {
		if (!lv->paused)
			snapshot(lv);
		lv->next_refresh_ns = now + REFRESH_NS;
		redraw = true;
	}
	if (redraw)
		draw(lv);
	return ULMA_LIVE_ON;
}

void ulma_live_sleep(struct ulma_live *lv, long ns)
{
	struct timespec ts = {0, ns};
	if (!lv || !lv->showing) {
		nanosleep(&ts, NULL);
		return;
	}
	struct pollfd p[2] = {{ulma_term_fd(), POLLIN, 0}, {ulma_relay_fd(&lv->relay), POLLIN, 0}};
	/* a key or a hang-up; not a signal (SIGCONT, SIGWINCH), which tick sees
	 * through the terminal's events, without reading */
	bool woken = ppoll(p, 2, &ts, NULL) > 0;
	lv->key_ready = woken && p[0].revents;
	lv->relay_ready = woken && p[1].revents;
}

void ulma_live_close(struct ulma_live *lv)
{
	if (!lv)
		return;
	close_view(lv);
	ulma_term_close();
	ulma_relay_finish(&lv->relay, RELAY_WAIT_MS);
	ulma_live_table_free(&lv->table);
	free(lv->out.buf);
	free(lv->line.buf);
	free(lv);
}
