/*
 * profile.c: the sampling profiler.
 *
 * ITIMER_PROF sends SIGPROF to the process for every 1/hz second of CPU time
 * it uses; the kernel delivers it to a thread that is running. The handler
 * does only async-signal-safe work: it claims a preallocated sample slot
 * (the same sequence-numbered ring as the bus, here with a backtrace per
 * slot), lets the backtrace source write the frames straight into it,
 * commits it and wakes the dispatcher. A full ring counts the sample as
 * dropped. The dispatcher (or a snapshot, if the dispatcher is not running)
 * drains the ring into a hash table that merges identical stacks; that part
 * may allocate, because it never runs in a handler.
 *
 * Every sample is either dropped or counted, so after vmtrace_profile_stop
 * the counts plus the drops equal the samples taken.
 *
 * The built-in backtrace source walks frame pointers from the interrupted
 * context. A walk may read only memory it knows is mapped: the stack between
 * the interrupted sp and the top of the thread's stack. The top is recorded
 * per thread outside the handler (the main thread from /proc/self/maps,
 * others by vmtrace_profile_thread_register); a thread without a record
 * yields the interrupted pc alone.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/time.h>

#include "vmtrace/bus.h"
#include "bus_dispatch.h"
#include "bus_ring.h"

#define SAMPLE_ORDER 10
#define SAMPLE_SLOTS (1u << SAMPLE_ORDER)
#define SAMPLE_MASK (SAMPLE_SLOTS - 1)

struct sample {
	_Atomic uint64_t seq; /* relative to the index, as in bus_ring.c */
	uint32_t depth;
	uintptr_t frames[VMTRACE_PROFILE_MAX_FRAMES];
};

static struct sample samples[SAMPLE_SLOTS];
static _Atomic uint64_t sample_head;
static _Atomic uint64_t sample_tail;	/* written under table_lock */
static _Atomic uint64_t taken;
static _Atomic uint64_t lost;
static _Atomic int in_handler;

static _Atomic(vmtrace_backtrace_fn) source;
static _Atomic(void *) source_user;

static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static int profiling;
static struct sigaction previous_action;

/* stack tops for the built-in walk; read in the handler */
static __thread uintptr_t thread_stack_top __attribute__((tls_model("initial-exec")));
static _Atomic uintptr_t main_stack_top;
static _Atomic uint32_t main_tid;

/* the table of distinct stacks, drained into under table_lock */
struct entry {
	uint64_t hash;
	struct vmtrace_profile_stack stack;
};
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *table;
static size_t table_cap, table_len;

/* ---- the handler side ---- */

