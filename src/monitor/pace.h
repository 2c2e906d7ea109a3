/* pace.h - how long the monitor's loop sleeps between polls of the rings
 * (`ulma run`, `ulma attach` and `ulma.profile()`'s monitor alike).
 *
 * Each poll costs the monitor more than its records: its working set comes
 * back to a core that slept, and every ring, the switch records and the
 * definitions are looked at once a poll.  So the loop polls as seldom as
 * the rings allow: while records flow, when the fullest ring will have
 * filled a quarter of itself at its rate of the last period (0.25 to 6 ms);
 * three quarters stay free for a burst (a ring of 256 Ki records lasts 3 ms
 * at native code's 80 M records a second).  Measured on `fib` (3.12, 10^8
 * events): the monitor 1.10 s at a fixed 2 ms nap, 0.95 s at 4 ms, no less
 * at 10 or 16 ms.  While nothing flows it backs off, 1 to 4 ms.
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
	uint64_t last_ns; /* monotonic time the previous poll ended, 0 before the first */
	long idle;        /* the backoff of polls that found nothing, 0 while records flow */
};

/* The nap in ns after a poll that ended at now_ns and took n records
 * (n < 0: it failed), when the fullest ring held `peak` records as it
 * began, out of `ring_records` (the rings' capacity). */
long ulma_pace_nap_ns(struct ulma_pace *pace, long n, uint64_t peak, uint64_t ring_records, uint64_t now_ns);

#endif
