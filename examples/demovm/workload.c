/* workload.c: demovm's classes, method bodies and ops (workload.h). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "intern.h"
#include "workload.h"

static struct vm_class *k_object, *k_point, *k_float, *k_string, *k_array, *k_hash,
	*k_node, *k_geometry, *k_parser, *k_report, *k_tree, *k_matrix, *k_cache, *k_bench,
	*k_session, *k_registry;
static const struct vm_method *m_main;

/* Call sites of the program, each with its own method cache per thread. */
enum call_site {
	CALL_TRANSLATE,
	CALL_POLYGON,
	CALL_TOKENIZE,
	CALL_RENDER,
	CALL_BUILD,
	CALL_MULTIPLY,
	CALL_FILL,
	CALL_CHURN,
	CALL_INSPECT,
	CALL_CONCAT,
	CALL_GROW,
	CALL_INSPECT_REPORT,
	CALL_REMEMBER,
	CALL__COUNT
};
_Static_assert(CALL__COUNT <= VM_CALL_SITES, "too many call sites");

/* Constant reads of the program, each with its own constant cache. */
enum constant_site { CREAD_SCALE, CREAD_LIMIT, CREAD_EPSILON, CREAD__COUNT };
_Static_assert(CREAD__COUNT <= VM_CONSTANT_SITES, "too many constant sites");

/* Allocate into var, charged to the running method, with this line as site
 * (and this line's own key cache: one class and method per line). */
#define NEW(var, klass, len)                                                   \
	do {                                                                   \
		static struct vmtrace_key_cache key_;                          \
		const char *where_;                                            \
		VM_SITE_OF_THIS_LINE(where_);                                  \
		(var) = vm_new(t, (klass), (len), where_, &key_);              \
	} while (0)

static void set_double(struct obj *o, double v)
{
	memcpy(obj_bytes(o), &v, sizeof(v));
}

static double get_double(struct obj *o)
{
	double v;
	memcpy(&v, obj_bytes(o), sizeof(v));
	return v;
}

static double random_unit(struct vm_thread *t)
{
	return (double)(vm_random(t) >> 11) / 9007199254740992.0;
}

static void fill_letters(struct vm_thread *t, struct obj *s)
{
	unsigned char *b = obj_bytes(s);
	for (unsigned i = 0; i < s->len; i++)
		b[i] = (unsigned char)('a' + vm_random_below(t, 26));
	b[s->len] = '\0';
}

/* ---- method bodies ---- */

/* Object#inspect: a short String describing self. */
static struct obj *object_inspect(struct vm_thread *t, struct obj *self, struct obj *other, uint64_t n)
{
	(void)other;
	struct obj *s;
	unsigned len = 8 + (unsigned)(n % 24);

	NEW(s, k_string, len);
	snprintf((char *)obj_bytes(s), len + 1, "#<%s len=%u>",
		 self ? self->klass->name : "nil", self ? self->len : 0);
	return s;
}

/* Geometry#translate: a few Points moved by SCALE, and their spread as a Float. */
static struct obj *geometry_translate(struct vm_thread *t, struct obj *self, struct obj *other, uint64_t n)
{
	(void)self, (void)other;
	double scale = vm_constant_get(&t->constant_caches[CREAD_SCALE], VM_CONST_SCALE);
	unsigned count = 1 + (unsigned)(n % 4);
	double sum = 0;
	struct obj *p, *f;

	for (unsigned i = 0; i < count; i++) {
		NEW(p, k_point, 0);
		vm_push(t, p);
		double xy[2] = { random_unit(t) * scale, random_unit(t) * scale };
		memcpy(obj_bytes(p), xy, sizeof(xy));
		sum += xy[0] + xy[1];
	}
	NEW(f, k_float, 0);
	set_double(f, sum / count);
	t->checksum += sum;
	return f;
}

/* Geometry#polygon: an Array of 3..8 Points. */
static struct obj *geometry_polygon(struct vm_thread *t, struct obj *self, struct obj *other, uint64_t n)
{
	(void)self, (void)other;
	unsigned sides = 3 + (unsigned)(n % 6);
	struct obj *poly, *p;

	NEW(poly, k_array, sides);
	vm_push(t, poly);
	for (unsigned i = 0; i < sides; i++) {
		NEW(p, k_point, 0);
		double xy[2] = { (double)i, random_unit(t) };
		memcpy(obj_bytes(p), xy, sizeof(xy));
		poly->ref[i] = p;
	}
	return poly;
}

/* Parser#tokenize: an Array of 2..7 String tokens, then inspect (found on Object). */
static struct obj *parser_tokenize(struct vm_thread *t, struct obj *self, struct obj *other, uint64_t n)
{
	(void)self, (void)other;
	unsigned count = 2 + (unsigned)(n % 6);
	struct obj *tokens, *s;

