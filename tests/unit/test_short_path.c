/* test_short_path.c - folded's frame files and recursion:
 * ulma_short_path's rules (src/analysis/short_path.h) on known paths, and
 * ulma_calltree_fold_recursion (calltree.h) on a tree with direct and
 * mutual recursion, whose folded nodes keep every call and the self time. */
#include <string.h>

#include "analysis/calltree.h"
#include "analysis/short_path.h"
#include "tap.h"

static void expect(const char *dir, const char *path, const char *want)
{
	const char *prefix, *tail = ulma_short_path(dir, path, &prefix);
	char got[512];
	snprintf(got, sizeof(got), "%s%s", prefix, tail);
	CHECK(strcmp(got, want) == 0, "%s -> %s (got %s)", path, want, got);
}

/* The node of the stack keys[0..n) under the root, or 0. */
static uint32_t node_of(const struct ulma_calltree *t, const uint32_t *keys, unsigned n)
{
	uint32_t at = ULMA_CALLTREE_ROOT;
	for (unsigned i = 0; i < n; i++) {
		uint32_t c = t->nodes[at].first_child;
		while (c && t->nodes[c].key != keys[i])
			c = t->nodes[c].next_sibling;
		if (!c)
			return 0;
		at = c;
	}
	return at;
}

int main(void)
{
	const char *app = "/home/u/app";
	expect(app, "/home/u/app/main.py", "main.py");
	expect(app, "/home/u/app/pkg/mod.py", "pkg/mod.py");
	expect(app, "/home/u/application/x.py", "/home/u/application/x.py");
	expect(app, "/usr/lib/python3.12/json/decoder.py", "<stdlib>/json/decoder.py");
	expect(app, "/root/.pyenv/versions/3.9.18/lib/python3.9/threading.py", "<stdlib>/threading.py");
	expect(app, "/v/lib/python3.12/site-packages/black/linegen.py", "<site>/black/linegen.py");
	expect(app, "/usr/lib/python3/dist-packages/yaml/reader.py", "<site>/yaml/reader.py");
	expect(app, "/v/lib/python3.12/site-packages/a/site-packages/b.py", "<site>/b.py");
	expect(app, "<frozen importlib._bootstrap>", "<frozen importlib._bootstrap>");
	expect(NULL, "/home/u/app/main.py", "/home/u/app/main.py");
	expect("", "/lib/pythonic/x.py", "/lib/pythonic/x.py");

	/* main -> f -> f -> f -> g -> f, and main -> g: keys 1 main, 2 f, 3 g */
	struct ulma_calltree t, folded;
	CHECK_EQ_I64(ulma_calltree_init(&t), 0, "tree");
	CHECK_EQ_I64(ulma_calltree_init(&folded), 0, "folded tree");
	static const uint32_t path[] = {1, 2, 2, 2, 3, 2};
	uint64_t ns = 0;
	for (unsigned i = 0; i < 6; i++)
		CHECK_EQ_I64(ulma_calltree_enter(&t, 0, path[i], ns += 10), 0, "enter");
	for (unsigned i = 0; i < 5; i++)
		ulma_calltree_leave(&t, 0, ns += 10);
	CHECK_EQ_I64(ulma_calltree_enter(&t, 0, 3, ns += 10), 0, "enter g from main");
	ulma_calltree_leave(&t, 0, ns += 10);
	ulma_calltree_leave(&t, 0, ns += 10);
	CHECK_EQ_I64(ulma_calltree_fold_recursion(&folded, &t), 0, "folded");
	CHECK_EQ_U64(folded.nnodes, 6, "root, main, main;f, main;f;g, main;f;g;f, main;g");
	uint32_t mf[] = {1, 2}, mfgf[] = {1, 2, 3, 2}, mg[] = {1, 3};
	uint32_t n = node_of(&folded, mf, 2);
	CHECK(n && folded.nodes[n].calls == 3, "f's three levels are one node of 3 calls");
	CHECK(n && folded.nodes[n].self_ns == 60, "their self time: 20 each (f3 less g's 30)");
	CHECK(n && folded.nodes[n].total_ns == 90, "its total is the outermost f's (20 to 110)");
	n = node_of(&folded, mfgf, 4);
	CHECK(n && folded.nodes[n].calls == 1, "f under g stays: mutual recursion is not folded");
	n = node_of(&folded, mg, 2);
	CHECK(n && folded.nodes[n].calls == 1 && folded.nodes[n].self_ns == 10, "main;g");
	ulma_calltree_free(&t);
	ulma_calltree_free(&folded);
	return tap_done();
}
