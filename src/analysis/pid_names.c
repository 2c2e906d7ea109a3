/* pid_names.c - what to call each process of a trace (see pid_names.h). */
#include "pid_names.h"

#include <errno.h>
#include <stdlib.h>

#include "../core/array.h"

int ulma_pid_names_set(struct ulma_pid_names *t, uint32_t pid, const char *name, size_t len)
{
	char *copy = ulma_strndup(name, len);
	if (!copy)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->count; i++) {
		if (t->pid[i] == pid) {
			free(t->name[i]);
			t->name[i] = copy;
			return 0;
		}
	}
	uint32_t pcap = t->cap;
	if (ulma_array_grow((void **)&t->pid, &pcap, t->count, sizeof(*t->pid)) ||
	    ulma_array_grow((void **)&t->name, &t->cap, t->count, sizeof(*t->name))) {
		free(copy);
		return -ENOMEM;
	}
	t->pid[t->count] = pid;
	t->name[t->count++] = copy;
	return 0;
}

const char *ulma_pid_names_get(const struct ulma_pid_names *t, uint32_t pid)
{
	for (uint32_t i = 0; i < t->count; i++)
		if (t->pid[i] == pid)
			return t->name[i];
	return NULL;
}

void ulma_pid_names_free(struct ulma_pid_names *t)
{
	for (uint32_t i = 0; i < t->count; i++)
		free(t->name[i]);
	free(t->pid);
	free(t->name);
	*t = (struct ulma_pid_names){0};
}
