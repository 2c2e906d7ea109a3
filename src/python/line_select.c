/* line_select.c - choose the code objects traced line by line (line_select.h).
 *
 * A pattern is one of (docs/lines.md, "Choosing code"):
 *   all            every code object of the program's own files: not the
 *                  standard library, site-packages or dist-packages, ulma,
 *                  nor a pseudo-file such as <string> or <frozen ...>;
 *   a file glob    it holds a '/' or ends in ".py": every code object of
 *                  the files it matches, absolute (a relative pattern is
 *                  taken from the cwd at start) or as a path's tail after
 *                  a '/' ("pkg/mod_*.py");
 *   a name glob    matched against the code's qualified name, against
 *                  "module.qualname" and against the module alone (which
 *                  chooses all of the module).
 * Globs are fnmatch's, as Python's: '*' crosses '/' and '.'.  A module is
 * named from its file: the path under the longest sys.path entry that
 * holds it, ".py" and a last ".__init__" dropped, '/' read as '.'; the
 * main script is its stem and also __main__.
 *
 * What a file means for the patterns (its module, which patterns the file
 * alone matches) is worked out once, the first time one of its code
 * objects is judged, and kept in a dict by file name; judging a code
 * object then costs a few fnmatch calls on its name.  Chosen code objects
 * are kept (strong references, for the hook to undo its instrumentation at
 * stop) in a list, found by address in an idmap, and their ids are bits of
 * `ulma_lines.chosen` for the hooks' test.
 */
#include "line_select.h"

#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ulma/shm.h"

struct ulma_lines ulma_lines;

enum pattern_kind {
	PATTERN_ALL,  /* "all" */
	PATTERN_PATH, /* a file glob */
	PATTERN_NAME, /* a dotted-name glob */
	PATTERN_CODE, /* a function object given inline: its code object */
};

struct pattern {
	enum pattern_kind kind;
	char *text;        /* as given: the name its ULMA_DEF_LINES_MATCHED carries */
	char *abs;         /* PATTERN_PATH: the glob made absolute and normal */
	PyObject *code;    /* PATTERN_CODE: the code object, owned */
	uint32_t chosen;   /* code objects chosen for it in this session */
};

/* Everything one session's choice holds; released by forget(). */
static struct {
	struct pattern *patterns;
	size_t npatterns;
	PyObject *chosen;           /* list of the chosen code objects, or NULL */
	struct ulma_idmap chosen_at; /* code object address -> 1 */
	PyObject *files;            /* co_filename -> its file facts (file_facts), or NULL */
	PyObject *pending;          /* code objects that got an id before the choice began, or NULL */
	/* what patterns are resolved against, captured at start */
	char cwd[PATH_MAX];
	char **roots; /* sys.path entries, absolute and normal */
	size_t nroots;
	char **skipped_dirs; /* the standard library's directories and ulma's package: not "all" */
	size_t nskipped;
} sel;

/* Code objects marked with @ulma.lines: a list for the life of the process. */
static PyObject *marked;

static void set_failure(uint32_t bit)
{
	if (ulma_rt.session.hdr)
		atomic_fetch_or_explicit(&ulma_rt.session.hdr->failures, bit, memory_order_relaxed);
}

