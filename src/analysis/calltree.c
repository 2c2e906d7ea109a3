/* calltree.c - calling-context tree (see calltree.h). */
#include "calltree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ulma_calltree_init(struct ulma_calltree *t)
{
	memset(t, 0, sizeof(*t));
	t->cap = 256;
	t->nodes = calloc(t->cap, sizeof(*t->nodes));
	if (!t->nodes)
		return -ENOMEM;
	t->nodes[0].key = ULMA_WALK_NONE;
	t->nnodes = 1;
	return 0;
}

void ulma_calltree_free(struct ulma_calltree *t)
{
	for (uint32_t i = 0; i < t->nthreads; i++)
		free(t->threads[i].frames);
	free(t->threads);
	free(t->nodes);
	ulma_idmap_free(&t->children);
	memset(t, 0, sizeof(*t));
}

static int child_of(struct ulma_calltree *t, uint32_t parent, uint32_t key, uint32_t *out)
{
	uint32_t guess = t->nodes[parent].recent;
	if (guess && t->nodes[guess].key == key) { /* a loop calls the same function again and again */
		*out = guess;
		return 0;
	}
	uint64_t k = ((uint64_t)parent << 32 | key) + 1;
	if (ulma_idmap_get(&t->children, k, out)) {
		t->nodes[parent].recent = *out;
		return 0;
	}
	if (t->nnodes == UINT32_MAX)
		return -ENOMEM;
	if (t->nnodes == t->cap) {
		uint32_t ncap = t->cap > UINT32_MAX / 2 ? UINT32_MAX : t->cap * 2;
		struct ulma_ct_node *n = realloc(t->nodes, (size_t)ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->nodes = n;
		t->cap = ncap;
	}
	uint32_t id = t->nnodes;
	int err = ulma_idmap_put(&t->children, k, id);
	if (err)
		return err;
	struct ulma_ct_node *p = &t->nodes[parent];
	t->nodes[id] = (struct ulma_ct_node){.key = key, .parent = parent, .next_sibling = p->first_child,
					     .depth = p->depth + 1};
	p->first_child = id;
	p->recent = id;
	t->nnodes++;
	*out = id;
	return 0;
}

/* Room for one more open frame on thread. */
static int reserve_frame(struct ulma_calltree *t, uint32_t thread)
{
	if (thread >= t->nthreads) {
		uint32_t n = thread + 1 > t->nthreads * 2 ? thread + 1 : t->nthreads * 2;
		struct ulma_ct_thread *th = realloc(t->threads, (size_t)n * sizeof(*th));
		if (!th)
			return -ENOMEM;
		memset(th + t->nthreads, 0, (size_t)(n - t->nthreads) * sizeof(*th));
		t->threads = th;
		t->nthreads = n;
	}
	struct ulma_ct_thread *th = &t->threads[thread];
	if (th->depth == th->cap) {
		uint32_t ncap = th->cap ? th->cap * 2 : 64;
		struct ulma_ct_frame *s = realloc(th->frames, (size_t)ncap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		th->frames = s;
		th->cap = ncap;
	}
	return 0;
}

int ulma_calltree_enter_slow(struct ulma_calltree *t, uint32_t thread, uint32_t key, uint64_t ns)
{
	int err = reserve_frame(t, thread);
	if (err)
		return err;
	struct ulma_ct_thread *th = &t->threads[thread];
	if (t->per_thread && !th->root &&
	    (err = child_of(t, ULMA_CALLTREE_ROOT, ULMA_CALLTREE_THREAD_KEY(thread), &th->root)))
		return err;
	uint32_t parent = th->depth ? th->frames[th->depth - 1].node : th->root, node;
	if ((err = child_of(t, parent, key, &node)))
		return err;
	t->nodes[node].calls++;
	th->frames[th->depth++] = (struct ulma_ct_frame){node, ns, 0};
	return 0;
}

int ulma_calltree_open(struct ulma_calltree *t, const struct ulma_walk *w, uint32_t thread,
		       const struct ulma_walk_frame *f)
{
	return ulma_calltree_enter_slow(t, thread, w->funcs[f->func].key, f->start_ns);
}

int ulma_calltree_close(struct ulma_calltree *t, const struct ulma_walk *w, uint32_t thread,
			const struct ulma_walk_frame *f)
{
	(void)w;
	if (thread >= t->nthreads || t->threads[thread].depth == 0)
		return -EINVAL;
	struct ulma_ct_thread *th = &t->threads[thread];
	struct ulma_ct_node *n = &t->nodes[th->frames[--th->depth].node];
	n->self_ns += f->self_ns;
	n->total_ns += f->end_ns - f->start_ns;
	return 0;
}

static int sink_open(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	return ulma_calltree_open(ctx, w, thread, f);
}

static int sink_close(void *ctx, const struct ulma_walk *w, uint32_t thread, const struct ulma_walk_frame *f)
{
	return ulma_calltree_close(ctx, w, thread, f);
}

const struct ulma_walk_sink ulma_calltree_sink_template = {NULL, NULL, NULL, sink_open, sink_close, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};

int ulma_calltree_fold_recursion(struct ulma_calltree *to, const struct ulma_calltree *from)
{
	uint32_t *into = malloc((size_t)(from->nnodes ? from->nnodes : 1) * sizeof(*into));
	if (!into)
		return -ENOMEM;
	into[ULMA_CALLTREE_ROOT] = ULMA_CALLTREE_ROOT;
	int err = 0;
	/* a parent is made before its children, so index order visits it first */
	for (uint32_t n = 1; n < from->nnodes && !err; n++) {
		const struct ulma_ct_node *nd = &from->nodes[n];
		bool folded = nd->parent != ULMA_CALLTREE_ROOT && from->nodes[nd->parent].key == nd->key;
		if (folded)
			into[n] = into[nd->parent];
		else
			err = child_of(to, into[nd->parent], nd->key, &into[n]);
		if (err)
			break;
		struct ulma_ct_node *c = &to->nodes[into[n]];
		c->calls += nd->calls;
		c->self_ns += nd->self_ns;
		if (!folded)
			c->total_ns += nd->total_ns;
	}
	free(into);
	return err;
}

int ulma_calltree_totals(const struct ulma_calltree *t, uint32_t nkeys, struct ulma_ct_totals *out)
{
	memset(out, 0, (size_t)nkeys * sizeof(*out));
	if (t->nnodes <= 1)
		return 0;
	/* depth first with a count of open nodes per key: a node is outermost
	 * for its function when that count was 0 as it opened */
	uint32_t *active = calloc(nkeys ? nkeys : 1, sizeof(*active));
	uint32_t *stack = malloc((size_t)t->nnodes * sizeof(*stack));
	if (!active || !stack) {
		free(active);
		free(stack);
		return -ENOMEM;
	}
	uint32_t depth = 0, n = t->nodes[0].first_child;
	while (n) {
		const struct ulma_ct_node *nd = &t->nodes[n];
		if (nd->key < nkeys) {
			struct ulma_ct_totals *o = &out[nd->key];
			o->calls += nd->calls;
			o->self_ns += nd->self_ns;
			if (active[nd->key]++ == 0)
				o->total_ns += nd->total_ns;
		}
		stack[depth++] = n;
		if (nd->first_child) { /* down */
			n = nd->first_child;
			continue;
		}
		while (depth) { /* up, closing nodes, until one has a next sibling */
			uint32_t done = stack[--depth];
			if (t->nodes[done].key < nkeys)
				active[t->nodes[done].key]--;
			if (t->nodes[done].next_sibling) {
				n = t->nodes[done].next_sibling;
				break;
			}
			n = 0;
		}
	}
	free(active);
	free(stack);
	return 0;
}
