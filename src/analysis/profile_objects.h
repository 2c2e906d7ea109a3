/* profile_objects.h - Python objects created and destroyed per type, and
 * per function and type (`--memory` on Python 3.13+, docs/memory.md,
 * "Objects").
 *
 * Part of the profile's memory half: the monitor live and `ulma report`
 * call ulma_profile_object between the thread's enters and exits, so an
 * object belongs to the function on top of its thread when it came.  A
 * type is the dense function index of its ULMA_DEF_TYPE definition.
 * Per type: created, destroyed (wherever).  Per (function, type): the
 * objects created, and those destroyed, while the function was on top
 * (a container's destructor destroys what it held, so a function's
 * destroyed count says where objects die, not which of its own did).
 * Objects alive before recording started and destroyed after count as
 * destroyed with no creation: created - destroyed is what the run added.
 *
 * Single-threaded, like the profile.  Functions returning int give 0 or
 * -ENOMEM.
 */
#ifndef ULMA_PROFILE_OBJECTS_H
#define ULMA_PROFILE_OBJECTS_H

#include <stdbool.h>
#include <stdint.h>

#include "profile.h"

#define ULMA_OBJ_NO_FUNC UINT32_MAX /* an object created or destroyed with no frame open */

struct ulma_obj_count {
	uint32_t func; /* ULMA_OBJ_NO_FUNC in a per-type total */
	uint32_t type;
	uint64_t created;
	uint64_t destroyed;
};

struct ulma_profile_objects {
	struct ulma_obj_count *rows; /* per (function, type), in order of first use */
	uint32_t nrows, cap_rows;
	uint32_t *index; /* hash of (func, type) -> row + 1; 0 empty */
	uint32_t index_mask;
	struct ulma_obj_count *types; /* per type index (func = ULMA_OBJ_NO_FUNC) */
	uint32_t ntypes;
	uint64_t created, destroyed; /* every object */
};

void ulma_profile_objects_free(struct ulma_profile_objects *o);

/* An object of type `type` created (or destroyed) by thread `thread` now,
 * by its top frame.  Needs memory on in p (profile_memory.h). */
int ulma_profile_object(struct ulma_profile *p, uint32_t thread, uint32_t type, bool created);

/* The per-type totals with objects, by created - destroyed descending
 * (then created, then type): *out owned by the caller, *n of them. */
int ulma_profile_objects_by_type(const struct ulma_profile *p, struct ulma_obj_count **out, uint32_t *n);

/* Every (function, type) row, by function, then created descending:
 * *out owned by the caller, *n of them. */
int ulma_profile_objects_by_func(const struct ulma_profile *p, struct ulma_obj_count **out, uint32_t *n);

/* Of rows sorted by ulma_profile_objects_by_func, function f's: the index
 * of its first row, and how many (*count, 0 if none). */
uint32_t ulma_obj_rows_of(const struct ulma_obj_count *rows, uint32_t n, uint32_t f, uint32_t *count);

#endif
