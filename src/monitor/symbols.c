/* symbols.c - native addresses of traced processes to names, through
 * libdwfl (see symbols.h).  Each process keeps its own list of modules
 * (path, bias, mapped range); libdwfl sees a module only once an address
 * inside it is resolved. */
#include "symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef ULMA_HAVE_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#endif

#include "../core/clock.h"

#define MAX_PHDRS 256   /* more program headers than this: not a file we map */
#define MISS_REGIONS 8  /* regions a maps read found nothing in, per process */
#define DELETED " (deleted)"

struct module {
	char *path;       /* as reported, or the target of /proc/PID/exe */
	const char *base; /* its file name, inside path */
	uint64_t bias;
	uint64_t lo, hi;  /* mapped addresses [lo, hi); empty when err */
	int err;          /* 0, or -errno of reading its ELF headers */
	bool is_exe;      /* reported as "" */
#ifdef ULMA_HAVE_LIBDW
	Dwfl_Module *dw;  /* once handed to libdwfl, which owns it */
	bool dw_failed;   /* libdwfl refused the file: libname+0xoffset */
#endif
};

struct miss_region {
	uint64_t lo, hi; /* [lo, hi): an unmapped gap or a mapping that is not ELF */
	uint64_t at_ns;  /* when a maps read found nothing there */
};

struct proc {
	uint32_t pid;
	bool gone;           /* exited, or the pid is another process's: no more /proc reads */
	uint64_t start_time; /* /proc/PID/stat's starttime when first seen */
	struct module *mods;
	uint32_t nmods, capmods;
	struct miss_region miss[MISS_REGIONS];
	uint32_t next_miss;
#ifdef ULMA_HAVE_LIBDW
	Dwfl *dwfl; /* NULL until the first module is handed to libdwfl */
#endif
};

typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

struct ulma_symbols {
	struct proc **procs;
	uint32_t nprocs, capprocs;
	bool demangle_tried;
	void *libstdcxx;       /* dlopen handle, RTLD_NODELETE */
	demangle_fn demangle;  /* __cxa_demangle, NULL if unavailable */
	uint64_t maps_reads;
};

/* The address range of an ELF file's loadable segments, in its own terms. */
struct elf_span {
	uint64_t lo, hi;   /* page-aligned lowest p_vaddr, highest p_vaddr + p_memsz */
	uint64_t off0;     /* the first PT_LOAD's page-aligned file offset ... */
	uint64_t vaddr0;   /* ... and address: a mapping of off0 at `start` means bias = start - vaddr0 */
};

/* ---- ELF program headers (no libdw: the fallback needs them too) ---- */

static int read_full(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -ENOEXEC;
}

static int add_load(struct elf_span *sp, bool *seen, uint64_t vaddr, uint64_t memsz, uint64_t offset, uint64_t page)
{
	uint64_t end = vaddr + memsz;
	if (end < vaddr)
		return -ENOEXEC;
	uint64_t lo = vaddr & ~(page - 1);
	if (!*seen) {
		sp->lo = lo;
		sp->hi = end;
		sp->off0 = offset & ~(page - 1);
		sp->vaddr0 = lo;
		*seen = true;
		return 0;
	}
	if (lo < sp->lo)
		sp->lo = lo;
	if (end > sp->hi)
		sp->hi = end;
	return 0;
}

/* The span of the ELF file open at fd: 0, or -ENOEXEC when it is not an
 * executable or shared object of this machine's byte order, or its program
 * headers are cut or absurd; -errno when it cannot be read. */