	NEW(tokens, k_array, count);
	vm_push(t, tokens);
	for (unsigned i = 0; i < count; i++) {
		NEW(s, k_string, 1 + vm_random_below(t, 40));
		fill_letters(t, s);
		tokens->ref[i] = s;
	}
	vm_send(t, &t->method_caches[CALL_INSPECT], k_parser, "inspect", tokens, NULL, n);
	return tokens;
}

/* String#concat: a new String holding self then other. */
static struct obj *string_concat(struct vm_thread *t, struct obj *self, struct obj *other, uint64_t n)
{
	(void)n;
	unsigned len = self->len + other->len;
	struct obj *s;

	if (len > VM_MAX_LENGTH)
		len = VM_MAX_LENGTH;
	NEW(s, k_string, len);
	unsigned head = self->len < len ? self->len : len;
	memcpy(obj_bytes(s), obj_bytes(self), head);
	memcpy(obj_bytes(s) + head, obj_bytes(other), len - head);
	obj_bytes(s)[len] = '\0';
	return s;
}

/* Report#render: a Hash of 2..5 lines, each a key String and key + value. */
static struct obj *report_render(struct vm_thread *t, struct obj *self, struct obj *other, uint64_t n)
{
	(void)self, (void)other;
	unsigned lines = 2 + (unsigned)(n % 4);
	struct obj *h, *key, *value;

	NEW(h, k_hash, lines);
	vm_push(t, h);
	for (unsigned i = 0; i < lines; i++) {
		NEW(key, k_string, 4 + vm_random_below(t, 8));
		fill_letters(t, key);
		h->ref[2 * i] = key;
		NEW(value, k_string, 8 + vm_random_below(t, 32));
		fill_letters(t, value);
		vm_push(t, value);
		h->ref[2 * i + 1] = vm_send(t, &t->method_caches[CALL_CONCAT], k_string,
					    "concat", key, value, 0);
	}
	t->checksum += vm_constant_get(&t->constant_caches[CREAD_EPSILON], VM_CONST_EPSILON);
	/* Object#inspect again, from a second caller */
	vm_send(t, &t->method_caches[CALL_INSPECT_REPORT], k_report, "inspect", h, NULL, n);
	return h;
}

/* Tree#grow: a subtree of n levels, each level a recursive call (so each
 * depth is its own VM stack). */
static struct obj *tree_grow(struct vm_thread *t, struct obj *self, struct obj *other, uint64_t depth)
{
	(void)self, (void)other;
	struct obj *left, *right, *node;

	if (depth == 0)
		return NULL;
	left = vm_send(t, &t->method_caches[CALL_GROW], k_tree, "grow", NULL, NULL, depth - 1);
	vm_push(t, left);
	right = vm_send(t, &t->method_caches[CALL_GROW], k_tree, "grow", NULL, NULL, depth - 1);
	vm_push(t, right);
	NEW(node, k_node, 0);
	node->ref[0] = left;
	node->ref[1] = right;
	set_double(node, (double)depth);
	return node;
}

/* Tree#build: a binary tree of 2..6 levels of Nodes, kept in a global slot
 * (replacing the tree it held, which becomes garbage of the old generation). */
static struct obj *tree_build(struct vm_thread *t, struct obj *self, struct obj *other, uint64_t n)
{
	(void)self, (void)other;
	unsigned slot = vm_random_below(t, 6);
	struct obj *root = vm_send(t, &t->method_caches[CALL_GROW], k_tree, "grow", NULL, NULL,
				   2 + (unsigned)(n % 5));

	t->globals[slot] = root;
	return root;
}

/* Matrix#multiply: a dim x dim Array of Arrays of Floats, dim 2..5, and its trace. */
static struct obj *matrix_multiply(struct vm_thread *t, struct obj *self, struct obj *other, uint64_t n)
{
	(void)self, (void)other;
	unsigned dim = 2 + (unsigned)(n % 4);
	double limit = vm_constant_get(&t->constant_caches[CREAD_LIMIT], VM_CONST_LIMIT);
	struct obj *rows, *row, *f;
	double trace = 0;

	NEW(rows, k_array, dim);
	vm_push(t, rows);
	for (unsigned i = 0; i < dim; i++) {
		NEW(row, k_array, dim);
		rows->ref[i] = row;
		for (unsigned j = 0; j < dim; j++) {
			NEW(f, k_float, 0);
			set_double(f, random_unit(t) * limit);
			row->ref[j] = f;
		}
	}
	for (unsigned i = 0; i < dim; i++)
		for (unsigned j = 0; j < dim; j++)
			trace += get_double(rows->ref[i]->ref[j]) * get_double(rows->ref[j]->ref[i]);
	t->checksum += trace;
	return rows;
}

