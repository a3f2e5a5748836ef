/*
 * test_stacks: VM stacks in libvmtrace's batched counting (provider/core/src/
 * stacks.c): a host's frame chain described once and walked at each
 * allocation, stacks named alike on every thread, their frames sent once
 * per consumer and again after a new epoch, new stacks made faster than
 * rounds send them (the halves of frames waiting, sealed), a chain deeper
 * than 128 frames cut and flagged, and the layouts vmtrace_frames_describe (and the hash
 * offsets vmtrace_frames_hashed) refuse. Every
 * batch is watched through the provider's test observer; the semaphores
 * are raised by hand, as a tracer's uprobes would. Also under TSan.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <vmtrace/vmtrace.h>

extern unsigned short vmtrace_alloc__batch_semaphore, vmtrace_stacks__armed_semaphore;
extern void (*vmtrace__batch_observer)(const void *batch, uint64_t bytes);

struct frame {
	const char *name;
	struct frame *caller;
	int32_t line;
	const char *file;
};

static __thread struct frame *current;

#define MAX_STACKS 640
struct seen_stack {
	uint64_t id;
	uint32_t depth, flags, sends;
	struct vmtrace_batch_frame f[VMTRACE_STACK_MAX_DEPTH];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct seen_stack stacks[MAX_STACKS];
static unsigned nstacks;
static uint64_t count_by_stack[MAX_STACKS], unstacked, bad;
static const char klass[] = "Obj";

static struct seen_stack *find(uint64_t id)
{
	for (unsigned i = 0; i < nstacks; i++)
		if (stacks[i].id == id)
			return &stacks[i];
	return NULL;
}

static void observe(const void *p, uint64_t bytes)
{
	const struct vmtrace_batch *b = p;

	pthread_mutex_lock(&mu);
	if (b->kind == VMTRACE_BATCH_STACK) {
		const struct vmtrace_batch_frame *r = (const void *)(b + 1);

		if (b->record_size != sizeof(*r) || bytes != sizeof(*b) + (uint64_t)b->count * sizeof(*r))
			bad++;
		for (uint32_t i = 0; i < b->count;) {
			const struct vmtrace_batch_stack_head *h = (const void *)&r[i];
			struct seen_stack *s = find(h->id);

			if (!h->id || h->depth > VMTRACE_STACK_MAX_DEPTH || i + 1 + h->depth > b->count) {
				bad++;
				break;
			}
			if (!s && nstacks < MAX_STACKS) {
				s = &stacks[nstacks++];
				s->id = h->id;
			}
			if (s) {
				s->depth = h->depth;
				s->flags = h->flags;
				s->sends++;
				memcpy(s->f, &r[i + 1], h->depth * sizeof(*r));
			}
			i += 1 + h->depth;
		}
	} else if (b->kind == VMTRACE_BATCH_ALLOC) {
		const struct vmtrace_batch_record *r = (const void *)(b + 1);

		for (uint32_t i = 0; i < b->count; i++) {
			struct seen_stack *s = r[i].stack ? find(r[i].stack) : NULL;

			if (!r[i].stack)
				unstacked += r[i].count;
			else if (s)
				count_by_stack[s - stacks] += r[i].count;
			else
				bad++; /* counts before their stack's frames */
		}
	}
	pthread_mutex_unlock(&mu);
}

static uint64_t last_request;

/* A copy of what the batches delivered, taken under the lock. */
struct seen {
	struct seen_stack stacks[MAX_STACKS];
	unsigned nstacks;
	uint64_t count_by_stack[MAX_STACKS], unstacked, bad;
};

static void snapshot(struct seen *out)
{
	pthread_mutex_lock(&mu);
	memcpy(out->stacks, stacks, sizeof(stacks));
	out->nstacks = nstacks;
	memcpy(out->count_by_stack, count_by_stack, sizeof(count_by_stack));
	out->unstacked = unstacked;
	out->bad = bad;
	pthread_mutex_unlock(&mu);
}

static struct seen got;

static void flush_all(void)
{
	/* a round flushes every thread; two requests a few ticks apart: all is in */
	__atomic_store_n(&vmtrace_batch_request, ++last_request + 0x5ac0000, __ATOMIC_RELAXED);
	usleep(120000);
	__atomic_store_n(&vmtrace_batch_request, ++last_request + 0x5ac0000, __ATOMIC_RELAXED);
	usleep(120000);
}

