/* pace.c - the monitor loop's naps between polls (pace.h says why). */
#include "pace.h"

long ulma_pace_nap_ns(struct ulma_pace *pace, long n, uint64_t peak, uint64_t ring_records, uint64_t now_ns)
{
	uint64_t since = pace->last_ns && now_ns > pace->last_ns ? now_ns - pace->last_ns : 0;
	pace->last_ns = now_ns;
	if (n < 0)
		return ULMA_PACE_ERROR_NS;
	if (n > 0 && peak > 0) {
		pace->idle = 0;
		if (!since) /* the first poll: no rate yet */
			return 2000000L;
		/* the period in which the fullest ring fills a quarter at this rate */
		double nap = (double)since * (double)(ring_records / 4) / (double)peak;
		return nap < ULMA_PACE_LEAST_NS ? ULMA_PACE_LEAST_NS
		       : nap > ULMA_PACE_MOST_NS ? ULMA_PACE_MOST_NS
						 : (long)nap;
	}
	pace->idle = pace->idle ? (pace->idle < 2000000L ? pace->idle * 2 : 4000000L) : 1000000L;
	return pace->idle;
}
