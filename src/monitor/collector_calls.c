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
 * of collector_apply.c's general loop, compiled once with a stream and
 * once without: inlined there, with every other kind of record's state
 * live around it, GCC kept more of the cursors on the stack (merge sort's
 * monitor 5% less CPU out of line; bench_drain's monitor thread 102.5 -> 95.3
 * instructions an event under callgrind).
 */
#include "collector_calls.h"

#include "collector_slot.h"

#include <stdbool.h>
#include <assert.h>
#include <stddef.h>
#include <string.h>

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
	  uint64_t *lastp, uint64_t wake, const struct native_seen *native, const bool stream)
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
		if (ULMA_UNLIKELY(t >= wake))
			break;
		/* an unmapped id (0 in by_id) gives UINT32_MAX: no entry's (>= nactive), no exit's (not top) */
		uint32_t idx;
		const uint64_t d = t - last;
		if (key == enter_key) {
			if (ULMA_UNLIKELY(sid >= nby_id))
				break;
			idx = by_id[sid] - 1;
		} else if (key == exit_key) {
			if (ULMA_UNLIKELY(sid >= nby_id))
				break;
			idx = by_id[sid] - 1;
			goto exit;
		} else {
			/* a native function's address (shm.h), through the thread's cache; on the stream's cpu */
			if (!native || (raw >> 16) - ULMA_REC_NATIVE_ENTER > 1)
				break; /* another kind, a flag, or a cpu change */
			uint64_t addr = sid | (uint64_t)(raw & 0xffff) << 32;
			const struct native_seen *seen = &native[(addr >> 4) & (NATIVE_CACHE - 1)];
			if (seen->addr != addr)
				break;
			idx = seen->index;
			if ((raw >> 16) == ULMA_REC_NATIVE_EXIT)
				goto exit;
		}
		{
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
			if (x < end && record_key(x) == raw + (UINT32_C(1) << 16) && x->id == sid && /* enter + 1: exit */
			    (tx = x->time > t ? x->time : t) < wake) {
				ulma_profile_cursor_leaf(&pc, idx, tx - t);
				if (stream)
					ulma_trace_cursor_word_delta(st, &tc, tx, tx - t, tc.cpu, ULMA_TAG_EXIT);
				r = x;
				t = tx;
			} else {
				ulma_profile_cursor_push(&pc, idx, t);
			}
			last = t;
			continue;
		}
	exit:
		if (ULMA_UNLIKELY(pc.depth == 0 || pc.top != idx))
			break; /* an exit to resynchronise */
		ulma_profile_cursor_charge_delta(&pc, d);
		ulma_profile_cursor_pop(&pc, t);
		if (stream)
			ulma_trace_cursor_word_delta(st, &tc, t, d, tc.cpu, ULMA_TAG_EXIT);
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

/* Compiled twice, with and without a stream, each on its own: the loop's
 * state then has the registers to itself.  (Twice more, without native
 * records for a thread that never wrote one, was no better: 241 against
 * 237 M instructions on bench_drain under callgrind, GCC's allocation of
 * the registers moving by a few per cent with any change to the loop.) */
static __attribute__((noinline)) const struct ulma_record *
calls_with_stream(struct ulma_profile *p, uint32_t thread, struct ulma_trace_stream *st, struct ulma_trace_cursor *cur,
		  const uint32_t *by_id, uint32_t nby_id, const struct ulma_record *r, const struct ulma_record *end,
		  uint64_t *lastp, uint64_t wake, const struct native_seen *native)
{
	return calls_run(p, thread, st, cur, by_id, nby_id, r, end, lastp, wake, native, true);
}

static __attribute__((noinline)) const struct ulma_record *
calls_without_stream(struct ulma_profile *p, uint32_t thread, const uint32_t *by_id, uint32_t nby_id,
		     const struct ulma_record *r, const struct ulma_record *end, uint64_t *lastp, uint64_t wake,
		     const struct native_seen *native)
{
	return calls_run(p, thread, NULL, NULL, by_id, nby_id, r, end, lastp, wake, native, false);
}

const struct ulma_record *ulma_collector_calls(struct ulma_profile *p, uint32_t thread, struct ulma_trace_stream *st,
					       struct ulma_trace_cursor *cur, const uint32_t *by_id, uint32_t nby_id,
					       const struct ulma_record *r, const struct ulma_record *end,
					       uint64_t *lastp, uint64_t wake, const struct native_seen *native)
{
	return st ? calls_with_stream(p, thread, st, cur, by_id, nby_id, r, end, lastp, wake, native)
		  : calls_without_stream(p, thread, by_id, nby_id, r, end, lastp, wake, native);
}
