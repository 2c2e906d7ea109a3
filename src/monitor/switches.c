/* switches.c - context-switch records through perf_event_open (see switches.h). */
#include "switches.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../core/idmap.h"

#define PAGE 4096u
#define BUDGET_BYTES (8u << 20) /* ring buffer bytes over all CPUs, at most */
#define MAX_PAGES 128u          /* per CPU: 512 KiB, some 16,000 records */
#define MIN_PAGES 2u

struct cpu_buffer {
	int fd;       /* the event whose buffer this is (others redirect to it) */
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	uint64_t size; /* bytes of data, a power of two */
	size_t map_len;
	/* while ulma_switches_read runs: the records from tail up to head (data_head as it began) are
	 * to be read; `next`, when the buffer is in the merge, is the record at tail, ending at next_end */
	uint64_t head, tail, next_end;
	struct ulma_switch_record next;
};

struct ulma_switches {
	int ncpu;
	struct cpu_buffer *cpu;
	int *merge; /* a min-heap of the CPUs whose buffers have a record to deliver, by its time */
	int *fds; /* every event, buffer owners included */
	size_t nfds, cap_fds;
	struct ulma_idmap followed; /* tids with events of their own (open_process) */
	uint64_t lost;
};

/* The layout the records have with these sample_type bits. */
struct sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, reserved;
};

static int perf_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group, unsigned long flags)
{
	long fd = syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
	return fd < 0 ? -errno : (int)fd;
}

static void attr_init(struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_DUMMY;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	a->sample_id_all = 1;
	a->context_switch = 1;
	a->task = 1; /* exit records (and fork records, not taken) */
	a->inherit = 1;
	a->exclude_kernel = 1; /* what perf_event_paranoid 2 allows; switches are still recorded */
	a->exclude_hv = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->watermark = 1;
	a->wakeup_watermark = 1u << 30; /* we poll; never wake anyone */
}

static int keep_fd(struct ulma_switches *sw, int fd)
{
	if (sw->nfds == sw->cap_fds) {
		size_t cap = sw->cap_fds ? 2 * sw->cap_fds : 16;
		int *v = realloc(sw->fds, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		sw->fds = v;
		sw->cap_fds = cap;
	}
	sw->fds[sw->nfds++] = fd;
	return 0;
}

static uint32_t pages_per_cpu(int ncpu)
{
	uint32_t pages = MAX_PAGES;
	while (pages > MIN_PAGES && (uint64_t)pages * PAGE * (uint64_t)ncpu > BUDGET_BYTES)
		pages /= 2;
	return pages;
}

/* Map the buffer of CPU c's first event, halving it while the locked-memory
 * limit refuses. */
static int map_buffer(struct ulma_switches *sw, int c, int fd)
{
	for (uint32_t pages = pages_per_cpu(sw->ncpu); pages >= MIN_PAGES; pages /= 2) {
		size_t len = (size_t)(pages + 1) * PAGE;
		void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			if (errno == EPERM || errno == ENOMEM)
				continue;
			return -errno;
		}
		struct cpu_buffer *b = &sw->cpu[c];
		b->fd = fd;
		b->meta = m;
		b->map_len = len;
		b->data = (uint8_t *)m + (b->meta->data_offset ? b->meta->data_offset : PAGE);
		b->size = b->meta->data_size ? b->meta->data_size : (uint64_t)pages * PAGE;
		return 0;
	}
	return -EPERM;
}

/* Open the events of one task on every CPU, into the CPUs' buffers. */
static int follow_task(struct ulma_switches *sw, pid_t tid)
{
	struct perf_event_attr a;
	attr_init(&a);
	for (int c = 0; c < sw->ncpu; c++) {
		int fd = perf_open(&a, tid, c, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			return fd;
		int err = keep_fd(sw, fd);
		if (err) {
			close(fd);
			return err;
		}
		if (!sw->cpu[c].meta)
			err = map_buffer(sw, c, fd);
		else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, sw->cpu[c].fd) < 0)
			err = -errno;
		if (err)
			return err;
	}
	return 0;
}

