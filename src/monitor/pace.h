/* pace.h - how long the monitor's loop sleeps between polls of the rings
 * (`ulma run`, `ulma attach` and `ulma.profile()`'s monitor alike).
 *
 * Each poll costs the monitor more than its records: its working set comes
 * back to a core that slept, and every ring, the switch records and the
 * definitions are looked at once a poll.  So the loop polls as seldom as
 * the rings allow.  While records flow, it naps until the fullest ring
 * will have filled a quarter of itself at its rate of the last period,
 * counted from the poll's start (0.25 to 6 ms after its end): three
 * quarters stay free for a burst (a ring of 256 Ki records lasts 3 ms at
 * native code's 80 M records a second).  A poll that found a ring half full
 * or more is followed by the next at once (the monitor is behind: a
 * lossless writer may be waiting for room), and a nap is at most twice the
 * one before, so that a rate measured while a writer waited, too low, does
 * not set a long one.  While nothing flows it backs off, 1 to 4 ms.
 *
 * Measured (docs/design.md): `fib` (3.12, 10^8 events) took the monitor
 * 1.10 s at a fixed 2 ms nap, 0.95 s at 4 ms, no less at 10 or 16 ms;
 * native code's calls traced lossless took 51 ns an event with the rate's
 * nap alone, 31 ns with both rules above, 34 ns with the fixed naps of
 * before (2 ms, 0.5 ms after a poll of 64 Ki records).
 *
 * Pure arithmetic on the caller's state: no errors, no allocation.
 */
#ifndef ULMA_PACE_H
#define ULMA_PACE_H

#include <stdint.h>

#define ULMA_PACE_LEAST_NS 250000L   /* the shortest nap while records flow */
#define ULMA_PACE_MOST_NS 6000000L   /* the longest */
#define ULMA_PACE_ERROR_NS 10000000L /* after a poll that failed */

/* The loop's state between polls; start it zeroed.  Owned by the loop. */
struct ulma_pace {
	uint64_t last_ns; /* monotonic time the previous poll began, 0 before the first */
	long idle;        /* the backoff of polls that found nothing, 0 while records flow */
	long nap;         /* the last nap while records flowed (0 after a poll that found the monitor behind) */
};

/* The nap in ns after a poll that began at began_ns, ended at ended_ns
 * (monotonic) and took n records (n < 0: it failed), when the fullest ring
 * held `peak` records as it began, out of `ring_records` (the rings'
 * capacity). */
long ulma_pace_nap_ns(struct ulma_pace *pace, long n, uint64_t peak, uint64_t ring_records, uint64_t began_ns,
		      uint64_t ended_ns);

#endif
