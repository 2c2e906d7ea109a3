/* lane.c - CPU lanes in adaptive time bins (see lane.h). */
#include "lane.h"

#include <string.h>

void ulma_lane_init(struct ulma_lane *l, uint64_t origin, uint64_t min_width)
{
	memset(l, 0, sizeof(*l));
	l->origin = origin;
	l->width = min_width ? min_width : 1;
}

/* Halve the resolution: bin i takes bins 2i and 2i+1. */
static void coarsen(struct ulma_lane *l)
{
	for (uint32_t i = 0; i < ULMA_LANE_BINS / 2; i++) {
		uint32_t a = 2 * i, b = 2 * i + 1;
		uint16_t cpu = l->cpu_best[b] > l->cpu_best[a] ? l->cpu[b] : l->cpu[a];
		double best = l->cpu_best[b] > l->cpu_best[a] ? l->cpu_best[b] : l->cpu_best[a];
		l->span[i] = l->span[a] + l->span[b];
		l->oncpu[i] = l->oncpu[a] + l->oncpu[b];
		l->cpu[i] = cpu;
		l->cpu_best[i] = best;
	}
	memset(l->span + ULMA_LANE_BINS / 2, 0, sizeof(l->span) / 2);
	memset(l->oncpu + ULMA_LANE_BINS / 2, 0, sizeof(l->oncpu) / 2);
	memset(l->cpu_best + ULMA_LANE_BINS / 2, 0, sizeof(l->cpu_best) / 2);
	l->width *= 2;
	l->used = (l->used + 1) / 2;
}

/* Charge [t0, t1) with on-CPU fraction `frac` on `cpu`, split over bins.
 * Bin ends are measured from t0, never as origin + (bin + 1) * width: near
 * 2^64 ticks that sum wraps, and the loop would never end. */
static void charge(struct ulma_lane *l, uint64_t t0, uint64_t t1, double frac, uint32_t cpu)
{
	if (t0 < l->origin)
		t0 = l->origin;
	while (t1 > t0) {
		while ((t0 - l->origin) / l->width >= ULMA_LANE_BINS)
			coarsen(l);
		uint64_t bin = (t0 - l->origin) / l->width;
		uint64_t left = l->width - (t0 - l->origin) % l->width; /* ticks to the bin's end, >= 1 */
		uint64_t stop = t1 - t0 < left ? t1 : t0 + left;        /* t0 + left <= t1: no wrap */
		double len = (double)(stop - t0), on = len * frac;
		l->span[bin] += len;
		l->oncpu[bin] += on;
		if (on > l->cpu_best[bin]) {
			l->cpu_best[bin] = on;
			l->cpu[bin] = (uint16_t)cpu;
		}
		if (bin + 1 > l->used)
			l->used = (uint32_t)bin + 1;
		t0 = stop;
	}
}

void ulma_lane_event(struct ulma_lane *l, uint64_t ticks, uint32_t cpu, uint64_t cpu_ns, double ns_per_tick)
{
	if (l->started && ticks > l->last_ticks) {
		double wall_ns = (double)(ticks - l->last_ticks) * ns_per_tick;
		double on_ns = cpu_ns > l->last_cpu_ns ? (double)(cpu_ns - l->last_cpu_ns) : 0.0;
		double frac = wall_ns > 0 ? on_ns / wall_ns : 0.0;
		charge(l, l->last_ticks, ticks, frac > 1.0 ? 1.0 : frac, l->last_cpu);
	}
	if (!l->started || ticks >= l->last_ticks) {
		l->last_ticks = ticks;
		l->last_cpu_ns = cpu_ns;
	}
	l->last_cpu = cpu;
	l->started = 1;
}

static char cpu_char(uint16_t cpu)
{
	static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
	return cpu < sizeof(digits) - 1 ? digits[cpu] : '#';
}

/* Where bin b starts, or UINT64_MAX past the end of time. */
static uint64_t bin_start(const struct ulma_lane *l, uint64_t b)
{
	uint64_t room = UINT64_MAX - l->origin;
	return b > room / l->width ? UINT64_MAX : l->origin + b * l->width;
}

/* The start of column c of cols over [from, to), without overflow. */
static uint64_t column_start(uint64_t from, uint64_t to, size_t c, size_t cols)
{
	uint64_t range = to - from;
	return from + range / cols * c + range % cols * c / cols;
}

void ulma_lane_render(const struct ulma_lane *l, uint64_t from, uint64_t to, char *out, size_t cols)
{
	for (size_t c = 0; c < cols; c++) {
		uint64_t c0 = column_start(from, to, c, cols), c1 = column_start(from, to, c + 1, cols);
		double span = 0, on = 0, best = 0;
		uint16_t cpu = 0;
		for (uint32_t b = 0; b < l->used; b++) {
			uint64_t b0 = bin_start(l, b), b1 = bin_start(l, b + 1);
			if (b1 <= c0 || b0 >= c1 || l->span[b] == 0)
				continue;
			span += l->span[b];
			on += l->oncpu[b];
			if (l->cpu_best[b] > best) {
				best = l->cpu_best[b];
				cpu = l->cpu[b];
			}
		}
		out[c] = span == 0 ? ' ' : on >= 0.2 * span ? cpu_char(cpu) : '.';
	}
	out[cols] = 0;
}
