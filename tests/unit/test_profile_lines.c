/* test_profile_lines.c - per-line hits and times (src/analysis/profile_lines.c)
 * and their tables (src/analysis/summary_lines.c), with known answers: a
 * line's time runs to the frame's next line or its end and includes its
 * calls, which are counted under it; a resume goes on in a line without a
 * hit; off-CPU time within a line is its own; a frame's line state is
 * never taken for a later frame's at the same depth. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/profile.h"
#include "analysis/profile_lines.h"
#include "analysis/profile_memory.h"
#include "analysis/summary.h"
#include "tap.h"
#include "ulma/shm.h"
#include "ulma/trace_format.h"

static const struct ulma_line_row *row(const struct ulma_profile *p, uint32_t func, uint32_t line)
{
	for (uint32_t i = 0; p->lines && i < p->lines->nrows; i++)
		if (p->lines->rows[i].func == func && p->lines->rows[i].line == line)
			return &p->lines->rows[i];
	return NULL;
}

static void test_loop(void)
{
	struct ulma_profile p;
	ulma_profile_init(&p);
	ulma_profile_add_thread(&p, 0, 1, 1, 1);
	ulma_profile_add_func(&p, 0, ULMA_DEF_PY, "f", 1, "/m.py", 5, 1);
	ulma_profile_add_func(&p, 1, ULMA_DEF_PY, "g", 1, "/m.py", 5, 9);
	/* def f():            line 1
	 *     for i in 0..2:  line 2: 3 hits (N + 1)
	 *         g()         line 3: 2 hits, each 10 ticks in g plus 5
	 *     return          line 4 */
	uint64_t t = 100;
	ulma_profile_enter(&p, 0, 0, t);
	for (int i = 0; i < 2; i++) {
		ulma_profile_line(&p, 0, t += 1, 2, true);
		ulma_profile_line(&p, 0, t += 1, 3, true);
		ulma_profile_enter(&p, 0, 1, t += 2);
		ulma_profile_line(&p, 0, t += 1, 10, true); /* g's own line: g's row */
		ulma_profile_exit(&p, 0, t += 9);
		t += 3;
	}
	ulma_profile_line(&p, 0, t += 1, 2, true);
	ulma_profile_line(&p, 0, t += 1, 4, true);
	ulma_profile_exit(&p, 0, t += 7);
	const struct ulma_line_row *l2 = row(&p, 0, 2), *l3 = row(&p, 0, 3), *l4 = row(&p, 0, 4), *g10 = row(&p, 1, 10);
	if (!CHECK(l2 && l3 && l4 && g10, "rows for f's lines 2, 3, 4 and g's line 10"))
		goto out;
	CHECK_EQ_U64(l2->hits, 3, "the loop line: N + 1 hits");
	CHECK_EQ_U64(l3->hits, 2, "the body: N hits");
	CHECK_EQ_U64(l2->ticks, 3, "line 2: 1 tick to line 3, three times");
	CHECK_EQ_U64(l3->ticks, 2 * (2 + 1 + 9 + 3 + 1), "line 3: up to the next line 2, the call to g inside");
	CHECK_EQ_U64(l4->ticks, 7, "line 4: to the frame's exit");
	CHECK_EQ_U64(g10->ticks, 2 * 9, "g's line: to g's exit");
	CHECK(row(&p, 0, 10) == NULL, "g's line is not f's");
	CHECK_EQ_U64(p.funcs[0].line_rows, 3, "f has three line rows");
	const struct ulma_profile_lines *l = p.lines;
	CHECK(l->ncalls == 1 && l->calls[0].row == (uint32_t)(l3 - l->rows) && l->calls[0].callee == 1 &&
		      l->calls[0].calls == 2 && l->calls[0].ticks == 2 * (1 + 9),
	      "g's two calls counted under line 3, with g's wall time");
	uint32_t *rows;
	int n = ulma_profile_lines_of(&p, 0, &rows);
	CHECK(n == 3 && l->rows[rows[0]].line == 2 && l->rows[rows[1]].line == 3 && l->rows[rows[2]].line == 4,
	      "f's rows in line order");
	free(rows);
	/* the summary's text and JSON, with a copy of the source */
	const char *src = "def f():\n    for i in range(2):\n        g()\n    return\n\nx = 1\n";
	CHECK_EQ_I64(ulma_profile_add_source(&p, "/m.py", 5, src, strlen(src), ULMA_SOURCE_CHANGED | ULMA_SOURCE_CUT), 0, "a copy");
	struct ulma_summary s = {.profile = &p, .cal = {.ns_per_tick = 1000.0}, .exit_status = -1};
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	ulma_summary_text(out, &s, 10);
	fclose(out);
	CHECK(strstr(buf, "lines of f") && strstr(buf, "changed while the program ran") &&
		      strstr(buf, "longer than the copy kept") &&
		      strstr(buf, "        g()") && strstr(buf, "-> g (2 calls)") && !strstr(buf, "x = 1"),
	      "the text table: the block of f only, its source, g's calls under line 3 (%s)", buf);
	free(buf);
	out = open_memstream(&buf, &len);
	ulma_summary_json(out, &s);
	fclose(out);
	CHECK(strstr(buf, "\"source_changed\": true, \"lines\": [{\"line\": 2, \"hits\": 3, \"total_ns\": 3000, ") &&
		      strstr(buf, "{\"line\": 4, \"hits\": 1, \"total_ns\": 7000, ") &&
		      strstr(buf, "\"calls\": [{\"name\": \"g\", \"file\": \"/m.py\", \"line\": 9, \"calls\": 2, "
				  "\"total_ns\": 20000}]"),
	      "the JSON's lines of f (%s)", buf);
	free(buf);