#if defined(__x86_64__)
__attribute__((no_sanitize("address", "thread", "undefined")))
static int walk_frame_pointers(uintptr_t *frames, int max, void *ucontext, void *user)
{
	const ucontext_t *uc = ucontext;
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	uintptr_t fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
	uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	uintptr_t top = thread_stack_top;
	int n = 0;

	(void)user;
	if (max <= 0)
		return 0;
	frames[n++] = pc;
	if (top == 0 && vmtrace__gettid() == atomic_load_explicit(&main_tid, memory_order_relaxed))
		top = atomic_load_explicit(&main_stack_top, memory_order_relaxed);
	if (top == 0 || sp >= top)
		return n;
	/* [sp, top) is this thread's live stack, mapped; frames grow upward */
	while (n < max && fp >= sp && fp <= top - 2 * sizeof(uintptr_t) && (fp & 7) == 0) {
		const uintptr_t *frame = (const uintptr_t *)fp;
		uintptr_t next = frame[0], ret = frame[1];
		if (ret == 0)
			break;
		frames[n++] = ret;
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}
#else
static int walk_frame_pointers(uintptr_t *frames, int max, void *ucontext, void *user)
{
	(void)frames, (void)max, (void)ucontext, (void)user;
	return 0;
}
#endif

static void profile_handler(int signo, siginfo_t *info, void *ucontext)
{
	int saved_errno = errno;
	uint64_t pos;
	struct sample *s;

	(void)signo;
	(void)info;
	atomic_fetch_add(&in_handler, 1);
	pos = atomic_load_explicit(&sample_head, memory_order_relaxed);
	for (;;) {
		uint64_t index = pos & SAMPLE_MASK;
		s = &samples[index];
		int64_t lag = (int64_t)(atomic_load_explicit(&s->seq, memory_order_acquire) + index - pos);
		if (lag == 0) {
			if (atomic_compare_exchange_weak_explicit(&sample_head, &pos, pos + 1,
								  memory_order_relaxed, memory_order_relaxed))
				break;
		} else if (lag < 0) {
			atomic_fetch_add(&lost, 1);
			atomic_fetch_add(&taken, 1);
			goto out;
		} else {
			pos = atomic_load_explicit(&sample_head, memory_order_relaxed);
		}
	}
	vmtrace_backtrace_fn fn = atomic_load(&source);
	int depth = fn ? fn(s->frames, VMTRACE_PROFILE_MAX_FRAMES, ucontext, atomic_load(&source_user)) : 0;
	s->depth = depth < 0 ? 0 : depth > VMTRACE_PROFILE_MAX_FRAMES ? VMTRACE_PROFILE_MAX_FRAMES : (uint32_t)depth;
	atomic_store(&s->seq, pos + 1 - (pos & SAMPLE_MASK));
	/* counted after the commit: a drain that saw the count sees the sample */
	atomic_fetch_add(&taken, 1);
	vmtrace__bus_wake();
out:
	atomic_fetch_sub(&in_handler, 1);
	errno = saved_errno;
}

/* ---- the counting side ---- */

static uint64_t hash_stack(const uintptr_t *frames, uint32_t depth)
{
	uint64_t h = 0xcbf29ce484222325ull ^ depth;

	for (uint32_t i = 0; i < depth; i++) {
		h ^= frames[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h | 1; /* 0 marks an empty entry */
}

static int table_grow(void)
{
	size_t cap = table_cap ? table_cap * 2 : 256;
	struct entry *bigger = calloc(cap, sizeof(*bigger));

	if (!bigger)
		return -ENOMEM;
	for (size_t i = 0; i < table_cap; i++) {
		if (!table[i].hash)
			continue;
		size_t j = table[i].hash & (cap - 1);
		while (bigger[j].hash)
			j = (j + 1) & (cap - 1);
		bigger[j] = table[i];
	}
	free(table);
	table = bigger;
	table_cap = cap;
	return 0;
}

/* Count one stack; 0 or -ENOMEM (then the sample counts as lost). */
static int table_add(const uintptr_t *frames, uint32_t depth)
{
	uint64_t h = hash_stack(frames, depth);

	if ((table_len + 1) * 4 > table_cap * 3 && table_grow())
		return -ENOMEM;
	size_t j = h & (table_cap - 1);
	while (table[j].hash) {
		struct vmtrace_profile_stack *st = &table[j].stack;
		if (table[j].hash == h && st->depth == depth &&
		    memcmp(st->frames, frames, depth * sizeof(*frames)) == 0) {
			st->count++;
			return 0;
		}
		j = (j + 1) & (table_cap - 1);
	}
	table[j].hash = h;
	table[j].stack.count = 1;
	table[j].stack.depth = depth;
	memcpy(table[j].stack.frames, frames, depth * sizeof(*frames));
	table_len++;
	return 0;
}

static int profile_pending(void)
{
	uint64_t tail = atomic_load_explicit(&sample_tail, memory_order_relaxed);
	uint64_t index = tail & SAMPLE_MASK;

	return atomic_load_explicit(&samples[index].seq, memory_order_acquire) + index == tail + 1;
}

/* Caller holds table_lock. */
static void drain_locked(int count)
{
	uint64_t tail = atomic_load_explicit(&sample_tail, memory_order_relaxed);

	for (;;) {
		uint64_t index = tail & SAMPLE_MASK;
		struct sample *s = &samples[index];
		if (atomic_load_explicit(&s->seq, memory_order_acquire) + index != tail + 1)
			break;
		if (count && table_add(s->frames, s->depth))
			atomic_fetch_add(&lost, 1);
		atomic_store_explicit(&s->seq, tail + SAMPLE_SLOTS - index, memory_order_release);
		tail++;
	}
	atomic_store_explicit(&sample_tail, tail, memory_order_relaxed);
}

static void profile_drain(void)
{
	pthread_mutex_lock(&table_lock);
	drain_locked(1);
	pthread_mutex_unlock(&table_lock);
}

/* ---- control ---- */

static uintptr_t stack_top_from_maps(void)
{
	FILE *maps = fopen("/proc/self/maps", "re");
	char line[512];
	uintptr_t top = 0;

	if (!maps)
		return 0;
	while (fgets(line, sizeof(line), maps)) {
		unsigned long lo, hi;
		if (strstr(line, "[stack]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
			top = hi;
			break;
		}
	}
	fclose(maps);
	return top;
}

int vmtrace_profile_thread_register(void)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;

	if ((pid_t)vmtrace__gettid() == getpid()) {
		uintptr_t top = stack_top_from_maps();
		if (!top)
			return -ENOENT;
		atomic_store(&main_tid, vmtrace__gettid());
		atomic_store(&main_stack_top, top);
		return 0;
	}
	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return -ENOENT;
	int err = pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	if (err)
		return -err;
	thread_stack_top = (uintptr_t)addr + size;
	return 0;
}

int vmtrace_profile_start(unsigned hz, vmtrace_backtrace_fn backtrace, void *user)
{
	struct sigaction sa;
	struct itimerval timer;
	int err = 0;

	if (hz == 0 || hz > 100000)
		return -EINVAL;
	pthread_mutex_lock(&ctl_lock);
	if (profiling) {
		pthread_mutex_unlock(&ctl_lock);
		return -EBUSY;
	}
	/* main thread's stack: from maps, whichever thread starts us */
	if (!atomic_load(&main_stack_top)) {
		atomic_store(&main_stack_top, stack_top_from_maps());
		atomic_store(&main_tid, (uint32_t)getpid());
	}
	vmtrace_profile_thread_register();

	pthread_mutex_lock(&table_lock);
	drain_locked(0);
	free(table);
	table = NULL;
	table_cap = table_len = 0;
	atomic_store(&taken, 0);
	atomic_store(&lost, 0);
	pthread_mutex_unlock(&table_lock);

	atomic_store(&source_user, user);
	atomic_store(&source, backtrace ? backtrace : walk_frame_pointers);
	/* the dispatcher counts the samples the handler leaves */
	vmtrace__bus_set_profile_work(profile_pending, profile_drain);

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = profile_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, &previous_action) != 0) {
		err = -errno;
		goto out;
	}
	unsigned long usec = 1000000ul / hz;
	timer.it_interval.tv_sec = (time_t)(usec / 1000000);
	timer.it_interval.tv_usec = (suseconds_t)(usec % 1000000);
	if (timer.it_interval.tv_sec == 0 && timer.it_interval.tv_usec == 0)
		timer.it_interval.tv_usec = 1;
	timer.it_value = timer.it_interval;
	if (setitimer(ITIMER_PROF, &timer, NULL) != 0) {
		err = -errno;
		sigaction(SIGPROF, &previous_action, NULL);
		goto out;
	}
	profiling = 1;
out:
	pthread_mutex_unlock(&ctl_lock);
	return err;
}

int vmtrace_profile_stop(void)
{
	struct itimerval off;
	struct sigaction ignore;

	pthread_mutex_lock(&ctl_lock);
	if (!profiling) {
		pthread_mutex_unlock(&ctl_lock);
		return -EAGAIN;
	}
	memset(&off, 0, sizeof(off));
	setitimer(ITIMER_PROF, &off, NULL);
	/* SIG_IGN discards a SIGPROF still pending; then wait out handlers
	 * already running on other threads */
	memset(&ignore, 0, sizeof(ignore));
	ignore.sa_handler = SIG_IGN;
	sigemptyset(&ignore.sa_mask);
	sigaction(SIGPROF, &ignore, NULL);
	while (atomic_load(&in_handler))
		sched_yield();
	sigaction(SIGPROF, &previous_action, NULL);
	profiling = 0;
	pthread_mutex_unlock(&ctl_lock);
	return 0;
}

static int by_count_desc(const void *a, const void *b)
{
	const struct vmtrace_profile_stack *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return memcmp(x->frames, y->frames, x->depth * sizeof(x->frames[0]));
}

int vmtrace_profile_snapshot(struct vmtrace_profile_snapshot *out)
{
	int err = 0;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&table_lock);
	out->samples = atomic_load(&taken);
	drain_locked(1);
	if (table_len) {
		out->stacks = malloc(table_len * sizeof(*out->stacks));
		if (!out->stacks) {
			err = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < table_cap; i++)
			if (table[i].hash)
				out->stacks[out->nstacks++] = table[i].stack;
	}
	out->dropped = atomic_load(&lost);
out:
	pthread_mutex_unlock(&table_lock);
	if (out->nstacks)
		qsort(out->stacks, out->nstacks, sizeof(*out->stacks), by_count_desc);
	return err;
}

