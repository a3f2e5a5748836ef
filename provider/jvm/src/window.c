/*
 * window.c: what exact counting cannot see in a JVM that ran before it was
 * armed (window.h).
 *
 * The figure is the sum over the threads alive at the arming of their
 * bytes from then to their first sample; until that sample, of their
 * bytes so far, looked at every POLL_TICKS of the watcher, as a thread
 * ends (ThreadEnd, in that thread) and as the JVM ends (VMDeath). What
 * went to the tracer is kept, and only what the sum grew by goes again (a
 * loss counter adds).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "vmtrace/batch.h"
#include "window.h"

#define POLL_TICKS 5 /* of the watcher's 2 ms: a look every 10 ms */

struct armed_thread {
	jlong id;
	jlong armed;   /* its allocated bytes at the arming */
	jlong seen;    /* ... at the last look */
	int done;      /* its first sample came: unseen counted in finalized */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct armed_thread *threads; /* under mu */
static jint nthreads, npending;      /* under mu */
static uint64_t finalized, published; /* under mu: bytes */
static _Atomic uint32_t epoch;       /* the open window's number; 0: none open */
static uint32_t windows;             /* under mu: windows opened, numbering them from 1 */
static unsigned ticks;               /* the watcher's */
static __thread uint32_t seen_epoch; /* the window this thread sampled in */
static __thread int own;

static jobject mx; /* com.sun.management.ThreadMXBean, a global reference */
static jmethodID m_all_ids, m_bytes_of, m_current_bytes, m_thread_id;

int jvm_window_own(void)
{
	return own;
}

/* The JVM's ThreadMXBean and the methods the figure takes from it, once.
 * 0, or -1 (no per-thread allocation counts in this JVM). */
static int look_up(JNIEnv *env)
{
	jclass mf, sun, thread;
	jmethodID get;
	jobject bean;

	if (mx)
		return 0;
	mf = (*env)->FindClass(env, "java/lang/management/ManagementFactory");
	get = mf ? (*env)->GetStaticMethodID(env, mf, "getThreadMXBean",
					     "()Ljava/lang/management/ThreadMXBean;") : NULL;
	bean = get ? (*env)->CallStaticObjectMethod(env, mf, get) : NULL;
	sun = bean ? (*env)->FindClass(env, "com/sun/management/ThreadMXBean") : NULL;
	thread = sun ? (*env)->FindClass(env, "java/lang/Thread") : NULL;
	if (thread && (*env)->IsInstanceOf(env, bean, sun)) {
		m_all_ids = (*env)->GetMethodID(env, sun, "getAllThreadIds", "()[J");
		m_bytes_of = (*env)->GetMethodID(env, sun, "getThreadAllocatedBytes", "([J)[J");
		m_current_bytes = (*env)->GetMethodID(env, sun, "getCurrentThreadAllocatedBytes", "()J");
		m_thread_id = (*env)->GetMethodID(env, thread, "getId", "()J");
	}
	if ((*env)->ExceptionCheck(env) || !m_all_ids || !m_bytes_of || !m_current_bytes || !m_thread_id) {
		(*env)->ExceptionClear(env);
		return -1;
	}
	mx = (*env)->NewGlobalRef(env, bean);
	return mx ? 0 : -1;
}

/* The bytes allocated so far by each thread of ids (-1: ended), into out. */
static int bytes_of(JNIEnv *env, jlongArray ids, jint n, jlong *out)
{
	jlongArray got = (*env)->CallObjectMethod(env, mx, m_bytes_of, ids);

	if ((*env)->ExceptionCheck(env) || !got || (*env)->GetArrayLength(env, got) != n) {
		(*env)->ExceptionClear(env);
		return -1;
	}
	(*env)->GetLongArrayRegion(env, got, 0, n, out);
	(*env)->DeleteLocalRef(env, got);
	return 0;
}

/* Send what the figure grew by since the last time. Under mu. */
static void publish(void)
{
	uint64_t total = finalized;

	for (jint i = 0; i < nthreads; i++)
		if (!threads[i].done && threads[i].seen > threads[i].armed)
			total += (uint64_t)(threads[i].seen - threads[i].armed);
	if (total > published) {
		vmtrace_batch_unseen_bytes(total - published);
		published = total;
	}
}

void jvm_window_open(JNIEnv *env)
{
	struct armed_thread *v = NULL;
	jlongArray ids = NULL;
	jlong *id = NULL, *bytes = NULL;
	jint n = 0;

	own = 1;
	if (!look_up(env)) {
		ids = (*env)->CallObjectMethod(env, mx, m_all_ids);
		if ((*env)->ExceptionCheck(env))
			ids = NULL;
		(*env)->ExceptionClear(env);
	}
	n = ids ? (*env)->GetArrayLength(env, ids) : 0;
	v = n ? calloc((size_t)n, sizeof(*v)) : NULL;
	id = v ? calloc((size_t)n, sizeof(*id)) : NULL;
	bytes = id ? calloc((size_t)n, sizeof(*bytes)) : NULL;
	if (bytes && bytes_of(env, ids, n, bytes) == 0) {
		(*env)->GetLongArrayRegion(env, ids, 0, n, id);
		for (jint i = 0; i < n; i++)
			v[i] = (struct armed_thread){ id[i], bytes[i], bytes[i], bytes[i] < 0 };
	} else {
		free(v);
		v = NULL;
		n = 0;
	}
	if (ids)
		(*env)->DeleteLocalRef(env, ids);
	free(id);
	free(bytes);
	own = 0;
	pthread_mutex_lock(&mu);
	free(threads);
	threads = v;
	nthreads = npending = n;
	finalized = published = 0;
	ticks = 0;
	/* no figure without the JVM's counts: the window stays closed */
	if (n && !++windows)
		windows = 1;
	atomic_store(&epoch, n ? windows : 0);
	pthread_mutex_unlock(&mu);
}

void jvm_window_close(void)
{
	pthread_mutex_lock(&mu);
	atomic_store(&epoch, 0);
	free(threads);
	threads = NULL;
	nthreads = npending = 0;
	pthread_mutex_unlock(&mu);
}

/* The calling thread's own bytes from the window's opening (e) to now,
 * less size (an object of now that is counted), into the figure: its
 * window is over. */
static void settle(JNIEnv *env, jobject thread, uint32_t e, jlong size)
{
	jlong id, now;

	own = 1;
	id = (*env)->CallLongMethod(env, thread, m_thread_id);
	now = (*env)->ExceptionCheck(env) ? -1 : (*env)->CallLongMethod(env, mx, m_current_bytes);
	if ((*env)->ExceptionCheck(env))
		now = -1;
	(*env)->ExceptionClear(env);
	own = 0;
	if (now < 0)
		return;
	pthread_mutex_lock(&mu);
	for (jint i = 0; atomic_load(&epoch) == e && i < nthreads; i++) {
		struct armed_thread *t = &threads[i];

		if (t->id != id || t->done)
			continue;
		t->done = 1;
		npending--;
		if (now - size > t->armed)
			finalized += (uint64_t)(now - size - t->armed);
		publish();
		break;
	}
	pthread_mutex_unlock(&mu);
}

void jvm_window_first_sample(JNIEnv *env, jobject thread, jlong size)
{
	uint32_t e = atomic_load_explicit(&epoch, memory_order_relaxed);

	if (!e || seen_epoch == e)
		return;
	seen_epoch = e;
	settle(env, thread, e, size);
}

void jvm_window_thread_end(JNIEnv *env, jobject thread)
{
	uint32_t e = atomic_load_explicit(&epoch, memory_order_relaxed);

	/* no window, or this thread's first sample settled it: else none of
	 * what it allocated since was seen */
	if (e && seen_epoch != e)
		settle(env, thread, e, 0);
}

static void poll_now(JNIEnv *env, uint32_t e)
{
	jlongArray ids;
	jlong *id, *now;
	jint n;

	pthread_mutex_lock(&mu);
	n = npending ? nthreads : 0;
	id = n ? calloc((size_t)n, sizeof(*id)) : NULL;
	for (jint i = 0; id && i < n; i++)
		id[i] = threads[i].id;
	pthread_mutex_unlock(&mu);
	if (!id)
		return;
	now = calloc((size_t)n, sizeof(*now));
	own = 1;
	ids = now ? (*env)->NewLongArray(env, n) : NULL;
	if (ids)
		(*env)->SetLongArrayRegion(env, ids, 0, n, id);
	if (ids && bytes_of(env, ids, n, now) == 0) {
		pthread_mutex_lock(&mu);
		for (jint i = 0; atomic_load(&epoch) == e && i < n; i++)
			if (now[i] >= 0)
				threads[i].seen = now[i];
		if (atomic_load(&epoch) == e)
			publish();
		pthread_mutex_unlock(&mu);
	}
	(*env)->ExceptionClear(env);
	if (ids)
		(*env)->DeleteLocalRef(env, ids);
	own = 0;
	free(id);
	free(now);
}

void jvm_window_poll(JNIEnv *env)
{
	uint32_t e = atomic_load(&epoch);

	if (e && ++ticks % POLL_TICKS == 0)
		poll_now(env, e);
}

void jvm_window_last_look(JNIEnv *env)
{
	uint32_t e = atomic_load(&epoch);

	if (e)
		poll_now(env, e);
}
