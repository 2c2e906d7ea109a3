/* collector_calls.c - the monitor's fast path: a thread's runs of plain
 * calls (entries and exits of functions already mapped, Python's by their
 * session id, native code's by its address in the thread's cache, each
 * exit the top frame's) applied to the profile and the trace.  Most
 * records of a call-heavy program are such runs, so this loop is most of
 * the monitor's per-event cost (docs/design.md, "The monitor's per-event
 * work").  An entry whose next record is its own exit, a leaf call, is
 * applied in one step with no frame pushed (ulma_profile_cursor_leaf).
 *
 * The profile's and the stream's cursors are held in locals, and the
 * records', the profile's and the stream's clocks are one variable: a run
 * starts only where the three agree (they part only around other kinds of
 * records), and each event moves all three to its time, so the delta is
 * taken once and no clamp is repeated.  It is a function of its own, out
 * of collector_apply.c's general loop, compiled for each case apart
 * (below): inlined there, with every other kind of record's state
 * live around it, GCC kept more of the cursors on the stack (merge sort's
 * monitor 5% less CPU out of line; bench_drain's monitor thread 102.5 -> 95.3
 * instructions an event under callgrind).
 */
#include "collector_calls.h"

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "collector_slot.h"

static_assert(offsetof(struct ulma_record, cpu) == 12 && offsetof(struct ulma_record, kind) == 14 &&
		      offsetof(struct ulma_record, flags) == 15,
	      "record_key reads cpu, kind and flags as one word");

/* A record's cpu | kind << 16 | flags << 24. */
static inline uint32_t record_key(const struct ulma_record *r)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint32_t k;
	memcpy(&k, (const char *)r + offsetof(struct ulma_record, cpu), sizeof k);
	return k;
#else
	return r->cpu | (uint32_t)r->kind << 16 | (uint32_t)r->flags << 24;
#endif
}

static inline __attribute__((always_inline)) const struct ulma_record *
calls_run(struct ulma_profile *p, uint32_t thread, struct ulma_trace_stream *st, struct ulma_trace_cursor *cur,
	  const uint32_t *by_id, uint32_t nby_id, const struct ulma_record *r, const struct ulma_record *end,
	  uint64_t *lastp, uint64_t wake, const struct native_seen *native, const bool stream, const bool natives)
{
	struct ulma_profile_cursor pc;
	ulma_profile_cursor_load(p, thread, &pc);
	uint64_t last = *lastp;
	if (!pc.fast || pc.last_ticks != last || (stream && cur->last != last))
		return r; /* the thread's first event, lines or memory, or the clocks apart */
	struct ulma_trace_cursor tc = {0}; /* in registers */
	if (stream) {
		tc = *cur;
		if (tc.cpu > UINT16_MAX)
			return r; /* no record's cpu: the stream's first event */
	}
	/* A record's cpu, kind and flags as one word: an entry or an exit with
	 * no flags, on the stream's cpu (any cpu without a stream).  One
	 * compare tells the kind, that the trace needs no cpu change, and
	 * that no flag asks for the general steps. */
	const uint32_t key_mask = stream ? UINT32_MAX : UINT32_C(0xffff0000);
	const uint32_t enter_key = (stream ? tc.cpu : 0) | (uint32_t)ULMA_REC_ENTER << 16;
	const uint32_t exit_key = (stream ? tc.cpu : 0) | (uint32_t)ULMA_REC_EXIT << 16;
	for (; r < end; r++) {
		/* every record, unconditionally: one instruction, where choosing one record a line and
		 * a line before `end` took three and a half on average.  Past `end` it touches the
		 * lines the writer is filling, at most ULMA_PREFETCH_RECORDS records at the end of a
		 * poll of thousands (and a prefetch never faults) */
		__builtin_prefetch(r + ULMA_PREFETCH_RECORDS);
		const uint32_t sid = r->id;
		const uint32_t raw = record_key(r), key = raw & key_mask;
		uint64_t t = r->time > last ? r->time : last;
		uint32_t idx;
		if (natives) {
			/* a native function's address (shm.h), through the thread's cache; on the stream's cpu */
			if (ULMA_UNLIKELY(t >= wake || (raw >> 16) - ULMA_REC_NATIVE_ENTER > 1))
				break;
			const uint64_t addr = sid | (uint64_t)(raw & 0xffff) << 32;
			const struct native_seen *seen = &native[ulma_collector_native_slot(addr)];
			if (ULMA_UNLIKELY(seen->addr != addr))
				break;
			idx = seen->index;
		} else {
			if (ULMA_UNLIKELY(sid >= nby_id || t >= wake))
				break;
			/* an unmapped id (0 in by_id) gives UINT32_MAX: no entry's (>= nactive), no exit's (not top) */
			idx = by_id[sid] - 1;
		}
		const uint64_t d = t - last;
		if (natives ? (raw >> 16) == ULMA_REC_NATIVE_ENTER : key == enter_key) {
			if (ULMA_UNLIKELY(pc.depth == pc.cap || idx >= pc.nactive))
				break; /* the stack grows: the caller's steps */
			bool same = pc.top == idx;
			ulma_profile_cursor_charge_delta(&pc, d);
			if (stream) {
				ulma_trace_cursor_word_delta(st, &tc, t, d, tc.cpu,
							     same ? ULMA_TAG_ENTER_SAME : ULMA_TAG_ENTER);
				ulma_trace_cursor_enter_id(&tc, idx + 1, same);
			}
			const struct ulma_record *x = r + 1; /* its exit next: a leaf, no frame */
			uint64_t tx;
			if (x < end && (natives ? record_key(x) == raw + (UINT32_C(1) << 16) /* NATIVE_EXIT, same address */
					: (record_key(x) & key_mask) == exit_key) && x->id == sid &&
			    (tx = x->time > t ? x->time : t) < wake) {
				ulma_profile_cursor_leaf(&pc, idx, tx - t);
				if (stream)
					ulma_trace_cursor_word_delta(st, &tc, tx, tx - t, tc.cpu, ULMA_TAG_EXIT);
				r = x;
				t = tx;
			} else {
				ulma_profile_cursor_push(&pc, idx, t);
			}
		} else if (natives || key == exit_key) {
			if (ULMA_UNLIKELY(pc.depth == 0 || pc.top != idx))
				break; /* an exit to resynchronise */
			ulma_profile_cursor_charge_delta(&pc, d);
			ulma_profile_cursor_pop(&pc, t);
			if (stream)
				ulma_trace_cursor_word_delta(st, &tc, t, d, tc.cpu, ULMA_TAG_EXIT);
		} else {
			break; /* another kind, a flag, or a cpu change */
		}
		last = t;
	}
	pc.last_ticks = last;
	tc.last = last;
	if (stream)
		*cur = tc;
	ulma_profile_cursor_store(&pc);
	*lastp = last;
	return r;
}

