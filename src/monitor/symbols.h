/* symbols.h - placeholder until the libdw resolver lands: names native
 * addresses 0x<addr>. */
#ifndef ULMA_SYMBOLS_H
#define ULMA_SYMBOLS_H
#include <stdbool.h>
#include <stdint.h>
struct ulma_symbols;
struct ulma_symbols *ulma_symbols_new(void);
void ulma_symbols_free(struct ulma_symbols *s);
int ulma_symbols_add_module(struct ulma_symbols *s, uint32_t pid, const char *path, uint64_t bias);
int ulma_symbols_refresh(struct ulma_symbols *s, uint32_t pid);
void ulma_symbols_forget(struct ulma_symbols *s, uint32_t pid);
struct ulma_symbol {
	char name[512];
	char file[1024];
	uint32_t line;
	char module[256];
	bool resolved;
};
void ulma_symbols_resolve(struct ulma_symbols *s, uint32_t pid, uint64_t addr, struct ulma_symbol *out);
#endif