static int elf_read_span(int fd, struct elf_span *sp)
{
	union {
		unsigned char ident[EI_NIDENT];
		Elf32_Ehdr e32;
		Elf64_Ehdr e64;
	} h;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	memset(&h, 0, sizeof(h));
	ssize_t n = pread(fd, &h, sizeof(h), 0);
	if (n < 0)
		return -errno;
	if ((size_t)n < sizeof(h.e32) || memcmp(h.ident, ELFMAG, SELFMAG) != 0)
		return -ENOEXEC;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (h.ident[EI_DATA] != ELFDATA2LSB)
		return -ENOEXEC;
#else
	if (h.ident[EI_DATA] != ELFDATA2MSB)
		return -ENOEXEC;
#endif
	bool is64 = h.ident[EI_CLASS] == ELFCLASS64;
	if (!is64 && h.ident[EI_CLASS] != ELFCLASS32)
		return -ENOEXEC;
	if (is64 && (size_t)n < sizeof(h.e64))
		return -ENOEXEC;
	uint16_t type = is64 ? h.e64.e_type : h.e32.e_type;
	uint64_t phoff = is64 ? h.e64.e_phoff : h.e32.e_phoff;
	size_t phnum = is64 ? h.e64.e_phnum : h.e32.e_phnum;
	size_t entsize = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	if ((type != ET_EXEC && type != ET_DYN) || phnum == 0 || phnum > MAX_PHDRS ||
	    (is64 ? h.e64.e_phentsize : h.e32.e_phentsize) != entsize)
		return -ENOEXEC;
	void *ph = malloc(phnum * entsize);
	if (!ph)
		return -ENOMEM;
	int err = read_full(fd, ph, phnum * entsize, phoff);
	bool seen = false;
	for (size_t i = 0; i < phnum && !err; i++) {
		if (is64) {
			const Elf64_Phdr *p = (const Elf64_Phdr *)ph + i;
			if (p->p_type == PT_LOAD)
				err = add_load(sp, &seen, p->p_vaddr, p->p_memsz, p->p_offset, page);
		} else {
			const Elf32_Phdr *p = (const Elf32_Phdr *)ph + i;
			if (p->p_type == PT_LOAD)
				err = add_load(sp, &seen, p->p_vaddr, p->p_memsz, p->p_offset, page);
		}
	}
	free(ph);
	if (!err && (!seen || sp->hi <= sp->lo))
		err = -ENOEXEC;
	return err;
}

static int span_of_file(const char *path, struct elf_span *sp)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	int err = elf_read_span(fd, sp);
	close(fd);
	return err;
}

/* ---- processes ---- */

