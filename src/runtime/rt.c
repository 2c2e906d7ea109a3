/* rt.c - the runtime's process-wide state: mapping the session, starting
 * tracing in a process without Python, and telling the monitor which ELF
 * objects are loaded (rt.h).
 *
 * A process without Python starts tracing when `ulma run`
 * (ULMA_SESSION_FD) or a traced ancestor (ULMA_SESSION_PATH) left a
 * session in its environment, at its first native event or C API call,
 * and stops at exit.  Not before: `ulma run` preloads this library into
 * every process, and a shell or any other program that records nothing
 * must leave the session, and the fd, to the program it starts.  A Python
 * process leaves starting to the extension, which has to install the
 * interpreter's hook anyway (src/python/module.c).
 *
 * Loaded objects are reported as ULMA_DEF_MODULE definitions (path and
 * load bias) when tracing starts and when it stops, so that the monitor
 * can name an address even after the process has exited; while it runs,
 * the monitor reads the process's maps for objects loaded meanwhile.
 * (Interposing dlopen would catch them at once, but a dlopen called from
 * here searches our RUNPATH, not the caller's.)  Each (path, bias) is
 * reported once per session.
 */
#include "rt.h"

#include "ulma/ulma.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ULMA_RT_API struct ulma_rt ulma_rt;
extern struct ulma_rt ulma_rt_self __attribute__((visibility("hidden"), alias("ulma_rt")));
volatile uint8_t ulma_rt_hooks_state; /* enum ulma_hooks_state (rt.h) */

/* Biases already reported in this session (a small open set; a process
 * with more objects than this reports the rest again at each call). */
#define REPORTED_MAX 1024
static uint64_t reported[REPORTED_MAX];
static unsigned nreported;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

int ulma_rt_map(int fd)
{
	struct ulma_session s;
	int err = ulma_session_map_fd(fd, &s);
	if (err)
		return err;
	if (ulma_rt.session.hdr)
		ulma_session_unmap(&ulma_rt.session);
	ulma_rt.session = s;
	ulma_rt.use_tsc = (s.hdr->flags & ULMA_SHM_CLOCK_TSC) != 0;
	ulma_rt.writer_generation++;
	ulma_rt.id_generation++;
	pthread_mutex_lock(&report_lock);
	nreported = 0;
	pthread_mutex_unlock(&report_lock);
	return 0;
}

static bool already_reported(uint64_t key)
{
	for (unsigned i = 0; i < nreported; i++)
		if (reported[i] == key)
			return true;
	if (nreported < REPORTED_MAX)
		reported[nreported++] = key;
	return false;
}

static int report_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	char exe[PATH_MAX];
	const char *path = info->dlpi_name;
	if (!path || !*path) { /* the main program */
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0)
			return 0;
		exe[n] = '\0';
		path = exe;
	} else if (path[0] != '/') {
		return 0; /* the vDSO, which no file backs */
	}
	/* key: bias and a hash of the path, so a library loaded again at the
	 * same address after a dlclose of another is still reported */
	uint64_t key = (uint64_t)info->dlpi_addr;
	for (const char *p = path; *p; p++)
		key = (key ^ (unsigned char)*p) * UINT64_C(0x100000001b3);
	if (already_reported(key))
		return 0;
	char bias[17];
	snprintf(bias, sizeof(bias), "%016llx", (unsigned long long)info->dlpi_addr);
	ulma_session_define(&ulma_rt.session, ULMA_DEF_MODULE, path, strlen(path), bias, 16, (uint32_t)getpid());
	return 0;
}

void ulma_rt_report_modules(void)
{
	if (!ulma_rt.session.hdr)
		return;
	pthread_mutex_lock(&report_lock);
	dl_iterate_phdr(report_one, NULL);
	pthread_mutex_unlock(&report_lock);
}

static void stop_at_exit(void)
{
	if (!ulma_rt.active)
		return;
	ulma_rt_alloc_stop();
	ulma_rt_report_modules();
	uint32_t cpu;
	uint64_t now = ulma_clock_now(ulma_rt.use_tsc, &cpu);
	ulma_rt_stop(now, cpu);
}

/* Start tracing this process into the session behind fd (not Python). */
static bool self_start(int fd)
{
	if (ulma_rt_threads_init() < 0 || ulma_rt_map(fd) < 0)
		return false;
	struct ulma_shm_header *hdr = ulma_rt.session.hdr;
	uint32_t none = 0;
	atomic_compare_exchange_strong(&hdr->program_pid, &none, (uint32_t)getpid());
	atomic_fetch_add(&hdr->started, 1);
	atomic_store(&hdr->tracing, 1);
	ulma_rt_report_modules();
	if (atexit(stop_at_exit) != 0)
		return false;
	ulma_rt_set_active(true);
	if (hdr->flags & ULMA_SHM_MEMORY)
		ulma_rt_alloc_start(NULL);
	return true;
}

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

bool ulma_rt_start_armed(void)
{
	pthread_mutex_lock(&start_lock);
	if (ulma_rt_hooks_state == ULMA_HOOKS_ARMED && !ulma_rt.active) {
		ulma_rt_hooks_state = ULMA_HOOKS_OFF;
		const char *fd_text = getenv("ULMA_SESSION_FD");
		const char *path = getenv("ULMA_SESSION_PATH");
		int fd = -1;
		if (fd_text) { /* `ulma run`'s own program: the fd is ours, not the program's */
			fd = atoi(fd_text);
			unsetenv("ULMA_SESSION_FD");
		} else if (path) {
			fd = open(path, O_RDWR | O_CLOEXEC);
		}
		if (fd >= 0) {
			self_start(fd);
			close(fd);
		}
	}
	pthread_mutex_unlock(&start_lock);
	return ulma_rt.active;
}

__attribute__((constructor)) static void load(void)
{
	if (!getenv("ULMA_SESSION_FD") && !getenv("ULMA_SESSION_PATH"))
		return;
	if (dlsym(RTLD_DEFAULT, "Py_IsInitialized"))
		return; /* a Python process: the extension starts tracing (module.c) */
	ulma_rt_hooks_state = ULMA_HOOKS_ARMED;
	ulma_enabled = 1; /* the C API's macros call in, and the first call starts */
}