static void free_strings(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Append a copy of s to *v.  0, or -1 (out of memory). */
static int push_string(char ***v, size_t *n, const char *s)
{
	char *copy = strdup(s);
	char **grown = copy ? realloc(*v, (*n + 1) * sizeof(**v)) : NULL;
	if (!grown) {
		free(copy);
		return -1;
	}
	grown[(*n)++] = copy;
	*v = grown;
	return 0;
}

static void forget(void)
{
	for (size_t i = 0; i < sel.npatterns; i++) {
		free(sel.patterns[i].text);
		free(sel.patterns[i].abs);
		Py_XDECREF(sel.patterns[i].code);
	}
	free(sel.patterns);
	sel.patterns = NULL;
	sel.npatterns = 0;
	Py_CLEAR(sel.chosen);
	Py_CLEAR(sel.files);
	Py_CLEAR(sel.pending);
	ulma_idmap_free(&sel.chosen_at);
	free_strings(sel.roots, sel.nroots);
	free_strings(sel.skipped_dirs, sel.nskipped);
	sel.roots = sel.skipped_dirs = NULL;
	sel.nroots = sel.nskipped = 0;
	free(ulma_lines.chosen);
	ulma_lines.chosen = NULL;
	ulma_lines.id_limit = 0;
	ulma_lines.on = false;
}

/* Ids are dense, one per function of the session: a bitmap this large
 * (32 MiB) would be a runaway id. */
#define MAX_ID_LIMIT (UINT32_C(1) << 28)

/* Set the bit of `id` in the chosen bitmap, growing it. */
static void mark_id(uint32_t id)
{
	if (id == 0 || id == ULMA_ID_SKIP)
		return;
	if (id >= ulma_lines.id_limit) {
		uint32_t limit = ulma_lines.id_limit ? ulma_lines.id_limit : 1024;
		while (limit <= id && limit < MAX_ID_LIMIT)
			limit *= 2;
		uint64_t *bits = limit > id ? realloc(ulma_lines.chosen, limit / 8) : NULL;
		if (!bits) {
			set_failure(ULMA_FAIL_NOMEM);
			return;
		}
		memset(bits + ulma_lines.id_limit / 64, 0, (limit - ulma_lines.id_limit) / 8);
		ulma_lines.chosen = bits;
		ulma_lines.id_limit = (uint32_t)limit;
	}
	ulma_lines.chosen[id >> 6] |= UINT64_C(1) << (id & 63);
}

/* The id co already has in this session, or 0. */
static uint32_t cached_id(PyCodeObject *co)
{
	void *extra;
	if (ULMA_CODE_GET_EXTRA((PyObject *)co, ulma_tracer.extra_index, &extra) < 0) {
		PyErr_Clear();
		return 0;
	}
	uintptr_t v = (uintptr_t)extra;
	return (uint32_t)(v >> 32) == ulma_tracer.generation ? (uint32_t)v : 0;
}

/* Choose co and every code object nested in it, counting them for p (if
 * any).  0, or -1 with an exception (the hook could not watch it). */
static int choose(PyCodeObject *co, struct pattern *p)
{
	uint32_t one;
	uint64_t key = (uint64_t)(uintptr_t)co;
	if (ulma_idmap_get(&sel.chosen_at, key, &one))
		return 0;
	if (ulma_idmap_put(&sel.chosen_at, key, 1) < 0 || PyList_Append(sel.chosen, (PyObject *)co) < 0) {
		PyErr_Clear();
		set_failure(ULMA_FAIL_NOMEM);
		return 0;
	}
	if (p)
		p->chosen++;
	if (ulma_hook_lines_watch(co) < 0)
		return -1;
	mark_id(cached_id(co));
	PyObject *consts = co->co_consts;
	for (Py_ssize_t i = 0; consts && PyTuple_Check(consts) && i < PyTuple_GET_SIZE(consts); i++) {
		PyObject *c = PyTuple_GET_ITEM(consts, i);
		if (PyCode_Check(c) && choose((PyCodeObject *)c, p) < 0)
			return -1;
	}
	return 0;
}

/* ---- paths ---- */

/* `path` made absolute (against the cwd at start) and normal ("." and ".."
 * steps and repeated '/' removed), into out[PATH_MAX].  False if too long. */
static bool normal_path(const char *path, char *out)
{
	char joined[2 * PATH_MAX];
	int n = path[0] == '/' ? snprintf(joined, sizeof(joined), "%s", path)
			       : snprintf(joined, sizeof(joined), "%s/%s", sel.cwd, path);
	if (n < 0 || (size_t)n >= sizeof(joined))
		return false;
	size_t len = 0;
	for (const char *s = joined; *s;) {
		while (*s == '/')
			s++;
		const char *end = strchr(s, '/');
		size_t step = end ? (size_t)(end - s) : strlen(s);
		if (step == 0 || (step == 1 && s[0] == '.')) {
			/* nothing */
		} else if (step == 2 && s[0] == '.' && s[1] == '.') {
			while (len > 0 && out[--len] != '/')
				;
		} else {
			if (len + 1 + step >= PATH_MAX)
				return false;
			out[len++] = '/';
			memcpy(out + len, s, step);
			len += step;
		}
		s += step;
	}
	if (len == 0)
		out[len++] = '/';
	out[len] = 0;
	return true;
}

/* Whether `dir` (normal) holds `path` (normal). */
static bool is_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1) /* "/" */
		return true;
	return strncmp(path, dir, n) == 0 && path[n] == '/';
}