/* Field 22 of /proc/PID/stat (clock ticks after boot), 0 if unreadable. */
static uint64_t proc_start_time(uint32_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the command name may hold spaces and ')' */
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* True if the process first seen as p is still there (the pid was not
 * reused); once false, always false. */
static bool proc_alive(struct proc *p)
{
	if (!p->gone) {
		uint64_t t = proc_start_time(p->pid);
		if (t == 0 || t != p->start_time)
			p->gone = true;
	}
	return !p->gone;
}

static void proc_free(struct proc *p)
{
	if (!p)
		return;
#ifdef ULMA_HAVE_LIBDW
	if (p->dwfl)
		dwfl_end(p->dwfl);
#endif
	for (uint32_t i = 0; i < p->nmods; i++)
		free(p->mods[i].path);
	free(p->mods);
	free(p);
}

/* The process pid, created (and its start time read) if new; NULL when out
 * of memory. */
static struct proc *proc_get(struct ulma_symbols *s, uint32_t pid)
{
	for (uint32_t i = 0; i < s->nprocs; i++)
		if (s->procs[i]->pid == pid)
			return s->procs[i];
	if (s->nprocs == s->capprocs) {
		uint32_t cap = s->capprocs ? 2 * s->capprocs : 8;
		struct proc **procs = realloc(s->procs, cap * sizeof(*procs));
		if (!procs)
			return NULL;
		s->procs = procs;
		s->capprocs = cap;
	}
	struct proc *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->start_time = proc_start_time(pid);
	p->gone = p->start_time == 0;
	s->procs[s->nprocs++] = p;
	return p;
}

/* ---- modules ---- */

static struct module *module_known(struct proc *p, const char *path, uint64_t bias)
{
	for (uint32_t i = 0; i < p->nmods; i++)
		if (p->mods[i].bias == bias && strcmp(p->mods[i].path, path) == 0)
			return &p->mods[i];
	return NULL;
}

/* The module mapped at addr; the latest reported if several (a library
 * unloaded and another loaded in its place). */
static struct module *module_at(struct proc *p, uint64_t addr)
{
	for (uint32_t i = p->nmods; i-- > 0;) {
		struct module *m = &p->mods[i];
		if (!m->err && addr >= m->lo && addr < m->hi)
			return m;
	}
	return NULL;
}

/* Record a module whose headers were read (sp) or failed to be (err).
 * Returns err, or -ENOMEM. */
static int module_record(struct proc *p, const char *path, uint64_t bias, bool is_exe, const struct elf_span *sp,
			 int err)
{
	if (p->nmods == p->capmods) {
		uint32_t cap = p->capmods ? 2 * p->capmods : 16;
		struct module *mods = realloc(p->mods, cap * sizeof(*mods));
		if (!mods)
			return -ENOMEM;
		p->mods = mods;
		p->capmods = cap;
	}
	struct module *m = &p->mods[p->nmods];
	memset(m, 0, sizeof(*m));
	if (!(m->path = strdup(path)))
		return -ENOMEM;
	const char *slash = strrchr(m->path, '/');
	m->base = slash ? slash + 1 : m->path;
	m->bias = bias;
	m->is_exe = is_exe;
	m->err = err;
	if (!err) {
		m->lo = sp->lo + bias;
		m->hi = sp->hi + bias;
		if (m->hi <= m->lo) /* a bias that wraps the address space */
			m->err = -EINVAL;
	}
	p->nmods++;
	return m->err;
}

/* The main executable of a live process, by its /proc/PID/exe link. */
static int add_exe(struct proc *p, uint64_t bias)
{
	for (uint32_t i = 0; i < p->nmods; i++)
		if (p->mods[i].is_exe && p->mods[i].bias == bias)
			return p->mods[i].err;
	if (!proc_alive(p))
		return -ESRCH;
	char link[64], target[4096];
	snprintf(link, sizeof(link), "/proc/%" PRIu32 "/exe", p->pid);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return errno == ENOENT ? -ESRCH : -errno;
	target[n] = 0;
	struct elf_span sp = {0, 0, 0, 0};
	int err = span_of_file(link, &sp);
	if (err == -ENOENT)
		return -ESRCH;
	return module_record(p, target, bias, true, &sp, err);
}

int ulma_symbols_add_module(struct ulma_symbols *s, uint32_t pid, const char *path, uint64_t bias)
{
	struct proc *p = proc_get(s, pid);
	if (!p)
		return -ENOMEM;
	if (!path[0])
		return add_exe(p, bias);
	struct module *m = module_known(p, path, bias);
	if (m)
		return m->err;
	struct elf_span sp = {0, 0, 0, 0};
	int err = path[0] == '/' ? span_of_file(path, &sp) : -ENOENT;
	return module_record(p, path, bias, false, &sp, err);
}

/* ---- /proc/PID/maps ---- */

/* Whether a maps line (a file mapped at start) belongs to a module already
 * recorded: inside its range, or the very mapping found not ELF before. */
static bool mapping_known(struct proc *p, const char *path, uint64_t start)
{
	for (uint32_t i = 0; i < p->nmods; i++) {
		const struct module *m = &p->mods[i];
		if ((m->err ? m->bias == start : start >= m->lo && start < m->hi) && strcmp(m->path, path) == 0)
			return true;
	}
	return false;
}

static int maps_line(struct proc *p, char *line, uint64_t *start, uint64_t *end)
{
	uint64_t off;
	int at = 0;
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*s %*u %n", start, end, &off, &at) < 3 || !at)
		return 1; /* not a mapping: skip */
	char *path = line + at;
	size_t len = strcspn(path, "\n");
	path[len] = 0;
	size_t dl = strlen(DELETED);
	if (path[0] != '/' || (len >= dl && strcmp(path + len - dl, DELETED) == 0))
		return 0; /* anonymous, [heap], [vdso], a deleted file */
	if (mapping_known(p, path, *start))
		return 0;
	struct elf_span sp = {0, 0, 0, 0};
	int err = span_of_file(path, &sp);
	if (err == -ENOMEM)
		return err;
	if (err) /* not ELF (fonts, locale archives, our rings): remember it by this mapping */
		return module_record(p, path, *start, false, &sp, err) == -ENOMEM ? -ENOMEM : 0;
	if (off != sp.off0)
		return 0; /* a later segment of a file whose first was not seen */
	uint64_t bias = *start - sp.vaddr0;
	if (module_known(p, path, bias))
		return 0;
	err = module_record(p, path, bias, false, &sp, 0);
	return err == -ENOMEM ? err : 0;
}

/* Read /proc/PID/maps and record the ELF files not known yet.  If hole is
 * not NULL, it receives the gap or mapping that holds addr. */
static int proc_refresh(struct ulma_symbols *s, struct proc *p, uint64_t addr, struct miss_region *hole)
{
	if (!proc_alive(p))
		return -ESRCH;
	s->maps_reads++;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/maps", p->pid);
	FILE *f = fopen(path, "re");
	if (!f) {
		int err = errno == ENOENT || errno == ESRCH ? -ESRCH : -errno;
		if (err == -ESRCH)
			p->gone = true;
		return err;
	}
	char *line = NULL;
	size_t cap = 0;
	uint64_t prev_end = 0;
	bool found = false;
	int err = 0;
	while (!err && getline(&line, &cap, f) > 0) {
		uint64_t start, end;
		err = maps_line(p, line, &start, &end);
		if (err > 0) {
			err = 0;
			continue;
		}
		if (hole && !found && addr < end) {
			*hole = addr < start ? (struct miss_region){prev_end, start, 0} : (struct miss_region){start, end, 0};
			found = true;
		}
		prev_end = end;
	}
	free(line);
	fclose(f);
	if (hole && !found)
		*hole = (struct miss_region){prev_end, UINT64_MAX, 0};
	return err;
}

int ulma_symbols_refresh(struct ulma_symbols *s, uint32_t pid)
{
	struct proc *p = proc_get(s, pid);
	if (!p)
		return -ENOMEM;
	return proc_refresh(s, p, 0, NULL);
}

/* Read the maps for addr unless a read within ULMA_SYMBOLS_REFRESH_NS found
 * nothing around it. */
static struct module *refresh_for(struct ulma_symbols *s, struct proc *p, uint64_t addr)
{
	uint64_t now = ulma_clock_monotonic_ns();
	for (uint32_t i = 0; i < MISS_REGIONS; i++) {
		const struct miss_region *r = &p->miss[i];
		if (r->at_ns && now - r->at_ns < ULMA_SYMBOLS_REFRESH_NS && addr >= r->lo && addr < r->hi)
			return NULL;
	}
	struct miss_region hole = {0, 0, 0};
	if (proc_refresh(s, p, addr, &hole) != 0)
		return NULL;
	struct module *m = module_at(p, addr);
	if (!m) {
		hole.at_ns = now;
		p->miss[p->next_miss++ % MISS_REGIONS] = hole;
	}
	return m;
}

void ulma_symbols_forget(struct ulma_symbols *s, uint32_t pid)
{
	for (uint32_t i = 0; i < s->nprocs; i++) {
		if (s->procs[i]->pid == pid) {
			proc_free(s->procs[i]);
			s->procs[i] = s->procs[--s->nprocs];
			return;
		}
	}
}

/* ---- names ---- */

#ifdef ULMA_HAVE_LIBDW
static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = NULL, /* ":.debug:/usr/lib/debug", and .build-id under it */
};