static void reset(void)
{
	pthread_mutex_lock(&mu);
	memset(stacks, 0, sizeof(stacks));
	memset(count_by_stack, 0, sizeof(count_by_stack));
	nstacks = 0;
	unstacked = bad = 0;
	pthread_mutex_unlock(&mu);
}

static int setup(void **state)
{
	struct vmtrace_frame_layout l = VMTRACE_FRAME_LAYOUT(struct frame, caller, name, file, line);

	(void)state;
	assert_int_equal(vmtrace_frames_describe(&l), 0);
	vmtrace__batch_observer = observe;
	vmtrace_alloc__batch_semaphore = 1;
	vmtrace_stacks__armed_semaphore = 1;
	return 0;
}

/* call `name` under the current frame, run body, return */
#define CALL(fr, nm, ln, body)                                                 \
	do {                                                                   \
		struct frame fr = { nm, current, ln, "host.c" };               \
		current = &fr;                                                 \
		body;                                                          \
		current = fr.caller;                                           \
	} while (0)

static void alloc_n(int n)
{
	for (int i = 0; i < n; i++)
		vmtrace_alloc(klass, current ? current->name : "-", 16, NULL);
}

/* main -> a -> b -> c: c allocates 5; main -> d -> c: 3; recursion r x4: 1 each level */
static void recurse(int depth)
{
	if (!depth)
		return;
	CALL(r, "r", 40, { alloc_n(1); recurse(depth - 1); });
}

static void program(void)
{
	CALL(m, "main", 1, {
		CALL(a, "a", 10, CALL(b, "b", 20, CALL(c, "c", 30, alloc_n(5))));
		CALL(d, "d", 50, CALL(c, "c", 30, alloc_n(3)));
		recurse(4);
	});
}

static void *thread_main(void *arg)
{
	(void)arg;
	vmtrace_frames_thread((void *const *)&current);
	program();
	return NULL;
}

/* The names of s root first, joined by ';'. */
static void stack_text(const struct seen_stack *s, char *buf, size_t len)
{
	buf[0] = '\0';
	for (uint32_t i = s->depth; i-- > 0;) {
		strncat(buf, (const char *)(uintptr_t)s->f[i].name, len - strlen(buf) - 2);
		if (i)
			strcat(buf, ";");
	}
}

static uint64_t count_of(const char *want)
{
	char text[4096];
	uint64_t n = 0;

	pthread_mutex_lock(&mu);
	for (unsigned i = 0; i < nstacks; i++) {
		stack_text(&stacks[i], text, sizeof(text));
		if (!strcmp(text, want))
			n += count_by_stack[i];
	}
	pthread_mutex_unlock(&mu);
	return n;
}

static void test_stacks_exact_across_threads(void **state)
{
	pthread_t t[4];

	(void)state;
	reset();
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, thread_main, NULL), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	flush_all();
	snapshot(&got);
	assert_int_equal(got.bad, 0);
	/* four threads, one id per stack: the same six stacks */
	assert_int_equal(got.nstacks, 6);
	assert_int_equal(count_of("main;a;b;c"), 4 * 5);
	assert_int_equal(count_of("main;d;c"), 4 * 3);
	assert_int_equal(count_of("main;r"), 4);
	assert_int_equal(count_of("main;r;r"), 4);
	assert_int_equal(count_of("main;r;r;r;r"), 4);
	assert_int_equal(got.unstacked, 0);
	for (unsigned i = 0; i < got.nstacks; i++) {
		assert_int_equal(got.stacks[i].flags, 0);
		assert_string_equal((const char *)(uintptr_t)got.stacks[i].f[0].file, "host.c");
	}
}

static void test_no_frames_no_stack(void **state)
{
	(void)state;
	reset();
	/* this thread never registered its pointer */
	alloc_n(7);
	vmtrace_frames_thread(NULL);
	alloc_n(2);
	flush_all();
	snapshot(&got);
	assert_int_equal(got.unstacked, 9);
	assert_int_equal(got.nstacks, 0);
}

static void test_deep_chain_cut(void **state)
{
	static struct frame chain[200];

	(void)state;
	reset();
	for (int i = 0; i < 200; i++)
		chain[i] = (struct frame){ "deep", i ? &chain[i - 1] : NULL, i, "host.c" };
	vmtrace_frames_thread((void *const *)&current);
	current = &chain[199];
	alloc_n(2);
	current = NULL;
	flush_all();
	snapshot(&got);
	assert_int_equal(got.nstacks, 1);
	assert_int_equal(got.stacks[0].depth, VMTRACE_STACK_MAX_DEPTH);
	assert_int_equal(got.stacks[0].flags, VMTRACE_STACK_CUT);
	assert_int_equal(got.stacks[0].f[0].line, 199); /* innermost first */
	assert_int_equal(got.count_by_stack[0], 2);
	vmtrace_frames_thread(NULL);
}

