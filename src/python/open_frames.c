/* open_frames.c - the frames already running when tracing starts.
 *
 * Tracing that starts in the middle of a program (`ulma top PID` or
 * `ulma record PID` attaching, an inline `ulma.profile()` block) finds each
 * thread inside frames whose entry it never saw.  Without their entries
 * their exits are dropped as unmatched, the calls made from them hang from
 * no parent, and a thread that sits in one (a server loop, a worker blocked
 * in C) shows nothing at all.  So start(), as its last step, with the GIL
 * held and the hook installed and active, walks every thread's frame chain
 * once and writes an ENTER per frame, outermost first, into a ring claimed
 * for that thread (threads.c: the thread adopts it at its first event).
 * All are stamped with one time, read after the walk: the walk, like the
 * rest of start(), is not charged to those frames.  No thread has recorded
 * anything yet (nothing is recorded before tracing is active, and no
 * bytecode runs between that and this walk), so every thread's stack is
 * the one we see.  The monitor then shows those frames at once, open,
 * timed from the start.
 *
 * What is left out: our own frames (code marked skip by start's caller),
 * the calling thread's frames unless asked for (`ulma run`'s bootstrap has
 * nothing of the program on its stack), and a C function a thread is
 * inside: it is not a frame, so its exit is dropped and its time is its
 * caller's self time.
 * Each thread's Python name (thread_names.c) is written before its frames.
 * Python 3.9 and 3.10 keep no kernel thread id in a thread state.  There
 * the main thread's is the pid (we note its ident when this module is
 * imported in it), and another thread's comes from the threading module, so
 * a thread threading does not know (started with _thread directly) is left
 * out.  So is every thread past half the session's rings (64 of the default
 * 128): a pool of idle workers must not take the rings that busy threads
 * claim at their first event.  A build without a GIL is left out
 * entirely: other threads' frames can change under us.
 */
#include "tracer.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#if PY_VERSION_HEX < 0x030B0000
#include <frameobject.h>
#endif

#if PY_VERSION_HEX < 0x030B0000
static unsigned long main_ident; /* the main thread's PyThread ident, 0 if not known */
#endif

void ulma_open_frames_note_thread(void)
{
#if PY_VERSION_HEX < 0x030B0000
	if ((pid_t)syscall(SYS_gettid) == getpid())
		main_ident = PyThread_get_thread_ident();
#endif
}

/* The kernel thread id of a thread state, 0 if unknown. */
static uint32_t kernel_tid(PyThreadState *ts)
{
	if (ts == PyThreadState_Get())
		return (uint32_t)syscall(SYS_gettid);
#if PY_VERSION_HEX >= 0x030B0000
	return (uint32_t)ts->native_thread_id;
#else
	if (main_ident && ts->thread_id == main_ident)
		return (uint32_t)getpid();
	/* threading._active[ident]._native_id, without importing threading (which,
	 * imported first by another thread, takes that one for the main thread) */
	uint32_t tid = 0;
	PyObject *name = PyUnicode_FromString("threading");
	PyObject *mod = name ? PyImport_GetModule(name) : NULL;
	Py_XDECREF(name);
	PyObject *active = mod ? PyObject_GetAttrString(mod, "_active") : NULL;
	PyObject *ident = active ? PyLong_FromUnsignedLong(ts->thread_id) : NULL;
	PyObject *thread = ident && PyDict_Check(active) ? PyDict_GetItemWithError(active, ident) : NULL;
	/* the attribute behind the native_id property: reading it runs no Python code, which
	 * the hook, already installed, would record */
	PyObject *native = thread ? PyObject_GetAttrString(thread, "_native_id") : NULL;
	if (native && PyLong_Check(native))
		tid = (uint32_t)PyLong_AsUnsignedLong(native);
	Py_XDECREF(native);
	Py_XDECREF(ident);
	Py_XDECREF(active);
	Py_XDECREF(mod);
	PyErr_Clear();
	return tid;
#endif
}

/* The CPU thread `tid` of this process last ran on (field 39 of its stat
 * file), or `fallback`. */
static uint32_t last_cpu(uint32_t tid, uint32_t fallback)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/self/task/%u/stat", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fallback;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return fallback;
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
	for (int field = 2; p && field < 39; field++)
		p = strchr(p + 1, ' ');
	unsigned cpu;
	return p && sscanf(p + 1, "%u", &cpu) == 1 ? cpu : fallback;
}

/* The ids of ts's frames that we record, innermost first, in a malloc'd
 * array; NULL with *count 0 when there are none (or no memory). */