/* Compiled four times, with and without a stream, for Python's records and
 * for native ones, each on its own so that its state has the registers to
 * itself (one loop taking both kinds ran Python's records 1.8 instructions
 * an event more).  A run of one kind stops at the other's first record, and
 * ulma_collector_calls goes on with the other loop. */
static __attribute__((noinline)) const struct ulma_record *
python_with_stream(struct ulma_profile *p, uint32_t thread, struct ulma_trace_stream *st, struct ulma_trace_cursor *cur,
		   const uint32_t *by_id, uint32_t nby_id, const struct ulma_record *r, const struct ulma_record *end,
		   uint64_t *lastp, uint64_t wake)
{
	return calls_run(p, thread, st, cur, by_id, nby_id, r, end, lastp, wake, NULL, true, false);
}

static __attribute__((noinline)) const struct ulma_record *
python_without_stream(struct ulma_profile *p, uint32_t thread, const uint32_t *by_id, uint32_t nby_id,
		      const struct ulma_record *r, const struct ulma_record *end, uint64_t *lastp, uint64_t wake)
{
	return calls_run(p, thread, NULL, NULL, by_id, nby_id, r, end, lastp, wake, NULL, false, false);
}

static __attribute__((noinline)) const struct ulma_record *
native_with_stream(struct ulma_profile *p, uint32_t thread, struct ulma_trace_stream *st, struct ulma_trace_cursor *cur,
		   const struct ulma_record *r, const struct ulma_record *end, uint64_t *lastp, uint64_t wake,
		   const struct native_seen *native)
{
	return calls_run(p, thread, st, cur, NULL, 0, r, end, lastp, wake, native, true, true);
}

static __attribute__((noinline)) const struct ulma_record *
native_without_stream(struct ulma_profile *p, uint32_t thread, const struct ulma_record *r,
		      const struct ulma_record *end, uint64_t *lastp, uint64_t wake, const struct native_seen *native)
{
	return calls_run(p, thread, NULL, NULL, NULL, 0, r, end, lastp, wake, native, false, true);
}

const struct ulma_record *ulma_collector_calls(struct ulma_profile *p, uint32_t thread, struct ulma_trace_stream *st,
					       struct ulma_trace_cursor *cur, const uint32_t *by_id, uint32_t nby_id,
					       const struct ulma_record *r, const struct ulma_record *end,
					       uint64_t *lastp, uint64_t wake, const struct native_seen *native)
{
	while (r < end) {
		const struct ulma_record *next;
		if (r->kind == ULMA_REC_NATIVE_ENTER || r->kind == ULMA_REC_NATIVE_EXIT) {
			if (!native)
				break; /* the thread's first: the cache is made by the general steps */
			next = st ? native_with_stream(p, thread, st, cur, r, end, lastp, wake, native)
				  : native_without_stream(p, thread, r, end, lastp, wake, native);
		} else {
			next = st ? python_with_stream(p, thread, st, cur, by_id, nby_id, r, end, lastp, wake)
				  : python_without_stream(p, thread, by_id, nby_id, r, end, lastp, wake);
		}
		if (next == r)
			break; /* nothing taken: for the general steps */
		r = next;
	}
	return r;
}
