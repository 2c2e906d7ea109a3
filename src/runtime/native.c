/* native.c - the -finstrument-functions hooks: each call and return of an
 * instrumented native function becomes one record in its thread's ring.
 *
 * GCC and Clang call __cyg_profile_func_enter(fn, site) at the entry of
 * every function of code built with -finstrument-functions, and
 * __cyg_profile_func_exit at each return.  When no process traces, the
 * hook is one load and a branch.  When tracing, it reads the TSC and
 * writes 16 bytes: the function's address rides in the record's id and
 * CPU fields (shm.h), so there is nothing to look up here; the monitor
 * names the address (src/monitor/symbols.c).  Exits carry the address as
 * well, so the monitor can tell a return from an unwinding that skipped
 * frames (longjmp, C++ exceptions) and resynchronise.
 *
 * glibc defines both hooks itself, as empty functions, and libc comes
 * before this library in a process's global scope unless `ulma run`
 * preloads it: code that merely calls __cyg_profile_func_enter binds to
 * libc's.  So the hooks are exported a second time as
 * __wrap___cyg_profile_func_enter/exit, which no other library defines: a
 * module linked with -Wl,--wrap=__cyg_profile_func_enter (and _exit) and
 * -lulma_rt (ulma.get_link_args()) calls these wherever it is loaded.
 *
 * These functions must not be instrumented themselves, nor call anything
 * that is, while a write is under way: the ring and clock code are inline
 * here, and the slow path calls only libc.
 */
#include "rt.h"

#define NO_HOOK __attribute__((no_instrument_function))

/* The hooks under names of our own: got.c takes their addresses, which a
 * reference to the exported names could resolve to libc's stubs. */
void ulma_rt_hook_enter(void *fn, void *site) NO_HOOK;
void ulma_rt_hook_exit(void *fn, void *site) NO_HOOK;
ULMA_RT_API void __cyg_profile_func_enter(void *fn, void *site) NO_HOOK __attribute__((alias("ulma_rt_hook_enter")));
ULMA_RT_API void __cyg_profile_func_exit(void *fn, void *site) NO_HOOK __attribute__((alias("ulma_rt_hook_exit")));

/* Everything but the common case, out of line (and in .text.unlikely) so
 * that the common case saves no registers and sets up no stack frame:
 * a state other than ULMA_HOOKS_ON (armed, no TSC, or a stop under way),
 * no writer yet or not idle (w NULL), a full ring, an address too wide
 * for a record. */
static NO_HOOK __attribute__((noinline, cold)) void native_record_slow(uint8_t kind, uintptr_t addr,
								       struct ulma_thread_writer *w)
{
	if (!w) {
		if (ulma_rt_hooks_state == ULMA_HOOKS_ARMED && !ulma_rt_start_armed())
			return;
		if (!(w = ulma_rt_writer()))
			return;
	}
	if (ULMA_LIKELY(addr >> 48 == 0)) {
		uint64_t t = ULMA_LIKELY(ULMA_RT.use_tsc) ? ulma_clock_rdtsc() : ulma_clock_monotonic_ns();
		ulma_ring_write(&w->ring, t, (uint32_t)addr, (uint32_t)(addr >> 32), kind);
	} else {
		w->ring.lost++; /* no address space this large on the machines we know */
	}
	ulma_rt_done(w);
}

/* The hooks' body once tracing may be on (`state` not OFF).  The common
 * case is straight line: the state ON (tracing, with the TSC), the thread's
 * writer, open and idle (its busy byte set), room in the ring, rdtsc, the
 * record's two stores, busy cleared. */
static inline NO_HOOK __attribute__((always_inline)) void native_record(uint8_t state, uint8_t kind,
									 uintptr_t addr)
{
	struct ulma_thread_writer *w;
	if (ULMA_UNLIKELY(state != ULMA_HOOKS_ON) || ULMA_UNLIKELY(!(w = ulma_rt_writer_fast()))) {
		native_record_slow(kind, addr, NULL);
		return;
	}
	if (ULMA_UNLIKELY(addr >> 48 != 0) || ULMA_UNLIKELY(w->ring.head >= w->ring.limit)) {
		native_record_slow(kind, addr, w);
		return;
	}
	/* room for the record: ulma_ring_write's own check of it is the same test */
	ulma_ring_write(&w->ring, ulma_clock_rdtsc(), (uint32_t)addr, (uint32_t)(addr >> 32), kind);
	ulma_rt_done(w);
}

/* Tracing off: one load of a byte, a branch and the return. */
void ulma_rt_hook_enter(void *fn, void *site)
{
	(void)site;
	uint8_t state = ulma_rt_hooks_state;
	if (ULMA_LIKELY(state == ULMA_HOOKS_OFF))
		return;
	native_record(state, ULMA_REC_NATIVE_ENTER, (uintptr_t)fn);
}

void ulma_rt_hook_exit(void *fn, void *site)
{
	(void)site;
	uint8_t state = ulma_rt_hooks_state;
	if (ULMA_LIKELY(state == ULMA_HOOKS_OFF))
		return;
	native_record(state, ULMA_REC_NATIVE_EXIT, (uintptr_t)fn);
}

/* for modules linked with -Wl,--wrap=__cyg_profile_func_enter,--wrap=__cyg_profile_func_exit (above) */
ULMA_RT_API void __wrap___cyg_profile_func_enter(void *fn, void *site) NO_HOOK
	__attribute__((alias("__cyg_profile_func_enter")));
ULMA_RT_API void __wrap___cyg_profile_func_exit(void *fn, void *site) NO_HOOK
	__attribute__((alias("__cyg_profile_func_exit")));
