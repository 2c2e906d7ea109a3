/* got.c - point every loaded object's imports of the -finstrument-functions
 * hooks at this library's, wherever they were bound.
 *
 * glibc itself exports __cyg_profile_func_enter and _exit as empty stubs,
 * and an object's undefined symbols bind to the first definition in the
 * global lookup order: the executable, the preloaded libraries, then libc
 * and the rest.  A native program under `ulma run` preloads this library,
 * so its hooks come first.  A Python process does not (its environment
 * stays the program's own), and neither does one that `ulma.profile()`
 * traces inline or `ulma top` attaches to: there an instrumented extension
 * module would call libc's stubs.  So when tracing starts, and after the
 * interpreter loads an extension module, the imports of every object not
 * seen yet are rebound here, the way memray rebinds malloc: each PLT and
 * GOT relocation naming one of the two hooks gets our function's address
 * written into its slot (made writable for the moment where RELRO has
 * sealed it).  Code that runs while a module is being loaded (its init
 * function) comes before the rebinding and is not traced.
 *
 * With --memory the same walk rebinds the allocator functions (malloc ..
 * munmap, alloc.c) of every object but this library, the one that asked
 * (the extension), the dynamic loader and the object defining the real
 * malloc or mmap (libc, or an allocator the program brings): their calls
 * are the allocator's own.
 */
#include "rt.h"

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void ulma_rt_hook_enter(void *fn, void *site); /* native.c */
void ulma_rt_hook_exit(void *fn, void *site);

#if defined(__x86_64__)
#define JUMP_SLOT R_X86_64_JUMP_SLOT
#define GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define JUMP_SLOT R_AARCH64_JUMP_SLOT
#define GLOB_DAT R_AARCH64_GLOB_DAT
#endif

#if defined(JUMP_SLOT) && __ELF_NATIVE_CLASS == 64
#define REL_INFO_SYM ELF64_R_SYM
#define REL_INFO_TYPE ELF64_R_TYPE

/* Objects already rebound, by load bias and dynamic section (a small
 * open set; past its size objects are rescanned, which is harmless). */
#define SEEN_MAX 2048
static uintptr_t seen[SEEN_MAX];
static unsigned nseen;
static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long last_adds;
static bool allocators;         /* rebind the allocator functions too (alloc.c) */
static uintptr_t alloc_exclude; /* an address in the object whose allocations are ulma's */

static bool seen_before(uintptr_t key)
{
	for (unsigned i = 0; i < nseen; i++)
		if (seen[i] == key)
			return true;
	if (nseen < SEEN_MAX)
		seen[nseen++] = key;
	return false;
}

/* A dynamic-section pointer: glibc relocates most in place, but not all
 * (nor on every architecture), so an address below the bias is relative. */
static uintptr_t dyn_ptr(uintptr_t base, ElfW(Addr) v)
{
	return v < base ? base + v : v;
}

struct relro {
	uintptr_t start, end;
};

static void write_slot(uintptr_t slot, uintptr_t value, const struct relro *rr)
{
	void **p = (void **)slot;
	if (*p == (void *)value)
		return;
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t pg = slot & ~(uintptr_t)(page - 1);
	bool sealed = slot >= rr->start && slot < rr->end;
	if (sealed && mprotect((void *)pg, (size_t)page, PROT_READ | PROT_WRITE) != 0)
		return;
	__atomic_store_n(p, (void *)value, __ATOMIC_RELEASE);
	if (sealed)
		mprotect((void *)pg, (size_t)page, PROT_READ);
}

/* The wrapper of allocator function `name`, or 0 if it is not one rebound. */
static uintptr_t alloc_wrapper(const char *name)
{
	for (const struct ulma_rt_alloc_fn *f = ulma_rt_alloc_fns; f->name; f++)
		if (strcmp(name, f->name) == 0)
			return *f->real ? (uintptr_t)f->wrapper : 0;
	return 0;
}

static void rebind_table(uintptr_t base, const ElfW(Rela) *rel, size_t count, const ElfW(Sym) *symtab,
			 const char *strtab, const struct relro *rr, bool alloc)
{
	for (size_t i = 0; i < count; i++) {
		unsigned long type = REL_INFO_TYPE(rel[i].r_info);
		if (type != JUMP_SLOT && type != GLOB_DAT)
			continue;
		const char *name = strtab + symtab[REL_INFO_SYM(rel[i].r_info)].st_name;
		if (alloc) {
			uintptr_t wrapper = alloc_wrapper(name);
			if (wrapper) {
				write_slot(base + rel[i].r_offset, wrapper, rr);
				continue;
			}
		}
		if (strncmp(name, "__cyg_profile_func_e", 20) != 0)
			continue;
		if (strcmp(name + 20, "nter") == 0)
			write_slot(base + rel[i].r_offset, (uintptr_t)ulma_rt_hook_enter, rr);
		else if (strcmp(name + 20, "xit") == 0)
			write_slot(base + rel[i].r_offset, (uintptr_t)ulma_rt_hook_exit, rr);
	}
}