static int new_switches(struct ulma_switches **out)
{
	*out = NULL;
	long n = sysconf(_SC_NPROCESSORS_CONF);
	struct ulma_switches *sw = calloc(1, sizeof(*sw));
	if (!sw)
		return -ENOMEM;
	sw->ncpu = n > 0 ? (int)n : 1;
	sw->cpu = calloc((size_t)sw->ncpu, sizeof(*sw->cpu));
	sw->merge = calloc((size_t)sw->ncpu, sizeof(*sw->merge));
	if (!sw->cpu || !sw->merge) {
		free(sw->cpu);
		free(sw->merge);
		free(sw);
		return -ENOMEM;
	}
	*out = sw;
	return 0;
}

int ulma_switches_open_child(pid_t pid, struct ulma_switches **out)
{
	struct ulma_switches *sw;
	int err = new_switches(&sw);
	if (err)
		return err;
	err = follow_task(sw, pid);
	if (err) {
		ulma_switches_close(sw);
		return err;
	}
	*out = sw;
	return 0;
}

/* Open events for threads of pid not followed yet; *added counts them. */
static int follow_new_threads(struct ulma_switches *sw, pid_t pid, int *added)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	struct dirent *e;
	int err = 0;
	*added = 0;
	while (!err && (e = readdir(d))) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);
		uint32_t seen;
		if (*end || tid <= 0 || ulma_idmap_get(&sw->followed, (uint64_t)tid, &seen))
			continue;
		err = follow_task(sw, (pid_t)tid);
		if (err == -ESRCH) /* it exited meanwhile */
			err = 0;
		else if (!err && !(err = ulma_idmap_put(&sw->followed, (uint64_t)tid, 1)))
			(*added)++;
	}
	closedir(d);
	return err;
}

int ulma_switches_open_process(pid_t pid, struct ulma_switches **out)
{
	struct ulma_switches *sw;
	int err = new_switches(&sw);
	int added = 1;
	/* a thread started by one not yet followed inherits nothing: list again
	 * until a pass finds no new thread */
	for (int pass = 0; !err && added && pass < 100; pass++)
		err = follow_new_threads(sw, pid, &added);
	if (err) {
		ulma_switches_close(sw);
		return err;
	}
	*out = sw;
	return 0;
}

/* The record a perf record body holds, into *r: 1, or 0 for one that is
 * not a switch or an exit (a LOST record is counted here). */
static int decode(struct ulma_switches *sw, const struct perf_event_header *h, const uint8_t *body,
		  struct ulma_switch_record *r)
{
	const struct sample_id *id;
	size_t len = h->size - sizeof(*h);
	switch (h->type) {
	case PERF_RECORD_SWITCH:
		if (len < sizeof(*id))
			return 0;
		id = (const struct sample_id *)body;
		r->kind = !(h->misc & PERF_RECORD_MISC_SWITCH_OUT)		 ? ULMA_SWITCH_IN
			  : (h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) ? ULMA_SWITCH_PREEMPT
									     : ULMA_SWITCH_OUT;
		break;
	case PERF_RECORD_EXIT: /* pid, ppid, tid, ptid, time, then the sample id */
		if (len < 24 + sizeof(*id))
			return 0;
		id = (const struct sample_id *)(body + 24);
		r->kind = ULMA_SWITCH_EXIT;
		break;
	case PERF_RECORD_LOST: /* id, lost */
		if (len >= 16) {
			uint64_t n;
			memcpy(&n, body + 8, sizeof(n));
			sw->lost += n;
		}
		return 0;
	default:
		return 0;
	}
	r->ns = id->time;
	r->pid = id->pid;
	r->tid = id->tid;
	r->cpu = id->cpu;
	return 1;
}

/* Decode buffer b's next record to deliver into b->next, passing over (and
 * consuming) the others; false when none is left before b->head, or at a
 * corrupt header (the rest is read once more has arrived). */