/* m handed to libdwfl now if it was not yet; NULL if libdwfl cannot read it. */
static Dwfl_Module *dw_module(struct proc *p, struct module *m)
{
	if (m->dw || m->dw_failed)
		return m->dw;
	if (!p->dwfl && !(p->dwfl = dwfl_begin(&dwfl_callbacks)))
		return NULL;
	/* the executable through its link while it lives: the path may be gone */
	int fd = -1;
	if (m->is_exe && proc_alive(p)) {
		char link[64];
		snprintf(link, sizeof(link), "/proc/%" PRIu32 "/exe", p->pid);
		fd = open(link, O_RDONLY | O_CLOEXEC);
	}
	dwfl_report_begin_add(p->dwfl);
	/* add_p_vaddr: base is the load bias, as dlpi_addr is */
	m->dw = dwfl_report_elf(p->dwfl, m->path, m->path, fd, m->bias, true);
	if (!m->dw && fd >= 0)
		close(fd); /* consumed only on success */
	if (dwfl_report_end(p->dwfl, NULL, NULL) != 0)
		m->dw = NULL;
	m->dw_failed = !m->dw;
	return m->dw;
}

static void load_demangler(struct ulma_symbols *s)
{
	s->demangle_tried = true;
	/* NODELETE: unloading libstdc++ would orphan what it allocated at load */
	s->libstdcxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE);
	if (s->libstdcxx)
		s->demangle = (demangle_fn)dlsym(s->libstdcxx, "__cxa_demangle");
}

static void copy_name(struct ulma_symbols *s, const char *name, struct ulma_symbol *out)
{
	if (name[0] == '_' && name[1] == 'Z') {
		if (!s->demangle_tried)
			load_demangler(s);
		int status = -1;
		char *d = s->demangle ? s->demangle(name, NULL, NULL, &status) : NULL;
		if (d && status == 0)
			name = d;
		snprintf(out->name, sizeof(out->name), "%s", name);
		free(d);
		return;
	}
	snprintf(out->name, sizeof(out->name), "%s", name);
}

/* The compilation unit of a module that holds addr.  libdw 0.188 finds it
 * through .debug_aranges, which clang does not write by default; then each
 * unit is asked for its ranges. */
static Dwarf_Die *cu_at(Dwfl_Module *mod, uint64_t addr, Dwarf_Addr *bias)
{
	Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, bias);
	if (cu)
		return cu;
	while ((cu = dwfl_module_nextcu(mod, cu, bias)))
		if (dwarf_haspc(cu, addr - *bias) > 0)
			return cu;
	return NULL;
}