/* The dynamic loader, by its name: its few allocations are its own. */
static bool is_loader(const char *path)
{
	const char *base = strrchr(path ? path : "", '/');
	base = base ? base + 1 : path ? path : "";
	return strncmp(base, "ld-linux", 8) == 0 || strncmp(base, "ld64.so", 7) == 0 || strncmp(base, "ld-", 3) == 0;
}

static int rebind_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	uintptr_t base = info->dlpi_addr, self = (uintptr_t)&ulma_rt;
	uintptr_t real_malloc = 0, real_mmap = 0;
	for (const struct ulma_rt_alloc_fn *f = ulma_rt_alloc_fns; allocators && f->name; f++) {
		if (strcmp(f->name, "malloc") == 0)
			real_malloc = (uintptr_t)*f->real;
		else if (strcmp(f->name, "mmap") == 0)
			real_mmap = (uintptr_t)*f->real;
	}
	const ElfW(Dyn) *dyn = NULL;
	struct relro rr = {0, 0};
	bool ours = false, alloc = allocators && !is_loader(info->dlpi_name);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = base + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)lo;
		else if (ph->p_type == PT_GNU_RELRO)
			rr = (struct relro){lo, hi};
		else if (ph->p_type == PT_LOAD && self >= lo && self < hi)
			ours = true;
		if (ph->p_type == PT_LOAD && ((alloc_exclude >= lo && alloc_exclude < hi) ||
					      (real_malloc >= lo && real_malloc < hi) ||
					      (real_mmap >= lo && real_mmap < hi)))
			alloc = false;
	}
	if (!dyn || ours || seen_before(base ^ (uintptr_t)dyn))
		return 0;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Rela) *jmprel = NULL, *rela = NULL;
	size_t jmprel_size = 0, rela_size = 0;
	bool plt_is_rela = true;
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB:
			symtab = (const ElfW(Sym) *)dyn_ptr(base, d->d_un.d_ptr);
			break;
		case DT_STRTAB:
			strtab = (const char *)dyn_ptr(base, d->d_un.d_ptr);
			break;
		case DT_JMPREL:
			jmprel = (const ElfW(Rela) *)dyn_ptr(base, d->d_un.d_ptr);
			break;
		case DT_PLTRELSZ:
			jmprel_size = d->d_un.d_val;
			break;
		case DT_PLTREL:
			plt_is_rela = d->d_un.d_val == DT_RELA;
			break;
		case DT_RELA:
			rela = (const ElfW(Rela) *)dyn_ptr(base, d->d_un.d_ptr);
			break;
		case DT_RELASZ:
			rela_size = d->d_un.d_val;
			break;
		default:
			break;
		}
	}
	if (!symtab || !strtab)
		return 0;
	if (jmprel && plt_is_rela)
		rebind_table(base, jmprel, jmprel_size / sizeof(ElfW(Rela)), symtab, strtab, &rr, alloc);
	if (rela)
		rebind_table(base, rela, rela_size / sizeof(ElfW(Rela)), symtab, strtab, &rr, alloc);
	return 0;
}

/* How many objects were ever loaded, without walking them. */
static int count_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(unsigned long long *)arg = info->dlpi_adds;
	return 1;
}

void ulma_rt_bind_hooks(void)
{
	pthread_mutex_lock(&bind_lock);
	unsigned long long adds = 0;
	dl_iterate_phdr(count_adds, &adds);
	if (adds != last_adds) { /* something was loaded since the last walk */
		dl_iterate_phdr(rebind_object, NULL);
		last_adds = adds;
	}
	pthread_mutex_unlock(&bind_lock);
}

void ulma_rt_bind_allocators(const void *exclude)
{
	pthread_mutex_lock(&bind_lock);
	allocators = true;
	alloc_exclude = (uintptr_t)exclude;
	nseen = 0; /* every object again, for its allocator slots */
	last_adds = 0;
	pthread_mutex_unlock(&bind_lock);
	ulma_rt_bind_hooks();
}

#else /* another architecture: preloading (ulma run) is the only way in */

void ulma_rt_bind_hooks(void)
{
}

void ulma_rt_bind_allocators(const void *exclude)
{
	(void)exclude; /* no native allocations recorded here (docs/memory.md) */
}

#endif