out:
	ulma_profile_free(&p);
}

static void test_resume_and_off(void)
{
	struct ulma_profile p;
	ulma_profile_init(&p);
	ulma_profile_add_thread(&p, 0, 1, 1, 1);
	ulma_profile_add_func(&p, 0, ULMA_DEF_PY, "gen", 3, "/g.py", 5, 1);
	ulma_profile_add_func(&p, 1, ULMA_DEF_PY, "h", 1, "/g.py", 5, 7);
	ulma_profile_enter(&p, 0, 0, 10);
	ulma_profile_line(&p, 0, 11, 2, true);
	ulma_profile_exit(&p, 0, 15); /* yield */
	ulma_profile_enter(&p, 0, 0, 30);
	ulma_profile_line(&p, 0, 30, 2, false); /* resumed inside line 2 */
	ulma_profile_off(&p, 0, 4000, 1000, 0, 1, 0);
	ulma_profile_line(&p, 0, 40, 3, true);
	ulma_profile_exit(&p, 0, 41);
	/* a frame at the same depth with no line of its own */
	ulma_profile_enter(&p, 0, 1, 50);
	ulma_profile_exit(&p, 0, 60);
	const struct ulma_line_row *l2 = row(&p, 0, 2), *l3 = row(&p, 0, 3);
	if (!CHECK(l2 && l3, "rows for lines 2 and 3"))
		goto out;
	CHECK_EQ_U64(l2->hits, 1, "a resume is not a hit");
	CHECK_EQ_U64(l2->ticks, 4 + 10, "line 2: to the yield, then from the resume to line 3");
	CHECK(l2->blocked_ns == 4000 && l2->runnable_ns == 1000 && l3->blocked_ns == 0,
	      "the time off the CPU inside line 2 is its own");
	CHECK_EQ_U64(l3->ticks, 1, "line 3 to the exit");
	CHECK(!ulma_profile_has_lines(&p, 1) && row(&p, 1, 2) == NULL, "h took nothing of gen's line state");
	CHECK_EQ_U64(p.threads[0].events, 9, "line events count as events");
out:
	ulma_profile_free(&p);
}

