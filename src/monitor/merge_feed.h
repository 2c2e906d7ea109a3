/* merge_feed.h - the ranks' traces of `ulma merge` read side by side for
 * its logical-clock replay (merge_order.h): one thread per rank runs the
 * (push) trace reader over its trace and hands the rank's MPI events, on
 * rank 0's clock, through a queue of MERGE_FEED_CAP events to the one
 * thread that replays.  A reader that gets ahead waits, so what is held is
 * the ranks' queues and readers, whatever the traces' length.
 * Internal to the `ulma` program.
 */
#ifndef ULMA_MERGE_FEED_H
#define ULMA_MERGE_FEED_H

#include <stdint.h>

#include "merge.h"

#define MERGE_FEED_CAP 1024

struct merge_feed;

/* Start a reader per rank of ranks[0..n) (their clocks known; the ranks
 * must not change until merge_feed_stop).  Returns 0 or -errno (-ENOMEM,
 * or a thread that could not start); *out is NULL then. */
int merge_feed_start(struct merge_rank *ranks, uint32_t n, struct merge_feed **out);

/* Rank index ri's next MPI event, in its trace's order.  The replaying
 * thread only.  Returns 1 and *out, 0 after its last, or -EPROTO (its
 * trace could not be read again as it was the first time). */
int merge_feed_next(struct merge_feed *f, uint32_t ri, struct ulma_merge_mpi *out);

/* Stop the readers (where they are) and free the feed.  Accepts NULL. */
void merge_feed_stop(struct merge_feed *f);

#endif
