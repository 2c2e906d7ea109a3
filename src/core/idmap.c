/* idmap.c - growth and insertion for the u64 -> u32 hash map (see idmap.h). */
#include "idmap.h"

#include <errno.h>
#include <stdlib.h>

static int grow(struct ulma_idmap *m)
{
	size_t cap = m->keys ? (m->mask + 1) * 2 : 64;
	uint64_t *keys = calloc(cap, sizeof(*keys));
	uint32_t *values = calloc(cap, sizeof(*values));
	if (!keys || !values) {
		free(keys);
		free(values);
		return -ENOMEM;
	}
	if (m->keys) {
		for (size_t i = 0; i <= m->mask; i++) {
			if (!m->keys[i])
				continue;
			size_t j = ulma_idmap_hash(m->keys[i]) & (cap - 1);
			while (keys[j])
				j = (j + 1) & (cap - 1);
			keys[j] = m->keys[i];
			values[j] = m->values[i];
		}
	}
	free(m->keys);
	free(m->values);
	m->keys = keys;
	m->values = values;
	m->mask = cap - 1;
	return 0;
}

int ulma_idmap_put(struct ulma_idmap *m, uint64_t key, uint32_t value)
{
	if (key == 0)
		return -EINVAL;
	if (!m->keys || (m->count + 1) * 2 > m->mask + 1) {
		int err = grow(m);
		if (err)
			return err;
	}
	size_t i = ulma_idmap_hash(key) & m->mask;
	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & m->mask;
	if (!m->keys[i])
		m->count++;
	m->keys[i] = key;
	m->values[i] = value;
	return 0;
}

void ulma_idmap_free(struct ulma_idmap *m)
{
	free(m->keys);
	free(m->values);
	m->keys = NULL;
	m->values = NULL;
	m->mask = 0;
	m->count = 0;
}