/* leaf lines: a stack of `depth` frames for each, under one chain */
static void deep(int depth, int leaf)
{
	if (depth == 1) {
		CALL(l, "leaf", leaf, alloc_n(1));
		return;
	}
	CALL(r, "r", 40, deep(depth - 1, leaf));
}

#define FAST_STACKS 300
#define FAST_DEPTH 100

static void *fast_thread(void *arg)
{
	int first = (int)(uintptr_t)arg;

	vmtrace_frames_thread((void *const *)&current);
	for (int i = 0; i < FAST_STACKS; i++)
		deep(FAST_DEPTH, first + i);
	vmtrace_frames_thread(NULL);
	return NULL;
}

/* Two threads each make 300 new stacks of 100 frames with no round between
 * (30300 records each, more than three halves of the frames waiting to be
 * sent): every stack arrives once, before the count that names it, and
 * every count arrives, whether the flush thread sent a sealed half or its
 * owner sent both. */
static void test_stacks_faster_than_rounds(void **state)
{
	pthread_t t[2];

	(void)state;
	reset();
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, fast_thread, (void *)(uintptr_t)(1000 + i * FAST_STACKS)), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	flush_all();
	snapshot(&got);
	assert_int_equal(got.bad, 0);
	assert_int_equal(got.nstacks, 2 * FAST_STACKS);
	for (unsigned i = 0; i < got.nstacks; i++) {
		assert_int_equal(got.stacks[i].sends, 1);
		assert_int_equal(got.stacks[i].depth, FAST_DEPTH);
		assert_int_equal(got.count_by_stack[i], 1);
	}
	assert_int_equal(got.unstacked, 0);
}

static void *epoch_thread(void *arg)
{
	vmtrace_frames_thread((void *const *)&current);
	CALL(m, "main", 1, {
		alloc_n(1);
		flush_all();
		/* a second consumer: the frames are sent again */
		vmtrace_stacks_epoch = (uint64_t)(uintptr_t)arg;
		alloc_n(1);
		alloc_n(1);
	});
	return NULL;
}

static void test_epoch_resends(void **state)
{
	pthread_t t;

	(void)state;
	reset();
	assert_int_equal(pthread_create(&t, NULL, epoch_thread, (void *)(uintptr_t)0xe90c), 0);
	pthread_join(t, NULL);
	flush_all();
	snapshot(&got);
	assert_int_equal(got.nstacks, 1);
	assert_int_equal(got.stacks[0].sends, 2);
	assert_int_equal(got.count_by_stack[0], 3);
}

static void test_describe_refuses(void **state)
{
	struct vmtrace_frame_layout bad_caller = { -5, 0, VMTRACE_FRAME_NONE, VMTRACE_FRAME_NONE };
	struct vmtrace_frame_layout no_name = { 0, VMTRACE_FRAME_NONE, VMTRACE_FRAME_NONE, 8 };
	struct vmtrace_frame_layout far = { 0, 8, 1 << 20, VMTRACE_FRAME_NONE };

	(void)state;
	assert_int_equal(vmtrace_frames_describe(NULL), -EINVAL);
	assert_int_equal(vmtrace_frames_describe(&bad_caller), -EINVAL);
	assert_int_equal(vmtrace_frames_describe(&no_name), -EINVAL);
	assert_int_equal(vmtrace_frames_describe(&far), -EINVAL);
	assert_int_equal(vmtrace_frames_hashed(-8), -EINVAL);
	assert_int_equal(vmtrace_frames_hashed(1 << 20), -EINVAL);
	/* the layout in force is the one described first */
	assert_int_equal(vmtrace_frames.magic, VMTRACE_FRAMES_MAGIC);
	assert_int_equal(vmtrace_frames.layout.caller, offsetof(struct frame, caller));
	assert_int_equal(vmtrace_frames.max_depth, VMTRACE_STACK_MAX_DEPTH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stacks_exact_across_threads),
		cmocka_unit_test(test_no_frames_no_stack),
		cmocka_unit_test(test_stacks_faster_than_rounds),
		cmocka_unit_test(test_deep_chain_cut),
		cmocka_unit_test(test_epoch_resends),
		cmocka_unit_test(test_describe_refuses),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