/* Capture sys.path, the standard library's directories and ulma's
 * package directory.  Entries that are not str, or too long, are
 * left out.  0, or -1 (out of memory). */
static int capture_places(void)
{
	char normal[PATH_MAX];
	PyObject *path = PySys_GetObject("path"); /* borrowed */
	for (Py_ssize_t i = 0; path && PyList_Check(path) && i < PyList_GET_SIZE(path); i++) {
		PyObject *entry = PyList_GET_ITEM(path, i);
		const char *s = PyUnicode_Check(entry) ? PyUnicode_AsUTF8(entry) : NULL;
		if (!s) {
			PyErr_Clear();
			continue;
		}
		if (normal_path(s, normal) && push_string(&sel.roots, &sel.nroots, normal) < 0)
			return -1;
	}
	static const char *const prefixes[] = {"prefix", "base_prefix", "exec_prefix", "base_exec_prefix"};
	static const char *const libs[] = {"lib", "lib64"};
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		PyObject *prefix = PySys_GetObject(prefixes[i]);
		const char *s = prefix && PyUnicode_Check(prefix) ? PyUnicode_AsUTF8(prefix) : NULL;
		if (!s) {
			PyErr_Clear();
			continue;
		}
		for (size_t j = 0; j < 2; j++) {
			char dir[PATH_MAX];
			int n = snprintf(dir, sizeof(dir), "%s/%s/python%d.%d", s, libs[j], PY_MAJOR_VERSION,
					 PY_MINOR_VERSION);
			if (n > 0 && (size_t)n < sizeof(dir) && normal_path(dir, normal) &&
			    push_string(&sel.skipped_dirs, &sel.nskipped, normal) < 0)
				return -1;
		}
	}
	/* ulma's own package: this extension's directory */
	PyObject *name = PyUnicode_FromString("ulma");
	PyObject *ulma = name ? PyImport_GetModule(name) : NULL;
	Py_XDECREF(name);
	PyObject *file = ulma ? PyDict_GetItemString(PyModule_GetDict(ulma), "__file__") : NULL;
	const char *s = file && PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : NULL;
	if (s && normal_path(s, normal)) {
		*strrchr(normal, '/') = 0;
		if (push_string(&sel.skipped_dirs, &sel.nskipped, normal[0] ? normal : "/") < 0) {
			Py_XDECREF(ulma);
			return -1;
		}
	}
	Py_XDECREF(ulma);
	PyErr_Clear();
	return 0;
}

/* ---- what a file means for the patterns ---- */

/* A file's facts, as the bytes of a str-keyed dict value: FACT_* flags,
 * then one byte per pattern (1: the file alone matches it), then the
 * module's name, NUL-terminated (empty for a pseudo-file). */
enum { FACT_MAIN = 1 }; /* the main script's: its module is __main__ too */

/* The main script: __main__'s __file__, read without running any code. */
static bool main_file(char *out)
{
	PyObject *name = PyUnicode_FromString("__main__");
	PyObject *main = name ? PyImport_GetModule(name) : NULL;
	Py_XDECREF(name);
	PyObject *file = main && PyModule_Check(main) ? PyDict_GetItemString(PyModule_GetDict(main), "__file__") : NULL;
	const char *s = file && PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : NULL;
	bool ok = s && normal_path(s, out);
	Py_XDECREF(main);
	PyErr_Clear();
	return ok;
}

/* The module a file (normal) defines, into out[PATH_MAX]: see the top. */
static void module_of(const char *path, bool is_main, char *out)
{
	const char *rel = strrchr(path, '/') + 1; /* the stem: the main script's name, or no root holds it */
	if (!is_main) {
		size_t best = 0;
		for (size_t i = 0; i < sel.nroots; i++) {
			size_t n = strlen(sel.roots[i]);
			if (n > best && is_under(path, sel.roots[i])) {
				best = n;
				rel = path + (n == 1 ? 1 : n + 1);
			}
		}
	}
	size_t len = strlen(rel);
	if (len > 3 && strcmp(rel + len - 3, ".py") == 0)
		len -= 3;
	memcpy(out, rel, len);
	out[len] = 0;
	for (char *c = out; *c; c++)
		if (*c == '/')
			*c = '.';
	if (len > 9 && strcmp(out + len - 9, ".__init__") == 0)
		out[len - 9] = 0;
}