static bool buffer_next(struct ulma_switches *sw, struct cpu_buffer *b)
{
	while (b->tail < b->head) {
		uint64_t rec[64]; /* 512 bytes, aligned as the buffer's records are */
		struct perf_event_header h;
		uint64_t at = b->tail & (b->size - 1);
		if (at + sizeof(h) <= b->size) {
			memcpy(&h, b->data + at, sizeof(h));
		} else { /* the header straddles the end */
			size_t first = (size_t)(b->size - at);
			memcpy(&h, b->data + at, first);
			memcpy((uint8_t *)&h + first, b->data, sizeof(h) - first);
		}
		if (h.size < sizeof(h) || b->tail + h.size > b->head)
			return false;
		size_t body = h.size - sizeof(h);
		uint64_t from = (at + sizeof(h)) & (b->size - 1);
		const uint8_t *p = b->data + from;
		if (from + body > b->size) { /* the body straddles the end: read from a copy */
			if (body > sizeof(rec)) { /* none of ours is that long */
				b->tail += h.size;
				continue;
			}
			size_t first = (size_t)(b->size - from);
			memcpy(rec, p, first);
			memcpy((uint8_t *)rec + first, b->data, body - first);
			p = (const uint8_t *)rec;
		}
		if (decode(sw, &h, p, &b->next)) {
			b->next_end = b->tail + h.size;
			return true;
		}
		b->tail += h.size;
	}
	return false;
}

/* Does CPU a's next record come before CPU b's (ties: the lower CPU first)? */
static bool earlier(const struct ulma_switches *sw, int a, int b)
{
	uint64_t x = sw->cpu[a].next.ns, y = sw->cpu[b].next.ns;
	return x < y || (x == y && a < b);
}

/* Restore the heap order of merge[0, n) below place i. */
static void sift_down(struct ulma_switches *sw, int i, int n)
{
	int *h = sw->merge;
	for (;;) {
		int l = 2 * i + 1, least = i;
		if (l < n && earlier(sw, h[l], h[least]))
			least = l;
		if (l + 1 < n && earlier(sw, h[l + 1], h[least]))
			least = l + 1;
		if (least == i)
			return;
		int t = h[i];
		h[i] = h[least];
		h[least] = t;
		i = least;
	}
}

/* Each CPU's buffer is in time order; a thread's records are spread over
 * the CPUs it ran on.  Merging the buffers hands every thread's records on
 * in time order, so whoever keeps them sorted (offcpu.c) appends. */
long ulma_switches_read(struct ulma_switches *sw, int (*fn)(void *ctx, const struct ulma_switch_record *r),
			void *ctx)
{
	int n = 0;
	for (int c = 0; c < sw->ncpu; c++) {
		struct cpu_buffer *b = &sw->cpu[c];
		if (!b->meta)
			continue;
		/* acquire: the records up to data_head are written */
		b->head = __atomic_load_n(&b->meta->data_head, __ATOMIC_ACQUIRE);
		b->tail = b->meta->data_tail;
		if (buffer_next(sw, b))
			sw->merge[n++] = c;
	}
	for (int i = n / 2 - 1; i >= 0; i--)
		sift_down(sw, i, n);
	long count = 0;
	int err = 0;
	while (n > 0) {
		struct cpu_buffer *b = &sw->cpu[sw->merge[0]];
		if ((err = fn(ctx, &b->next)) < 0)
			break; /* b's record stays for the next read */
		count++;
		b->tail = b->next_end;
		if (!buffer_next(sw, b))
			sw->merge[0] = sw->merge[--n];
		sift_down(sw, 0, n);
	}
	for (int c = 0; c < sw->ncpu; c++) /* release: we are done with the records before the kernel reuses them */
		if (sw->cpu[c].meta)
			__atomic_store_n(&sw->cpu[c].meta->data_tail, sw->cpu[c].tail, __ATOMIC_RELEASE);
	return err < 0 ? err : count;
}

uint64_t ulma_switches_lost(const struct ulma_switches *sw)
{
	return sw ? sw->lost : 0;
}

void ulma_switches_close(struct ulma_switches *sw)
{
	if (!sw)
		return;
	for (int c = 0; c < sw->ncpu; c++)
		if (sw->cpu[c].meta)
			munmap(sw->cpu[c].meta, sw->cpu[c].map_len);
	for (size_t i = 0; i < sw->nfds; i++)
		close(sw->fds[i]);
	free(sw->fds);
	free(sw->cpu);
	free(sw->merge);
	ulma_idmap_free(&sw->followed);
	free(sw);
}
