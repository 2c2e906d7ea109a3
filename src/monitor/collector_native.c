/* collector_native.c - native functions in the collector: each (process,
 * address) that -finstrument-functions records carry becomes a function of
 * the table, named by the symbol resolver (symbols.h) the first time it is
 * seen, and defined like any other (kind ULMA_DEF_NATIVE), so a report
 * never needs the binaries again.
 *
 * The module definitions processes write (ULMA_DEF_MODULE: path and load
 * bias) are handed to the resolver as they are scanned, so an address is
 * named even when its process has exited before its records were drained.
 * Two addresses that resolve to the same name, file and line (the same
 * function in a forked child, or in two runs of one program) are one row.
 */
#include "collector_native.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector_defs.h"
#include "symbols.h"

int ulma_collector_native_init(struct ulma_collector *c)
{
	c->symbols = ulma_symbols_new();
	return c->symbols ? 0 : -ENOMEM;
}

void ulma_collector_native_free(struct ulma_collector *c)
{
	ulma_symbols_free(c->symbols);
	c->symbols = NULL;
	ulma_idmap_free(&c->native_index);
	ulma_idmap_free(&c->proc_number);
}

int ulma_collector_take_module(struct ulma_collector *c, const struct ulma_def_view *d)
{
	char path[4096], bias_text[17];
	if (!c->symbols || d->file_len != 16 || d->name_len == 0 || d->name_len >= sizeof(path))
		return 0; /* malformed: the resolver falls back to the live maps */
	memcpy(path, d->name, d->name_len);
	path[d->name_len] = '\0';
	memcpy(bias_text, d->file, 16);
	bias_text[16] = '\0';
	char *end;
	unsigned long long bias = strtoull(bias_text, &end, 16);
	if (*end)
		return 0;
	int err = ulma_symbols_add_module(c->symbols, d->line, path, bias);
	return err == -ENOMEM ? err : 0;
}

/* A small number per process, for the lookup key (addresses are < 2^48). */
static uint64_t proc_key(struct ulma_collector *c, uint32_t pid)
{
	uint32_t n;
	if (!ulma_idmap_get(&c->proc_number, pid, &n)) {
		n = c->nprocs < 0xffff ? c->nprocs++ : 0xffff;
		ulma_idmap_put(&c->proc_number, pid, n);
	}
	return (uint64_t)n << 48;
}

uint32_t ulma_collector_native(struct ulma_collector *c, uint32_t pid, uint64_t addr)
{
	uint64_t key = proc_key(c, pid) | addr;
	uint32_t index;
	if (ULMA_LIKELY(ulma_idmap_get(&c->native_index, key, &index)))
		return index;
	ulma_collector_scan_defs(c, false); /* the modules the process reported meanwhile */
	struct ulma_symbol *sym = malloc(sizeof(*sym));
	if (!sym) {
		c->error = c->error ? c->error : -ENOMEM;
		return UINT32_MAX;
	}
	if (c->symbols) {
		ulma_symbols_resolve(c->symbols, pid, addr, sym);
	} else {
		snprintf(sym->name, sizeof(sym->name), "0x%llx", (unsigned long long)addr);
		sym->file[0] = '\0';
		sym->line = 0;
	}
	const char *file = sym->file[0] ? sym->file : "~";
	index = ulma_collector_define(c, ULMA_DEF_NATIVE, sym->name, strlen(sym->name), file, strlen(file),
				      sym->file[0] ? sym->line : 0);
	free(sym);
	if (index != UINT32_MAX && ulma_idmap_put(&c->native_index, key, index) < 0) {
		c->error = c->error ? c->error : -ENOMEM;
		return UINT32_MAX;
	}
	return index;
}
