/* pace.c - the monitor loop's naps between polls (pace.h says why). */
#include "pace.h"

long ulma_pace_nap_ns(struct ulma_pace *pace, long n, uint64_t peak, uint64_t ring_records, uint64_t began_ns,
		      uint64_t ended_ns)
{
	/* the records this poll found were written since the previous one began */
	uint64_t since = pace->last_ns && began_ns > pace->last_ns ? began_ns - pace->last_ns : 0;
	uint64_t draining = ended_ns > began_ns ? ended_ns - began_ns : 0;
	pace->last_ns = began_ns;
	if (n < 0)
		return ULMA_PACE_ERROR_NS;
	if (n > 0 && peak > 0) {
		pace->idle = 0;
		if (peak >= ring_records / 2) /* behind: a writer may be waiting for room */
			return pace->nap = 0;
		if (!since) /* the first poll: no rate yet */
			return pace->nap = 2000000L;
		/* the period in which the fullest ring fills a quarter at this rate,
		 * less the poll's own time, during which it went on filling */
		double nap = (double)since * (double)(ring_records / 4) / (double)peak - (double)draining;
		/* no more than twice the last: a writer that waited for room wrote
		 * less than it would have, so a rate measured just after the monitor
		 * was behind is too low */
		double most = pace->nap ? 2.0 * (double)pace->nap : (double)ULMA_PACE_LEAST_NS;
		if (nap > most)
			nap = most;
		pace->nap = nap < ULMA_PACE_LEAST_NS ? ULMA_PACE_LEAST_NS
			    : nap > ULMA_PACE_MOST_NS ? ULMA_PACE_MOST_NS
						      : (long)nap;
		return pace->nap;
	}
	pace->idle = pace->idle ? (pace->idle < 2000000L ? pace->idle * 2 : 4000000L) : 1000000L;
	return pace->idle;
}