/* Whether a file is the program's own, for "all". */
static bool is_own(const char *path)
{
	if (strstr(path, "/site-packages/") || strstr(path, "/dist-packages/"))
		return false;
	for (size_t i = 0; i < sel.nskipped; i++)
		if (is_under(path, sel.skipped_dirs[i]))
			return false;
	return true;
}

/* A file glob matches the path absolutely, or a tail of it after a '/'. */
static bool path_matches(const struct pattern *p, const char *path)
{
	if (p->abs && fnmatch(p->abs, path, FNM_NOESCAPE) == 0)
		return true;
	for (const char *slash = strchr(path, '/'); slash; slash = strchr(slash + 1, '/'))
		if (fnmatch(p->text, slash + 1, FNM_NOESCAPE) == 0)
			return true;
	return false;
}

/* Work out the facts of the file `filename` names.  A new reference to
 * its bytes, or NULL with an exception. */
static PyObject *file_facts(PyObject *filename)
{
	char path[PATH_MAX], main_path[PATH_MAX], module[PATH_MAX];
	Py_ssize_t flen;
	const char *f = PyUnicode_Check(filename) ? PyUnicode_AsUTF8AndSize(filename, &flen) : NULL;
	PyErr_Clear();
	bool pseudo = !f || flen == 0 || (size_t)flen != strlen(f) || f[0] == '<' || !normal_path(f, path);
	bool is_main = !pseudo && main_file(main_path) && strcmp(path, main_path) == 0;
	module[0] = 0;
	if (!pseudo)
		module_of(path, is_main, module);
	size_t mlen = strlen(module);
	PyObject *facts = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(1 + sel.npatterns + mlen + 1));
	if (!facts)
		return NULL;
	char *b = PyBytes_AS_STRING(facts);
	b[0] = is_main ? FACT_MAIN : 0;
	for (size_t i = 0; i < sel.npatterns; i++) {
		const struct pattern *p = &sel.patterns[i];
		bool hit = false;
		if (!pseudo && p->kind == PATTERN_ALL)
			hit = is_own(path);
		else if (!pseudo && p->kind == PATTERN_PATH)
			hit = path_matches(p, path);
		else if (!pseudo && p->kind == PATTERN_NAME)
			hit = fnmatch(p->text, module, FNM_NOESCAPE) == 0 ||
			      (is_main && fnmatch(p->text, "__main__", FNM_NOESCAPE) == 0);
		b[1 + i] = hit;
	}
	memcpy(b + 1 + sel.npatterns, module, mlen + 1);
	return facts;
}

/* Whether a name glob matches "prefix.qualname" (prefix non-empty). */
static bool dotted_matches(const char *pattern, const char *prefix, const char *qualname)
{
	char small[512];
	size_t plen = strlen(prefix), qlen = strlen(qualname), len = plen + 1 + qlen;
	char *name = len < sizeof(small) ? small : malloc(len + 1);
	if (!name) {
		set_failure(ULMA_FAIL_NOMEM);
		return false;
	}
	memcpy(name, prefix, plen);
	name[plen] = '.';
	memcpy(name + plen + 1, qualname, qlen + 1);
	bool hit = fnmatch(pattern, name, FNM_NOESCAPE) == 0;
	if (name != small)
		free(name);
	return hit;
}