/* The die's DW_AT_decl_file, by way of its unit's file table: as
 * dwarf_decl_file, but file 0 too, which DWARF 5 makes the unit's primary
 * file and clang 14 names for a library built outside its source tree
 * (elfutils 0.188's dwarf_decl_file takes 0 for "none"). */
static const char *decl_file(Dwarf_Die *cu, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Word index;
	Dwarf_Files *files;
	size_t nfiles;
	Dwarf_Half version;
	if (dwarf_formudata(dwarf_attr_integrate(die, DW_AT_decl_file, &attr), &index) != 0 ||
	    (index == 0 && (dwarf_cu_info(cu->cu, &version, NULL, NULL, NULL, NULL, NULL, NULL) != 0 || version < 5)) ||
	    dwarf_getsrcfiles(cu, &files, &nfiles) != 0 || index >= nfiles)
		return NULL; /* (before DWARF 5, file 0 is "none") */
	return dwarf_filesrc(files, index, NULL, NULL);
}

/* Where the function holding pc is defined: the innermost subprogram
 * around it (not a function inlined at the same address), its
 * DW_AT_decl_file and DW_AT_decl_line (through DW_AT_abstract_origin and
 * DW_AT_specification). */
static bool decl_line(Dwarf_Die *cu, Dwarf_Addr pc, const char **file, int *line)
{
	Dwarf_Die *scopes = NULL;
	int n = dwarf_getscopes(cu, pc, &scopes);
	bool found = false;
	for (int i = 0; i < n && !found; i++) {
		if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram)
			continue;
		*file = decl_file(cu, &scopes[i]);
		found = *file && dwarf_decl_line(&scopes[i], line) == 0 && *line > 0;
		break;
	}
	free(scopes);
	return found;
}

/* out->file: file, made absolute with the unit's DW_AT_comp_dir if it is
 * relative. */
static void copy_file(Dwarf_Die *cu, const char *file, struct ulma_symbol *out)
{
	Dwarf_Attribute attr;
	const char *dir = file[0] == '/' ? NULL : dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr));
	if (dir)
		snprintf(out->file, sizeof(out->file), "%s/%s", dir, file);
	else
		snprintf(out->file, sizeof(out->file), "%s", file);
}

static void dw_resolve(struct ulma_symbols *s, struct proc *p, struct module *m, uint64_t addr,
		       struct ulma_symbol *out)
{
	Dwfl_Module *mod = dw_module(p, m);
	if (!mod)
		return;
	GElf_Off off;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
	if (name && name[0]) {
		copy_name(s, name, out);
		out->resolved = true;
	}
	Dwarf_Addr bias;
	Dwarf_Die *cu = cu_at(mod, addr, &bias);
	if (!cu)
		return;
	const char *file = NULL;
	int line = 0;
	if (!decl_line(cu, addr - bias, &file, &line)) {
		/* no function here in DWARF: the line table's row (addr2line's) */
		Dwarf_Line *row = dwarf_getsrc_die(cu, addr - bias);
		file = row ? dwarf_linesrc(row, NULL, NULL) : NULL;
		if (!file || dwarf_lineno(row, &line) != 0 || line < 0)
			return;
	}
	copy_file(cu, file, out);
	out->line = (uint32_t)line;
}
#endif

void ulma_symbols_resolve(struct ulma_symbols *s, uint32_t pid, uint64_t addr, struct ulma_symbol *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "0x%" PRIx64, addr);
	struct proc *p = proc_get(s, pid);
	if (!p)
		return;
	struct module *m = module_at(p, addr);
	if (!m && !p->gone)
		m = refresh_for(s, p, addr);
	if (!m)
		return;
	snprintf(out->module, sizeof(out->module), "%s", m->base);
	snprintf(out->name, sizeof(out->name), "%s+0x%" PRIx64, m->base, addr - m->bias);
#ifdef ULMA_HAVE_LIBDW
	dw_resolve(s, p, m, addr, out);
#endif
}

/* ---- the resolver ---- */

struct ulma_symbols *ulma_symbols_new(void)
{
	return calloc(1, sizeof(struct ulma_symbols));
}

void ulma_symbols_free(struct ulma_symbols *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->nprocs; i++)
		proc_free(s->procs[i]);
	free(s->procs);
	if (s->libstdcxx)
		dlclose(s->libstdcxx);
	free(s);
}

uint64_t ulma_symbols_maps_reads(const struct ulma_symbols *s)
{
	return s->maps_reads;
}
