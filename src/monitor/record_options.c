/* record_options.c - what every recording command shares (see record_options.h). */
#include "record_options.h"

#include <string.h>

#include "commands.h"
#include "ulma/trace_format.h"

void ulma_record_options_init(struct ulma_record_options *o)
{
	*o = (struct ulma_record_options){.output = "ulma.trace", .summary = "text", .limit = 25};
}

int ulma_record_option(struct ulma_record_options *o, int c, const char *arg)
{
	switch (c) {
	case 'o':
		o->output = arg;
		return 1;
	case 'L':
		o->lossless = true;
		return 1;
	case 'C':
		o->no_c_calls = true;
		return 1;
	case 'K':
		o->no_correction = true;
		return 1;
	case 's':
		if (strcmp(arg, "text") && strcmp(arg, "json") && strcmp(arg, "none")) {
			ulma_die_msg("--summary takes text, json or none, not '%s'", arg);
			return -1;
		}
		o->summary = arg;
		return 1;
	case 'n':
		return ulma_parse_limit(arg, &o->limit) < 0 ? -1 : 1;
	default:
		return 0;
	}
}

void ulma_record_session_config(const struct ulma_record_options *o, struct ulma_session_config *cfg)
{
	cfg->lossless = o->lossless;
	cfg->c_calls = !o->no_c_calls;
}

uint32_t ulma_record_meta_flags(const struct ulma_record_options *o, bool use_tsc)
{
	return (use_tsc ? ULMA_META_TSC : 0) | (o->lossless ? ULMA_META_LOSSLESS : 0) |
	       (o->no_c_calls ? ULMA_META_NO_C_CALLS : 0);
}

void ulma_record_print_summary(FILE *out, const struct ulma_record_options *o, const struct ulma_summary *s)
{
	if (strcmp(o->summary, "text") == 0)
		ulma_summary_text(out, s, (uint32_t)o->limit);
	else if (strcmp(o->summary, "json") == 0)
		ulma_summary_json(out, s);
}