/* Choose co for every pattern it matches (counted for each).  Never raises. */
static void judge(PyCodeObject *co)
{
	PyObject *facts = PyDict_GetItemWithError(sel.files, co->co_filename); /* borrowed */
	if (!facts) {
		if (PyErr_Occurred() || !(facts = file_facts(co->co_filename))) {
			PyErr_Clear();
			set_failure(ULMA_FAIL_NOMEM);
			return;
		}
		int err = PyDict_SetItem(sel.files, co->co_filename, facts);
		Py_DECREF(facts); /* the dict holds it, or it goes: we are done with it either way */
		if (err < 0) {
			PyErr_Clear();
			set_failure(ULMA_FAIL_NOMEM);
			return;
		}
	}
	const char *b = PyBytes_AS_STRING(facts);
	const char *module = b + 1 + sel.npatterns;
#if PY_VERSION_HEX >= 0x030B0000
	PyObject *qualname_obj = co->co_qualname;
#else
	PyObject *qualname_obj = co->co_name;
#endif
	const char *qualname = PyUnicode_Check(qualname_obj) ? PyUnicode_AsUTF8(qualname_obj) : NULL;
	PyErr_Clear();
	struct pattern *first = NULL;
	for (size_t i = 0; i < sel.npatterns; i++) {
		struct pattern *p = &sel.patterns[i];
		bool hit = b[1 + i];
		if (!hit && p->kind == PATTERN_NAME && qualname)
			hit = fnmatch(p->text, qualname, FNM_NOESCAPE) == 0 ||
			      (module[0] && dotted_matches(p->text, module, qualname)) ||
			      ((b[0] & FACT_MAIN) && dotted_matches(p->text, "__main__", qualname));
		if (!hit)
			continue;
		if (first)
			p->chosen++; /* chosen already, for the first pattern it matched */
		else
			first = p;
	}
	if (first && choose(co, first) < 0) {
		PyErr_Clear();
		set_failure(ULMA_FAIL_NOMEM);
	}
}

void ulma_lines_consider(PyCodeObject *co, uint32_t id)
{
	uint32_t one;
	if (ULMA_UNLIKELY(sel.pending != NULL)) { /* judged when the choice begins */
		if (PyList_Append(sel.pending, (PyObject *)co) < 0) {
			PyErr_Clear();
			set_failure(ULMA_FAIL_NOMEM);
		}
	} else if (ulma_idmap_get(&sel.chosen_at, (uint64_t)(uintptr_t)co, &one))
		mark_id(id); /* chosen with the code it is nested in, or given directly */
	else if (sel.npatterns && sel.files)
		judge(co);
}

/* ---- starting and stopping ---- */

static int add_pattern(enum pattern_kind kind, const char *text, size_t len, PyObject *code)
{
	for (size_t i = 0; i < sel.npatterns; i++)
		if (sel.patterns[i].code == code && strlen(sel.patterns[i].text) == len &&
		    memcmp(sel.patterns[i].text, text, len) == 0)
			return 0; /* given twice */
	struct pattern *grown = realloc(sel.patterns, (sel.npatterns + 1) * sizeof(*grown));
	if (!grown)
		return -1;
	sel.patterns = grown;
	struct pattern *p = &sel.patterns[sel.npatterns];
	*p = (struct pattern){.kind = kind, .text = strndup(text, len)};
	if (!p->text)
		return -1;
	sel.npatterns++;
	if (kind == PATTERN_PATH) {
		char normal[PATH_MAX];
		if (normal_path(p->text, normal) && !(p->abs = strdup(normal)))
			return -1;
	}
	p->code = code;
	Py_XINCREF(code);
	return 0;
}

/* The session's --lines patterns (ULMA_DEF_LINES_WANTED).  0 or -1. */
static int read_wanted(void)
{
	uint64_t cursor = 0;
	struct ulma_def_view d;
	while (ulma_session_next_def(&ulma_rt.session, &cursor, &d) == 1) {
		if (d.kind != ULMA_DEF_LINES_WANTED || d.name_len == 0 || memchr(d.name, 0, d.name_len))
			continue;
		enum pattern_kind kind = PATTERN_NAME;
		if (d.name_len == 3 && memcmp(d.name, "all", 3) == 0)
			kind = PATTERN_ALL;
		else if (memchr(d.name, '/', d.name_len) ||
			 (d.name_len >= 3 && memcmp(d.name + d.name_len - 3, ".py", 3) == 0))
			kind = PATTERN_PATH;
		if (add_pattern(kind, d.name, d.name_len, NULL) < 0)
			return -1;
	}
	return 0;
}