/* Cache#fill: a Hash of 8 String keys to small Arrays, kept in a global slot. */
static struct obj *cache_fill(struct vm_thread *t, struct obj *self, struct obj *other, uint64_t n)
{
	(void)self, (void)other, (void)n;
	struct obj *h, *key, *values;

	NEW(h, k_hash, 8);
	t->globals[8 + vm_random_below(t, 4)] = h;
	for (unsigned i = 0; i < 8; i++) {
		NEW(key, k_string, 6 + vm_random_below(t, 10));
		fill_letters(t, key);
		h->ref[2 * i] = key;
		NEW(values, k_array, 1 + vm_random_below(t, 4));
		h->ref[2 * i + 1] = values;
	}
	return h;
}

/* Bench#churn: 16 short-lived objects of mixed classes and sizes. */
static struct obj *bench_churn(struct vm_thread *t, struct obj *self, struct obj *other, uint64_t n)
{
	(void)self, (void)other, (void)n;
	unsigned ring = t->sp;
	struct obj *o = NULL;

	for (unsigned i = 0; i < 4; i++)
		vm_push(t, NULL);
	for (unsigned i = 0; i < 16; i++) {
		switch (vm_random_below(t, 4)) {
		case 0: NEW(o, k_point, 0); break;
		case 1: NEW(o, k_string, 1 + vm_random_below(t, 64)); break;
		case 2: NEW(o, k_array, 1 + vm_random_below(t, 8)); break;
		default: NEW(o, k_float, 0); break;
		}
		t->stack[ring + i % 4] = o; /* the last four stay reachable */
	}
	return o;
}

/* Registry#remember: a Session linked onto a list no one ever drops: the
 * leak of --leak. It draws no random numbers, so the rest of the workload
 * runs exactly as without it. */
static struct obj *registry_remember(struct vm_thread *t, struct obj *self, struct obj *other, uint64_t n)
{
	(void)self, (void)other;
	struct obj *s;

	NEW(s, k_session, 0);
	s->ref[0] = t->globals[VM_LEAK_SLOT];
	memcpy(obj_bytes(s), &n, sizeof(n));
	t->globals[VM_LEAK_SLOT] = s;
	return s;
}

/* ---- boot ---- */

#define DEFINE(klass, name, body) vm_method_define((klass), (name), (body), __FILE__, __LINE__)

void workload_boot(void)
{
	k_object = vm_class_define("Object", NULL, 0, 0, VM_ELEM_NONE, 0);
	k_point = vm_class_define("Point", k_object, 0, 16, VM_ELEM_NONE, 0);
	k_float = vm_class_define("Float", k_object, 0, 8, VM_ELEM_NONE, 0);
	k_string = vm_class_define("String", k_object, 0, 0, VM_ELEM_BYTES, 0);
	k_array = vm_class_define("Array", k_object, 0, 0, VM_ELEM_REFS, 1);
	k_hash = vm_class_define("Hash", k_object, 0, 0, VM_ELEM_REFS, 2);
	k_node = vm_class_define("Node", k_object, 2, 8, VM_ELEM_NONE, 0);
	k_geometry = vm_class_define("Geometry", k_object, 0, 0, VM_ELEM_NONE, 0);
	k_parser = vm_class_define("Parser", k_object, 0, 0, VM_ELEM_NONE, 0);
	k_report = vm_class_define("Report", k_object, 0, 0, VM_ELEM_NONE, 0);
	k_tree = vm_class_define("Tree", k_object, 0, 0, VM_ELEM_NONE, 0);
	k_matrix = vm_class_define("Matrix", k_object, 0, 0, VM_ELEM_NONE, 0);
	k_cache = vm_class_define("Cache", k_object, 0, 0, VM_ELEM_NONE, 0);
	k_bench = vm_class_define("Bench", k_object, 0, 0, VM_ELEM_NONE, 0);
	k_session = vm_class_define("Session", k_object, 1, 24, VM_ELEM_NONE, 0);
	k_registry = vm_class_define("Registry", k_object, 0, 0, VM_ELEM_NONE, 0);

	m_main = DEFINE(k_object, "main", NULL);
	DEFINE(k_object, "inspect", object_inspect);
	DEFINE(k_string, "concat", string_concat);
	DEFINE(k_geometry, "translate", geometry_translate);
	DEFINE(k_geometry, "polygon", geometry_polygon);
	DEFINE(k_parser, "tokenize", parser_tokenize);
	DEFINE(k_report, "render", report_render);
	DEFINE(k_tree, "build", tree_build);
	DEFINE(k_tree, "grow", tree_grow);
	DEFINE(k_matrix, "multiply", matrix_multiply);
	DEFINE(k_cache, "fill", cache_fill);
	DEFINE(k_bench, "churn", bench_churn);
	DEFINE(k_registry, "remember", registry_remember);
	constants_init();
	callpath_describe();
}