/* --memory: a line's allocations include its calls', as its time does. */
static void test_allocations(void)
{
	struct ulma_profile p;
	ulma_profile_init(&p);
	ulma_profile_add_thread(&p, 0, 1, 1, 1);
	ulma_profile_add_func(&p, 0, ULMA_DEF_PY, "f", 1, "/m.py", 5, 1);
	ulma_profile_add_func(&p, 1, ULMA_DEF_PY, "g", 1, "/m.py", 5, 9);
	if (!CHECK_EQ_I64(ulma_profile_memory_enable(&p), 0, "memory on"))
		return;
	ulma_profile_enter(&p, 0, 0, 10);
	ulma_profile_line(&p, 0, 11, 2, true);
	ulma_profile_mem_alloc(&p, 0, 0x1000, 100, ULMA_MEM_OBJ, 12);
	ulma_profile_line(&p, 0, 13, 3, true);
	ulma_profile_enter(&p, 0, 1, 14);
	ulma_profile_mem_alloc(&p, 0, 0x2000, 40, ULMA_MEM_OBJ, 15); /* g's, under line 3 */
	ulma_profile_exit(&p, 0, 16);
	ulma_profile_mem_alloc(&p, 0, 0x3000, 2, ULMA_MEM_OBJ, 17);
	ulma_profile_exit(&p, 0, 18);
	const struct ulma_line_row *l2 = row(&p, 0, 2), *l3 = row(&p, 0, 3);
	CHECK(l2 && l2->alloc_count == 1 && l2->alloc_bytes == 100, "line 2: its own allocation");
	CHECK(l3 && l3->alloc_count == 2 && l3->alloc_bytes == 42, "line 3: its own and its call's");
	char *buf = NULL;
	size_t len = 0;
	struct ulma_summary s = {.profile = &p, .cal = {.ns_per_tick = 1.0}, .exit_status = -1};
	FILE *out = open_memstream(&buf, &len);
	ulma_summary_json(out, &s);
	fclose(out);
	CHECK(buf && strstr(buf, "\"line\": 3, \"hits\": 1, \"total_ns\": 5, ") &&
		      strstr(buf, "\"alloc_count\": 2, \"alloc_bytes\": 42, \"calls\""),
	      "the JSON's alloc_count and alloc_bytes per line (%s)", buf ? buf : "");
	free(buf);
	ulma_profile_free(&p);
}

/* Line numbers at the top of their range (a trace or a ring may carry
 * any): the direct table of a function's lines must not wrap its end
 * around to 0 (fuzz_rings: lines 2^32 - 2, 2^32 - 1 then 0 wrote past
 * the table). */
static void test_lines_near_the_top(void)
{
	struct ulma_profile p;
	ulma_profile_init(&p);
	ulma_profile_add_thread(&p, 0, 1, 1, 1);
	ulma_profile_add_func(&p, 0, ULMA_DEF_PY, "f", 1, "/m.py", 5, 1);
	const uint32_t lines[] = {UINT32_MAX - 1, UINT32_MAX, 0, 5, UINT32_MAX, UINT32_MAX - 70000, 0};
	uint64_t t = 100;
	ulma_profile_enter(&p, 0, 0, t);
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		CHECK(ulma_profile_line(&p, 0, t += 10, lines[i], true) == 0, "line %u", lines[i]);
	ulma_profile_exit(&p, 0, t += 10);
	const struct ulma_line_row *top = row(&p, 0, UINT32_MAX), *zero = row(&p, 0, 0), *five = row(&p, 0, 5);
	CHECK(top && zero && five && top->hits == 2 && zero->hits == 2 && five->hits == 1,
	      "each line its own row: 2^32 - 1 and 0 hit twice, 5 once");
	CHECK_EQ_U64(p.lines->nrows, 5, "five lines, five rows");
	ulma_profile_free(&p);
}

int main(void)
{
	test_loop();
	test_lines_near_the_top();
	test_allocations();
	test_resume_and_off();
	return tap_done();
}