/* The inline (name, code) pairs.  0, or -1 with an exception. */
static int read_inline(PyObject *pairs)
{
	PyObject *seq = PySequence_Fast(pairs, "ulma: lines must be a sequence of (name, code) pairs");
	if (!seq)
		return -1;
	for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
		PyObject *pair = PySequence_Fast_GET_ITEM(seq, i);
		PyObject *name = PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2 ? PyTuple_GET_ITEM(pair, 0) : NULL;
		PyObject *code = name ? PyTuple_GET_ITEM(pair, 1) : NULL;
		Py_ssize_t len;
		const char *text = name && PyUnicode_Check(name) && PyCode_Check(code) ? PyUnicode_AsUTF8AndSize(name, &len)
										     : NULL;
		if (!text) {
			if (!PyErr_Occurred())
				PyErr_SetString(PyExc_TypeError, "ulma: lines must be a sequence of (name, code) pairs");
			Py_DECREF(seq);
			return -1;
		}
		if (add_pattern(PATTERN_CODE, text, (size_t)len, code) < 0) {
			Py_DECREF(seq);
			PyErr_NoMemory();
			return -1;
		}
	}
	Py_DECREF(seq);
	return 0;
}

/* Turn line tracing on for this session, with no code chosen yet. */
static int switch_on(void)
{
	if (ulma_lines.on)
		return 0;
	if (!sel.chosen && !(sel.chosen = PyList_New(0)))
		return -1;
	ulma_lines.epoch++;
	ulma_lines.on = true;
	return 0;
}

int ulma_lines_prepare(PyObject *inline_codes)
{
	forget();
	if (!getcwd(sel.cwd, sizeof(sel.cwd))) /* what relative paths are taken from */
		strcpy(sel.cwd, "/");
	if (read_wanted() < 0) {
		PyErr_NoMemory();
		goto fail;
	}
	if (inline_codes && read_inline(inline_codes) < 0)
		goto fail;
	if (!sel.npatterns && !(marked && PyList_GET_SIZE(marked)))
		return 0; /* nothing to choose: the hooks pay one test */
	if (capture_places() < 0) {
		PyErr_NoMemory();
		goto fail;
	}
	if (!(sel.files = PyDict_New()) || !(sel.pending = PyList_New(0)) || switch_on() < 0)
		goto fail;
	return 0;
fail:
	forget();
	return -1;
}

int ulma_lines_start(void)
{
	PyObject *pending = sel.pending;
	if (!pending)
		return 0; /* nothing to choose */
	sel.pending = NULL;
	for (size_t i = 0; i < sel.npatterns; i++)
		if (sel.patterns[i].code && choose((PyCodeObject *)sel.patterns[i].code, &sel.patterns[i]) < 0)
			goto fail;
	for (Py_ssize_t i = 0; marked && i < PyList_GET_SIZE(marked); i++)
		if (choose((PyCodeObject *)PyList_GET_ITEM(marked, i), NULL) < 0)
			goto fail;
	for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pending); i++) {
		PyCodeObject *co = (PyCodeObject *)PyList_GET_ITEM(pending, i);
		ulma_lines_consider(co, cached_id(co));
	}
	Py_DECREF(pending);
	return 0;
fail:
	Py_DECREF(pending);
	ulma_hook_lines_end(sel.chosen);
	forget();
	return -1;
}

void ulma_lines_stop(void)
{
	if (sel.chosen)
		ulma_hook_lines_end(sel.chosen);
	bool began = !sel.pending; /* else start() failed before the choice began: nothing to tell */
	for (size_t i = 0; began && ulma_rt.session.hdr && i < sel.npatterns; i++) {
		const struct pattern *p = &sel.patterns[i];
		ulma_session_define(&ulma_rt.session, ULMA_DEF_LINES_MATCHED, p->text, strlen(p->text), "", 0,
				    p->chosen);
	}
	forget();
}

PyObject *ulma_lines_mark(PyObject *module, PyObject *code)
{
	(void)module;
	if (!PyCode_Check(code)) {
		PyErr_SetString(PyExc_TypeError, "ulma: _lines_mark takes a code object");
		return NULL;
	}
	if (!marked && !(marked = PyList_New(0)))
		return NULL;
	for (Py_ssize_t i = 0; i < PyList_GET_SIZE(marked); i++)
		if (PyList_GET_ITEM(marked, i) == code)
			Py_RETURN_NONE;
	if (PyList_Append(marked, code) < 0)
		return NULL;
	if (ulma_rt.active && (switch_on() < 0 || choose((PyCodeObject *)code, NULL) < 0))
		return NULL;
	Py_RETURN_NONE;
}