static uint32_t *frame_ids(PyThreadState *ts, size_t *count)
{
	uint32_t *ids = NULL;
	size_t n = 0, cap = 0;
	PyFrameObject *f = PyThreadState_GetFrame(ts);
	while (f) {
		PyCodeObject *co = PyFrame_GetCode(f);
		uint32_t id = ulma_code_id(co);
		Py_DECREF(co);
		if (id != ULMA_ID_SKIP) {
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				uint32_t *grown = realloc(ids, cap * sizeof(*ids));
				if (!grown) {
					Py_DECREF(f);
					free(ids);
					*count = 0;
					return NULL;
				}
				ids = grown;
			}
			ids[n++] = id;
		}
		PyFrameObject *back = PyFrame_GetBack(f);
		Py_DECREF(f);
		f = back;
	}
	*count = n;
	return ids;
}

/* A thread whose open frames are to be recorded: gathered first, written
 * once the start time is read, so that the walk is not charged to them. */
struct open_thread {
	struct ulma_thread_writer *writer;
	uint32_t *ids; /* innermost first */
	size_t count;
	size_t kept; /* the outermost `kept` of them are written */
	uint32_t cpu; /* UNKNOWN_CPU: the calling thread's */
	uint32_t name; /* mark id of its Python name, 0 if none (thread_names.c) */
};

#define UNKNOWN_CPU UINT32_MAX

/* Fault in the ring memory that `count` records will take, so that writing
 * them after the start time is read costs no page faults (a few
 * microseconds each, charged to the frames they enter). */
static void prefault(struct ulma_ring_writer *ring, size_t count)
{
#ifdef MADV_POPULATE_WRITE
	const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uint64_t first = ring->head & ring->mask, end = first + count;
	if (end > ring->mask + 1)
		end = ring->mask + 1; /* the wrapped part, if any, faults as it is written */
	uintptr_t from = (uintptr_t)&ring->records[first] & ~(page - 1);
	uintptr_t to = (uintptr_t)&ring->records[end];
	(void)madvise((void *)from, to - from, MADV_POPULATE_WRITE); /* a hint: older kernels refuse it */
#else
	(void)ring;
	(void)count;
#endif
}

/* Gather the threads to record, at most `most`; returns how many. */
static uint32_t gather(bool caller_too, struct open_thread *threads, uint32_t most)
{
	PyThreadState *self = PyThreadState_Get();
	uint32_t n = 0;
	for (PyThreadState *ts = PyInterpreterState_ThreadHead(PyThreadState_GetInterpreter(self)); ts;
	     ts = PyThreadState_Next(ts)) {
		if (ts == self && !caller_too)
			continue;
		uint32_t tid = kernel_tid(ts);
		if (tid == 0)
			continue;
		if (n == most)
			break;
		struct open_thread *th = &threads[n];
		th->ids = frame_ids(ts, &th->count);
		if (th->count == 0)
			continue;
		th->writer = ulma_rt_thread_prepare(tid);
		if (!th->writer) {
			free(th->ids);
			continue;
		}
		/* at most half the ring: the thread's own records must fit too;
		 * the outermost frames are the ones kept */
		uint64_t room = (th->writer->ring.mask + 1) / 2;
		th->kept = th->count > room ? room : th->count;
		th->cpu = last_cpu(tid, UNKNOWN_CPU);
		th->name = ulma_thread_names_of((unsigned long)ts->thread_id, tid);
		prefault(&th->writer->ring, th->kept);
		n++;
	}
	return n;
}

void ulma_open_frames_record(bool caller_too)
{
#if !defined(Py_GIL_DISABLED)
	uint32_t most = ulma_rt.session.hdr->slot_count / 2;
	if (most == 0)
		return;
	struct open_thread *threads = calloc(most, sizeof(*threads));
	if (!threads) {
		atomic_fetch_or_explicit(&ulma_rt.session.hdr->failures, ULMA_FAIL_NOMEM, memory_order_relaxed);
		return;
	}
	uint32_t count = gather(caller_too, threads, most), here;
	uint64_t now = ulma_clock_now(ulma_rt.use_tsc, &here);
	for (uint32_t k = 0; k < count; k++) {
		struct open_thread *th = &threads[k];
		struct ulma_ring_writer *ring = &th->writer->ring;
		uint32_t cpu = th->cpu == UNKNOWN_CPU ? here : th->cpu;
		if (th->name) /* named before its frames, as a thread starting now is */
			ulma_ring_write_proxy(ring, now, th->name, cpu, ULMA_REC_THREAD_NAME);
		for (size_t i = th->count; i-- > th->count - th->kept;)
			ulma_ring_write_proxy(ring, now, th->ids[i], cpu, ULMA_REC_ENTER);
		ulma_ring_publish(ring); /* a thread blocked in C shows at once */
		free(th->ids);
	}
	free(threads);
#else
	(void)caller_too;
#endif
}
