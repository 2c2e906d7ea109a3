/* symbols.c - placeholder until the libdw resolver lands. */
#include "symbols.h"
#include <stdio.h>
#include <stdlib.h>
struct ulma_symbols {
	int unused;
};
struct ulma_symbols *ulma_symbols_new(void)
{
	return calloc(1, sizeof(struct ulma_symbols));
}
void ulma_symbols_free(struct ulma_symbols *s)
{
	free(s);
}
int ulma_symbols_add_module(struct ulma_symbols *s, uint32_t pid, const char *path, uint64_t bias)
{
	(void)s, (void)pid, (void)path, (void)bias;
	return 0;
}
int ulma_symbols_refresh(struct ulma_symbols *s, uint32_t pid)
{
	(void)s, (void)pid;
	return 0;
}
void ulma_symbols_forget(struct ulma_symbols *s, uint32_t pid)
{
	(void)s, (void)pid;
}
void ulma_symbols_resolve(struct ulma_symbols *s, uint32_t pid, uint64_t addr, struct ulma_symbol *out)
{
	(void)s, (void)pid;
	snprintf(out->name, sizeof(out->name), "0x%llx", (unsigned long long)addr);
	out->file[0] = 0;
	out->line = 0;
	out->module[0] = 0;
	out->resolved = false;
}