void vmtrace_profile_snapshot_free(struct vmtrace_profile_snapshot *snap)
{
	if (!snap)
		return;
	free(snap->stacks);
	snap->stacks = NULL;
	snap->nstacks = 0;
}

char *vmtrace_profile_symbolize(uintptr_t addr, char *buf, size_t len)
{
	Dl_info info;

	if (len == 0)
		return buf;
	if (dladdr((void *)addr, &info) && info.dli_fname) {
		const char *module = strrchr(info.dli_fname, '/');
		module = module ? module + 1 : info.dli_fname;
		if (info.dli_sname)
			snprintf(buf, len, "%s+0x%lx (%s)", info.dli_sname,
				 (unsigned long)(addr - (uintptr_t)info.dli_saddr), module);
		else
			snprintf(buf, len, "0x%lx (%s+0x%lx)", (unsigned long)addr, module,
				 (unsigned long)(addr - (uintptr_t)info.dli_fbase));
	} else {
		snprintf(buf, len, "0x%lx", (unsigned long)addr);
	}
	return buf;
}

int vmtrace_profile_write_top(FILE *out, size_t top, size_t frames)
{
	struct vmtrace_profile_snapshot snap;
	char name[256];
	int err = vmtrace_profile_snapshot(&snap);

	if (err)
		return err;
	fprintf(out, "profile: %llu samples, %llu dropped, %zu distinct stacks\n",
		(unsigned long long)snap.samples, (unsigned long long)snap.dropped, snap.nstacks);
	for (size_t i = 0; i < snap.nstacks && i < top; i++) {
		const struct vmtrace_profile_stack *st = &snap.stacks[i];
		fprintf(out, "#%zu  %llu samples (%.1f%%)\n", i + 1, (unsigned long long)st->count,
			snap.samples ? 100.0 * (double)st->count / (double)snap.samples : 0.0);
		for (uint32_t f = 0; f < st->depth && f < frames; f++)
			fprintf(out, "    %s\n", vmtrace_profile_symbolize(st->frames[f], name, sizeof(name)));
		if (st->depth > frames)
			fprintf(out, "    ... %u more\n", st->depth - (uint32_t)frames);
	}
	vmtrace_profile_snapshot_free(&snap);
	return ferror(out) ? -EIO : 0;
}
