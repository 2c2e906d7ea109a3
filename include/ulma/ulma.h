/* ulma.h - ulma's C API: mark zones, instants and counters in C and C++
 * code so they appear in the same timeline as the Python and native calls
 * around them.
 *
 *     #include <ulma/ulma.h>
 *     void load(void) {
 *         ULMA_ZONE("load");          // C (GCC, Clang): ends with the scope
 *         ...
 *     }
 *     void step(void) {
 *         ULMA_TS("step");            // C++: ends with the scope
 *         ulma_counter("queue", n);
 *     }
 *
 * Link with -lulma_rt (the library `ulma.get_lib_dir()` names; `ulma run`
 * also preloads it).  In a process that is not being traced each macro
 * costs one load and one branch; with ULMA_DISABLED defined everything
 * here compiles to nothing and no library is needed.
 *
 * Names must be string literals or otherwise live for the whole process:
 * a zone's name is registered once, at the zone's first use in a session,
 * and the site remembers its id.  Zones nest with each other and with the
 * functions around them; a zone ended on another thread than it began, or
 * never ended, is closed by ulma where the stack says it must be (the
 * summary counts these).  Every function is thread-safe and async-signal
 * tolerant (an event in a signal handler that interrupts another event of
 * the same thread is dropped and counted as lost).  docs/native.md.
 */
#ifndef ULMA_ULMA_H
#define ULMA_ULMA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One zone's static description: one per ULMA_ZONE use. */
struct ulma_zone_site {
	const char *name;
	const char *file;
	uint32_t line;
	uint32_t id;         /* set by ulma at first use */
	uint32_t generation; /* session the id belongs to */
};

#ifndef ULMA_DISABLED

/* Nonzero while this process is being traced. */
extern volatile int ulma_enabled;

void ulma_zone_begin(struct ulma_zone_site *site);
void ulma_zone_end(struct ulma_zone_site *site);
/* A point in time, named. */
void ulma_instant(const char *name);
/* A named value over time (a counter track in the timeline). */
void ulma_counter(const char *name, double value);
/* Name the calling thread in reports and timelines. */
void ulma_thread_name(const char *name);

#define ULMA_CAT2_(a, b) a##b
#define ULMA_CAT_(a, b) ULMA_CAT2_(a, b)

/* Begin and end a zone by hand: ULMA_ZONE_BEGIN(parse, "parse") ... ULMA_ZONE_END(parse). */
#define ULMA_ZONE_BEGIN(var, zone_name)                                                                      \
	static struct ulma_zone_site ulma_site_##var = {zone_name, __FILE__, __LINE__, 0, 0};                \
	const int ulma_on_##var = ulma_enabled;                                                               \
	if (__builtin_expect(ulma_on_##var, 0))                                                               \
	ulma_zone_begin(&ulma_site_##var)
#define ULMA_ZONE_END(var)                                                                                   \
	do {                                                                                                 \
		if (__builtin_expect(ulma_on_##var, 0))                                                      \
			ulma_zone_end(&ulma_site_##var);                                                     \
	} while (0)

#if defined(__cplusplus)
} /* extern "C" */
namespace ulma {
/* The zone of ULMA_TS: begun by the constructor, ended by the destructor. */
class scope {
      public:
	__attribute__((no_instrument_function)) explicit scope(ulma_zone_site *site)
		: site_(site), on_(ulma_enabled)
	{
		if (__builtin_expect(on_, 0))
			ulma_zone_begin(site_);
	}
	__attribute__((no_instrument_function)) ~scope()
	{
		if (__builtin_expect(on_, 0))
			ulma_zone_end(site_);
	}
	scope(const scope &) = delete;
	scope &operator=(const scope &) = delete;

      private:
	ulma_zone_site *site_;
	int on_;
};
} // namespace ulma
extern "C" {
/* A zone from here to the end of the enclosing C++ scope (seed 002's TS). */
#define ULMA_TS(zone_name)                                                                                   \
	static ulma_zone_site ULMA_CAT_(ulma_site_, __LINE__) = {zone_name, __FILE__, __LINE__, 0, 0};       \
	ulma::scope ULMA_CAT_(ulma_scope_, __LINE__)(&ULMA_CAT_(ulma_site_, __LINE__))
#define ULMA_ZONE(zone_name) ULMA_TS(zone_name)
#else
/* (internal) the cleanup of ULMA_ZONE; never a frame of its own */
__attribute__((no_instrument_function)) static inline void ulma_zone_cleanup_(struct ulma_zone_site **site)
{
	if (*site)
		ulma_zone_end(*site);
}
/* A zone from here to the end of the enclosing C block (GCC and Clang). */
#define ULMA_ZONE(zone_name)                                                                                 \
	static struct ulma_zone_site ULMA_CAT_(ulma_site_, __LINE__) = {zone_name, __FILE__, __LINE__, 0, 0}; \
	struct ulma_zone_site *ULMA_CAT_(ulma_scope_, __LINE__) __attribute__((cleanup(ulma_zone_cleanup_))) = \
		__builtin_expect(ulma_enabled, 0) ? (ulma_zone_begin(&ULMA_CAT_(ulma_site_, __LINE__)),      \
						    &ULMA_CAT_(ulma_site_, __LINE__))                        \
						 : (struct ulma_zone_site *)0
#endif

#else /* ULMA_DISABLED: nothing at all */

#define ULMA_ZONE_BEGIN(var, zone_name) ((void)0)
#define ULMA_ZONE_END(var) ((void)0)
#define ULMA_ZONE(zone_name) ((void)0)
#define ULMA_TS(zone_name) ((void)0)
#define ulma_instant(name) ((void)0)
#define ulma_counter(name, value) ((void)0)
#define ulma_thread_name(name) ((void)0)

#endif /* ULMA_DISABLED */

#ifdef __cplusplus
}
#endif

#endif
