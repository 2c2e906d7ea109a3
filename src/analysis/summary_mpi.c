/* summary_mpi.c - the summary's MPI part, for a merged trace (mpi_view.h,
 * docs/mpi.md, docs/json.md): per rank the time computing and waiting in
 * MPI and the functions it waited in; the messages; what the merge did. */
#include <inttypes.h>
#include <stdio.h>

#include "mpi_view.h"
#include "summary_parts.h"

static uint64_t since_start(const struct ulma_summary *s, uint64_t ticks)
{
	return ticks > s->cal.ticks0 ? ulma_summary_ns(s, ticks - s->cal.ticks0) : 0;
}

static uint64_t rank_wall_ns(const struct ulma_summary *s, const struct ulma_mpi_rank_row *r)
{
	return r->last_ticks > r->first_ticks ? ulma_summary_ns(s, r->last_ticks - r->first_ticks) : 0;
}

static const char *func_name(const struct ulma_summary *s, uint32_t f)
{
	return f < s->profile->nfuncs && s->profile->funcs[f].name ? s->profile->funcs[f].name : "(no caller)";
}

void ulma_summary_mpi_json(FILE *out, const struct ulma_summary *s)
{
	const struct ulma_mpi_view *v = s->mpi;
	if (v && v->is_rank && !v->merged) {
		fprintf(out, "\"mpi_rank\": {\"rank\": %u, \"size\": %u, \"host\": ", v->own_rank, v->own_size);
		ulma_summary_json_string(out, v->own_host);
		fputs("},\n", out);
	}
	if (!v || !v->merged)
		return;
	fputs("\"ranks\": [", out);
	for (uint32_t i = 0; i < v->nranks; i++) {
		const struct ulma_mpi_rank_row *r = &v->ranks[i];
		uint64_t wall = rank_wall_ns(s, r), wait = ulma_summary_ns(s, r->mpi_ticks);
		fprintf(out, "%s\n  {\"rank\": %u, \"pid\": %u, \"host\": ", i ? "," : "", r->rank, r->pid);
		ulma_summary_json_string(out, r->host);
		fprintf(out,
			", \"events\": %" PRIu64 ", \"mpi_wait_ns\": %" PRIu64 ", \"compute_ns\": %" PRIu64
			", \"clock_offset_init_ns\": %" PRId64 ", \"clock_offset_final_ns\": %" PRId64
			", \"unmatched\": %" PRIu64 ", \"waits\": [",
			r->events, wait, wall > wait ? wall - wait : 0, r->offset_init_ns, r->offset_final_ns,
			r->unmatched);
		for (unsigned k = 0; k < ULMA_MPI_VIEW_CALLERS && r->top[k].ticks; k++) {
			fprintf(out, "%s{\"function\": ", k ? ", " : "");
			ulma_summary_json_string(out, func_name(s, r->top[k].func));
			fputs(", \"mpi\": ", out);
			ulma_summary_json_string(out, func_name(s, r->top[k].mpi));
			fprintf(out, ", \"ns\": %" PRIu64 "}", ulma_summary_ns(s, r->top[k].ticks));
		}
		fputs("]}", out);
	}
	fputs("\n],\n\"messages\": [", out);
	uint64_t n = 0;
	for (uint64_t i = 0; i < v->nmessages; i++) {
		const struct ulma_mpi_message *m = &v->messages[i];
		if (m->have != 3)
			continue;
		fprintf(out,
			"%s\n  {\"src\": %u, \"dst\": %u, \"tag\": %" PRId64 ", \"comm\": %" PRIu64 ", \"bytes\": %" PRIu64
			", \"send_ns\": %" PRIu64 ", \"recv_ns\": %" PRIu64 "}",
			n++ ? "," : "", m->src, m->dst, m->tag, m->comm, m->bytes, since_start(s, m->send_ticks),
			since_start(s, m->recv_ticks));
	}
	fputs("\n],\n\"unmatched\": [", out);
	n = 0;
	for (uint64_t i = 0; i < v->nmessages; i++) {
		const struct ulma_mpi_message *m = &v->messages[i];
		if (m->have == 3)
			continue;
		bool send = m->have & 1;
		fprintf(out,
			"%s\n  {\"kind\": \"%s\", \"rank\": %u, \"peer\": %u, \"tag\": %" PRId64 ", \"comm\": %" PRIu64
			", \"bytes\": %" PRIu64 ", \"at_ns\": %" PRIu64 "}",
			n++ ? "," : "", send ? "send" : "recv", send ? m->src : m->dst, send ? m->dst : m->src, m->tag,
			m->comm, m->bytes, since_start(s, send ? m->send_ticks : m->recv_ticks));
	}
	fprintf(out,
		"\n],\n\"logical_corrections\": %" PRIu64 ", \"logical_moves\": %" PRIu64
		", \"logical_max_shift_ns\": %" PRIu64 ", \"max_clock_offset_ns\": %" PRIu64 ",\n",
		v->merge.moved, v->merge.moves, v->merge.max_move_ns, v->merge.max_offset_ns);
}

void ulma_summary_mpi_text(FILE *out, const struct ulma_summary *s)
{
	const struct ulma_mpi_view *v = s->mpi;
	if (v && v->is_rank && !v->merged) {
		fprintf(out, "\nMPI: rank %u of %u, on ", v->own_rank, v->own_size);
		ulma_summary_put_printable(out, v->own_host, 64);
		fputs("; `ulma merge` its directory for every rank's view (docs/mpi.md)\n", out);
	}
	if (!v || !v->merged)
		return;
	uint64_t matched = 0;
	for (uint64_t i = 0; i < v->nmessages; i++)
		matched += v->messages[i].have == 3;
	fprintf(out,
		"\nMPI: %u ranks, %" PRIu64 " messages matched, %" PRIu64 " unmatched; clocks %.3f ms apart at most; "
		"the logical-clock pass moved %" PRIu64 " events (the largest move %.3f ms)\n",
		v->nranks, matched, v->nmessages - matched, (double)v->merge.max_offset_ns / 1e6, v->merge.moved,
		(double)v->merge.max_move_ns / 1e6);
	fputs("  rank  host                  events   compute ms    in MPI ms  MPI%  waited most in\n", out);
	for (uint32_t i = 0; i < v->nranks; i++) {
		const struct ulma_mpi_rank_row *r = &v->ranks[i];
		uint64_t wall = rank_wall_ns(s, r), wait = ulma_summary_ns(s, r->mpi_ticks);
		fprintf(out, "%6u  ", r->rank);
		for (size_t n = ulma_summary_put_printable(out, r->host, 20); n < 20; n++)
			fputc(' ', out);
		fprintf(out, "%8" PRIu64 " %12.3f %12.3f %5.0f  ", r->events,
			(double)(wall > wait ? wall - wait : 0) / 1e6, (double)wait / 1e6,
			wall ? 100.0 * (double)wait / (double)wall : 0.0);
		for (unsigned k = 0; k < ULMA_MPI_VIEW_CALLERS && r->top[k].ticks; k++) {
			if (k)
				fputs(", ", out);
			ulma_summary_put_printable(out, func_name(s, r->top[k].func), 40);
			fputs(" > ", out);
			ulma_summary_put_printable(out, func_name(s, r->top[k].mpi), 40);
			fprintf(out, " %.3f ms", (double)ulma_summary_ns(s, r->top[k].ticks) / 1e6);
		}
		fputc('\n', out);
	}
}
