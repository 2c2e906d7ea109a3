/* symbols.h - naming the native functions of traced processes.
 *
 * A traced process writes the entry addresses of native functions into its
 * rings (-finstrument-functions hooks); the monitor turns each (pid,
 * address) into a function name, and a source file and line where debug
 * information says.  The process may have exited by then, so the modules
 * it reported itself (path and load bias, from dl_iterate_phdr) are the
 * primary map; while it is alive, /proc/PID/maps fills the gaps.
 *
 * Each module is recorded with its address range, read from the ELF
 * program headers when it is reported (one open and two reads; nothing is
 * kept open).  The ELF file is handed to elfutils' libdwfl, one Dwfl per
 * process, only when an address inside it is first resolved: each module
 * libdwfl knows keeps a file descriptor and a mapping until the process is
 * forgotten, so a process with hundreds of libraries costs only as many
 * descriptors as it has libraries with resolved addresses.  libdwfl finds
 * symbols in .symtab, else .dynsym, and separate debug information
 * through .gnu_debuglink (next to the file, in its .debug/ directory or
 * under /usr/lib/debug) or the build ID (/usr/lib/debug/.build-id).  It
 * uses debuginfod only if DEBUGINFOD_URLS is set in the monitor's
 * environment, which can make a first resolve slow.
 *
 * Files are opened by path when they are first needed: a library replaced
 * on disk after the process loaded it gives wrong names.  Mappings of
 * deleted files and relative paths (a dlopen("./x.so")) are not opened;
 * /proc/PID/maps gives the absolute path of the latter while the process
 * lives.  Built without libdw (ULMA_HAVE_LIBDW undefined), no names are
 * found: every address in a known module reads "libname+0xoffset".
 *
 * Not thread-safe: one thread (the monitor's loop) owns a ulma_symbols.
 */
#ifndef ULMA_SYMBOLS_H
#define ULMA_SYMBOLS_H

#include <stdbool.h>
#include <stdint.h>

/* After a miss that a refresh from /proc/PID/maps did not cure, addresses
 * in the same unmapped gap or non-ELF mapping do not read the maps again
 * for this long: a JIT region or a stray address costs one read per 10 ms,
 * not one per address. */
#define ULMA_SYMBOLS_REFRESH_NS (10 * 1000 * 1000)

struct ulma_symbols; /* owned by the caller */

/* A resolver with no processes.  NULL when out of memory. */
struct ulma_symbols *ulma_symbols_new(void);

/* Free s, its processes and everything libdwfl holds for them.  Accepts
 * NULL. */
void ulma_symbols_free(struct ulma_symbols *s);

/* A module the process `pid` reported: ELF file `path` loaded with load
 * bias `bias` (dlpi_addr of dl_iterate_phdr; 0 for a non-PIE executable).
 * Path "" means the main executable: it is read through /proc/PID/exe if
 * the process is alive; if it is gone, nothing is recorded and the result
 * is -ESRCH.  A path that cannot be read as ELF is remembered as such:
 * -ENOENT, -EACCES, -EISDIR..., -ENOEXEC (not ELF, another byte order,
 * truncated program headers).  A duplicate report (same path and bias) is
 * a cheap no-op that returns what the first one did.  -ENOMEM when out of
 * memory.  The path is copied. */
int ulma_symbols_add_module(struct ulma_symbols *s, uint32_t pid, const char *path, uint64_t bias);

/* Read /proc/PID/maps now (the process is alive) and report every
 * file-backed ELF mapping not known yet, with the bias that its mapping of
 * the first loadable segment implies.  Returns 0, -ESRCH if the process is
 * gone (or the pid now belongs to another process: its start time
 * changed), or -errno.  After -ESRCH the pid is never read again. */
int ulma_symbols_refresh(struct ulma_symbols *s, uint32_t pid);

/* Forget a process (it exited and its addresses are resolved): its modules
 * and its Dwfl, with the descriptors libdwfl held.  Unknown pids are
 * ignored. */
void ulma_symbols_forget(struct ulma_symbols *s, uint32_t pid);

struct ulma_symbol {
	char name[512];   /* function name, C++ demangled; else "libname+0xoffset"; else "0x<addr>" */
	char file[1024];  /* source file where debug info says (as it says, usually absolute), else "" */
	uint32_t line;    /* its line, else 0 */
	char module[256]; /* the module's file name (basename), else "" */
	bool resolved;    /* true when name is a symbol, not libname+0xoffset or 0x<addr> */
};

/* Resolve one address of process pid.  Never fails: always fills out
 * (every string NUL-terminated, cut to its array).
 *
 * The name is that of the symbol containing addr (its offset in the symbol
 * is not shown).  "libname+0xoffset" gives offset = addr - the module's
 * load bias, which is the address in the file's own terms, as objdump and
 * `addr2line -e libname 0xoffset` want it.  File and line are where the
 * function holding addr is defined: its DW_AT_decl_file and
 * DW_AT_decl_line, the line that names it (as Python's def line), which
 * neither the compiler nor -O moves.  The line table's row at an entry
 * address is not that: the `{` at -O0, the first statement or the line of
 * a function inlined there at -O2.  Where no function DIE covers addr, the
 * line table's row is given (addr2line's answer).
 *
 * If addr is outside every known module and the process is alive, reads
 * /proc/PID/maps once (ulma_symbols_refresh) before giving up, unless a
 * read within ULMA_SYMBOLS_REFRESH_NS already found nothing there. */
void ulma_symbols_resolve(struct ulma_symbols *s, uint32_t pid, uint64_t addr, struct ulma_symbol *out);

/* How many times /proc/PID/maps was read, over every process (tests,
 * diagnostics). */
uint64_t ulma_symbols_maps_reads(const struct ulma_symbols *s);

#endif
