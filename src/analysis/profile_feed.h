/* profile_feed.h - a trace's events into a profile (profile.h).
 *
 * The one translation from what the trace reader delivers (threads,
 * schedstat samples, events with OFF intervals and LINE events, memory
 * records, the END facts) to the profile's calls, so that `ulma report` and the exports'
 * walk (export_walk.h, for the HTML report's line view) aggregate a trace
 * the same way and print the same numbers.  With schedstat samples each
 * event first asks the thread's schedline for the time off the CPU before
 * it; with switch records that time arrives as OFF events.
 *
 * The feed owns its schedlines, not the profile.  Single-threaded.
 * Functions returning int give 0 or -ENOMEM.
 */
#ifndef ULMA_PROFILE_FEED_H
#define ULMA_PROFILE_FEED_H

#include <stdint.h>

#include "../core/trace_reader.h"
#include "profile.h"
#include "schedline.h"

struct ulma_profile_feed {
	struct ulma_profile *profile; /* fed; not owned */
	struct ulma_schedline *sched; /* per thread: its schedstat samples; owned */
	uint32_t nsched;
	double ns_per_tick; /* from META: what schedline_off converts wall time with */
};

/* Prepare a feed of profile p (initialised by the caller). */
void ulma_profile_feed_init(struct ulma_profile_feed *f, struct ulma_profile *p);

/* Frees the schedlines, not the profile.  Accepts a zeroed feed. */
void ulma_profile_feed_free(struct ulma_profile_feed *f);

/* The trace's clock: call with META, before any event. */
void ulma_profile_feed_meta(struct ulma_profile_feed *f, const struct ulma_trace_meta *m);

/* A thread (reader's dense index). */
int ulma_profile_feed_thread(struct ulma_profile_feed *f, const struct ulma_trace_thread *t);

/* A schedstat sample of a thread added before. */
int ulma_profile_feed_sched(struct ulma_profile_feed *f, uint32_t thread, const struct ulma_trace_sched *s);

/* The schedline of a thread added before (for its CPU lane, report.c). */
static inline struct ulma_schedline *ulma_profile_feed_schedline(struct ulma_profile_feed *f, uint32_t thread)
{
	return &f->sched[thread];
}

/* One event of a thread added before (events of a thread in order). */
int ulma_profile_feed_event(struct ulma_profile_feed *f, uint32_t thread, const struct ulma_trace_event *e);

/* The same for n events of the thread, as the reader batches them: the
 * same result as feeding each, with the frame events' path kept in one
 * loop.  0 or -ENOMEM. */
int ulma_profile_feed_events(struct ulma_profile_feed *f, uint32_t thread, const struct ulma_trace_event *ev, size_t n);

/* An allocation or a free (--memory) of a thread added before, in order
 * with its events; nothing unless memory is on in the profile
 * (profile_memory.h: the caller enables it when META says so). */
int ulma_profile_feed_memory(struct ulma_profile_feed *f, const struct ulma_trace_memory *m);
/* An object created or destroyed (--memory on 3.13+), likewise. */
int ulma_profile_feed_object(struct ulma_profile_feed *f, const struct ulma_trace_object *o);

/* The end of the trace: END's facts (NULL if the trace was cut short)
 * and the time to close open frames at (END's, else the last event's). */
void ulma_profile_feed_finish(struct ulma_profile_feed *f, const struct ulma_trace_end *end, uint64_t last_ticks);

#endif