/* ---- running ---- */

void workload_thread_init(struct vm_thread *t, unsigned index, uint64_t seed,
			  enum workload_kind kind)
{
	/* splitmix64 of seed + index: distinct, never-zero xorshift states */
	uint64_t z = seed + index + 0x9E3779B97F4A7C15ULL;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	z ^= z >> 31;

	t->index = index;
	t->rng = z ? z : 1;
	t->method = m_main;
	t->bottom = (struct vm_frame){ NULL, m_main->qualified, m_main->file, m_main->line, 0 };
	t->frame = &t->bottom;
	callpath_init(&t->paths, m_main->id);
	heap_init(&t->heap, kind == WORKLOAD_ALLOC ? VM_ALLOC_MINOR_BUDGET : VM_MINOR_BUDGET);
}

void workload_thread_fini(struct vm_thread *t)
{
	heap_destroy(&t->heap);
}

static void run_mixed(struct vm_thread *t)
{
	unsigned pick = vm_random_below(t, 100);
	uint64_t n = vm_random(t) >> 40;
	struct vm_method_cache *c = t->method_caches;

	if (pick < 22)
		vm_send(t, &c[CALL_TRANSLATE], k_geometry, "translate", NULL, NULL, n);
	else if (pick < 36)
		vm_send(t, &c[CALL_POLYGON], k_geometry, "polygon", NULL, NULL, n);
	else if (pick < 54)
		vm_send(t, &c[CALL_TOKENIZE], k_parser, "tokenize", NULL, NULL, n);
	else if (pick < 70)
		vm_send(t, &c[CALL_RENDER], k_report, "render", NULL, NULL, n);
	else if (pick < 80)
		vm_send(t, &c[CALL_BUILD], k_tree, "build", NULL, NULL, n);
	else if (pick < 92)
		vm_send(t, &c[CALL_MULTIPLY], k_matrix, "multiply", NULL, NULL, n);
	else
		vm_send(t, &c[CALL_FILL], k_cache, "fill", NULL, NULL, n);
}

/* The methods a running program redefines, and the classes it reopens. */
static const struct { struct vm_class **klass; const char *name; } redefinable[] = {
	{ &k_geometry, "translate" }, { &k_parser, "tokenize" }, { &k_report, "render" },
	{ &k_matrix, "multiply" },    { &k_object, "inspect" },  { &k_string, "concat" },
};
static struct vm_class **const reopened[] = { &k_parser, &k_report, &k_geometry, &k_cache };

/* Every `scale` * K ops: the alloc workload spaces them out (scale 64) so
 * that allocation dominates, as in a runtime at steady state. */
static void maintenance(struct vm_thread *t, uint64_t scale)
{
	uint64_t op = t->ops;

	if (op % (50 * scale) == 0) {
		unsigned i = vm_random_below(t, sizeof(redefinable) / sizeof(redefinable[0]));
		vm_method_redefine(t, *redefinable[i].klass, redefinable[i].name);
	}
	if (op % (300 * scale) == 0)
		vm_module_include(t, *reopened[vm_random_below(t, sizeof(reopened) / sizeof(reopened[0]))]);
	if (op % (120 * scale) == 0) {
		enum vm_constant c = (enum vm_constant)vm_random_below(t, VM_CONST__COUNT);
		vm_constant_set(t, c, 1.0 + vm_random_below(t, 1000) / 10.0);
	}
	if (op % (WORKLOAD_SIGNAL_EVERY * scale) == 0) {
		/* delivered to this thread before pthread_kill returns */
		pthread_kill(pthread_self(), WORKLOAD_SIGNAL);
		t->signals_raised++;
	}
}

void workload_op(struct vm_thread *t, enum workload_kind kind)
{
	if (t->leak_left) {
		t->leak_left--;
		vm_send(t, &t->method_caches[CALL_REMEMBER], k_registry, "remember", NULL, NULL, t->ops);
	}
	if (kind == WORKLOAD_ALLOC)
		vm_send(t, &t->method_caches[CALL_CHURN], k_bench, "churn", NULL, NULL, 0);
	else
		run_mixed(t);
	t->ops++;
	maintenance(t, kind == WORKLOAD_ALLOC ? 64 : 1);
}
