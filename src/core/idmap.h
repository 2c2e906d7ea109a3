/* idmap.h - open-addressing hash map from a non-zero u64 key to a u32 value.
 * Used to map session ids, thread serials and C method pointers to dense
 * indices.  Single-threaded; the owner serialises access.  Lookups are
 * inline; growth is out of line and may fail with -ENOMEM. */
#ifndef ULMA_IDMAP_H
#define ULMA_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ulma_idmap {
	uint64_t *keys; /* 0 marks an empty bucket */
	uint32_t *values;
	size_t mask;    /* capacity - 1, or 0 when empty */
	size_t count;
};

static inline size_t ulma_idmap_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= UINT64_C(0xff51afd7ed558ccd);
	k ^= k >> 33;
	return (size_t)k;
}

/* Find key; true and *value on a hit. key must be non-zero. */
static inline bool ulma_idmap_get(const struct ulma_idmap *m, uint64_t key, uint32_t *value)
{
	if (!m->keys)
		return false;
	for (size_t i = ulma_idmap_hash(key) & m->mask;; i = (i + 1) & m->mask) {
		if (m->keys[i] == key) {
			*value = m->values[i];
			return true;
		}
		if (m->keys[i] == 0)
			return false;
	}
}

/* Insert or overwrite.  Returns 0, -EINVAL for key 0, or -ENOMEM. */
int ulma_idmap_put(struct ulma_idmap *m, uint64_t key, uint32_t value);

/* Free storage; the map may be reused afterwards.  Accepts a zeroed map. */
void ulma_idmap_free(struct ulma_idmap *m);

#endif
