/*
 * agent.c: vmtrace's JVMTI agent, libvmtrace inside a HotSpot JVM.
 *
 * Loaded at start (-agentpath:.../libvmtrace_jvm.so) or into a running JVM
 * through its attach mechanism (what `jcmd PID JVMTI.agent_load` does), it
 * is dormant until a consumer arms it: a daemon thread of its own reads
 * libvmtrace's gates every 2 ms and turns JVMTI's events on and off as they
 * change. Allocations come through JVMTI's allocation sampling (JEP 331):
 * at the consumer's period (--sample), or every allocation (interval 0) for
 * exact counts; each is counted per (class, method, site), and per whole
 * Java stack while stacks are armed, into libvmtrace's batched tables.
 * Collections come from GarbageCollectionStart/Finish.
 *
 * The callbacks allocate no Java object and raise nothing; names are made
 * once per class, method and site (names.h), so nearly every event is a few
 * table lookups and a count. When the last consumer goes the events are
 * turned off and the JVM runs as if the agent were not there.
 */
#include <dlfcn.h>
#include <jni.h>
#include <jvmti.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "names.h"
#include "vmtrace/vmtrace.h"
#include "window.h"

#define WATCH_MS 2

static jvmtiEnv *jv;
static int started;                 /* the agent is set up in this JVM */
/* the agent's own file, a copy a consumer placed for this JVM alone (in a
 * container's /tmp), removed as the JVM ends; NULL for any other */
static char *remove_at_exit;

/* Written by a consumer that counts classes alone (record --no-methods),
 * through /proc/PID/mem, or set from VMTRACE_JVM_NO_METHODS=1 in a JVM it
 * starts: no frame is read for an allocation. Exported, so a consumer
 * finds it. */
__attribute__((visibility("default"))) volatile uint64_t vmtrace_jvm_no_methods;

/* what the watcher turned on; read by the callbacks */
static volatile int alloc_on, gc_on;
static volatile uint64_t alloc_period; /* the interval JVMTI samples at, in bytes; 0 every allocation */

/* ---- whole stacks: a chain of frames libvmtrace walks (<vmtrace/frames.h>) ---- */

struct jframe {
	struct jframe *caller;
	const char *name, *file;
	int32_t line;
};

struct jstack {
	struct jframe *top;         /* the chain while an allocation is counted, else NULL */
	struct jframe frames[VMTRACE_STACK_MAX_DEPTH + 1];
	jvmtiFrameInfo info[VMTRACE_STACK_MAX_DEPTH];
};

static __thread struct jstack *self_stack;
static __thread int warming; /* warm_up() waits for this thread's next sample */

#define JVM_DEFAULT_INTERVAL (512 * 1024) /* JVMTI's sampling interval until one is set */
#define WARM_UP_BYTES (1 << 20)
#define WARM_UP_TRIES 64

static pthread_key_t stack_key; /* frees a thread's chain as it ends */

static struct jstack *thread_stack(void)
{
	if (!self_stack) {
		self_stack = calloc(1, sizeof(*self_stack));
		if (self_stack) {
			pthread_setspecific(stack_key, self_stack);
			vmtrace_frames_thread((void *const *)&self_stack->top);
		}
	}
	return self_stack;
}

/* The calling thread's Java stack as a chain; its innermost frame's
 * (method, location) in *m, *at. 0, or -1 (no stack to walk). */
static int walk_stack(struct jstack *st, jmethodID *m, jlocation *at)
{
	jint n = 0, k = 0, depth = 0;

	if ((*jv)->GetStackTrace(jv, NULL, 0, VMTRACE_STACK_MAX_DEPTH, st->info, &n) != JVMTI_ERROR_NONE ||
	    n <= 0)
		return -1;
	for (jint i = 0; i < n; i++) {
		struct jvm_frame_names f;

		if (jvm_frame_names(st->info[i].method, st->info[i].location, &f))
			continue;
		st->frames[k] = (struct jframe){ NULL, f.method, f.file, f.line };
		if (k)
			st->frames[k - 1].caller = &st->frames[k];
		k++;
	}
	/* deeper than libvmtrace keeps: one frame more, so it flags the stack cut */
	if (n == VMTRACE_STACK_MAX_DEPTH && k &&
	    (*jv)->GetFrameCount(jv, NULL, &depth) == JVMTI_ERROR_NONE && depth > n) {
		st->frames[k] = (struct jframe){ NULL, "(deeper frames cut)", NULL, 0 };
		st->frames[k - 1].caller = &st->frames[k];
	}
	*m = st->info[0].method;
	*at = st->info[0].location;
	st->top = k ? &st->frames[0] : NULL;
	return 0;
}

/* ---- events ---- */

static void JNICALL on_sampled_alloc(jvmtiEnv *j, JNIEnv *env, jthread thread, jobject object,
				     jclass klass, jlong size)
{
	uint64_t period = alloc_period;
	jvmtiFrameInfo top;
	jmethodID m = NULL;
	jlocation at = 0;
	jint n = 0;
	struct jstack *st = NULL;
	const char *cname;
	struct jvm_site *site;

	/* no address: the object moves, and JVMTI tells no free */
	(void)j, (void)object;
	if (warming) {
		warming = 0; /* the thread's first sample: see warm_up() */
		return;
	}
	if (!alloc_on || !VMTRACE_ALLOC_ENABLED() || jvm_window_own())
		return;
	if (!period)
		jvm_window_first_sample(env, thread, size);
	cname = jvm_class_name(klass);
	if (!cname)
		cname = "(vmtrace: class not named)";
	if (vmtrace__gate_table()[VMTRACE_PROBE_STACKS_ARMED].part.semaphore && (st = thread_stack())) {
		if (walk_stack(st, &m, &at))
			m = NULL;
	} else if (vmtrace_jvm_no_methods) {
		at = -1; /* the class alone */
	} else if ((*jv)->GetStackTrace(jv, NULL, 0, 1, &top, &n) == JVMTI_ERROR_NONE && n == 1) {
		m = top.method;
		at = top.location;
	}
	site = jvm_site_of(cname, m, at);
	if (!site)
		vmtrace_alloc_sampled(cname, "(vmtrace: site not named)", (uint64_t)size, NULL, NULL, period);
	else if (period || st)
		vmtrace_alloc_sampled(cname, site->method, (uint64_t)size, site->file_line, NULL, period);
	else
		vmtrace_alloc_cached(&site->cache, cname, site->method, (uint64_t)size, site->file_line, NULL);
	if (st)
		st->top = NULL;
}

/* While exact counting's window is open (window.h): a thread that never
 * sampled ends, and the JVM ends. */
static void JNICALL on_thread_end(jvmtiEnv *j, JNIEnv *env, jthread thread)
{
	(void)j;
	jvm_window_thread_end(env, thread);
}

static void JNICALL on_vm_death(jvmtiEnv *j, JNIEnv *env)
{
	(void)j;
	jvm_window_last_look(env);
	if (remove_at_exit)
		unlink(remove_at_exit);
}

/* Only raw monitors may be used here (JVMTI): libvmtrace's probes are.
 * JVMTI says neither the collector nor the kind: each is a pause. */
static void JNICALL on_gc_start(jvmtiEnv *j)
{
	(void)j;
	if (gc_on)
		vmtrace_gc_begin(VMTRACE_GC_PAUSE, 0);
}

static void JNICALL on_gc_finish(jvmtiEnv *j)
{
	(void)j;
	if (gc_on)
		vmtrace_gc_end(VMTRACE_GC_PAUSE, 0);
}

/* ---- arming ---- */

static void set_events(int on, jvmtiEvent ev)
{
	(*jv)->SetEventNotificationMode(jv, on ? JVMTI_ENABLE : JVMTI_DISABLE, ev, NULL);
}

/* Turn JVMTI's events on and off as the gates say. env: the calling
 * thread's in a running JVM, where exact counting opens a window
 * (window.h); NULL before the VM runs a thread. */
static void apply(JNIEnv *env)
{
	int want = VMTRACE_ALLOC_ENABLED() != 0;
	uint64_t period = vmtrace_sample_period_effective();
	int gc = VMTRACE_ENABLED(GC_BEGIN) || VMTRACE_ENABLED(GC_END);

	if (period > INT_MAX)
		period = INT_MAX; /* JVMTI's interval is a jint */
	if (want && (!alloc_on || period != alloc_period)) {
		/* the threads running now reach the new interval at their next
		 * sample: exact counting says what they allocate till then */
		if (env && !period)
			jvm_window_open(env);
		else
			jvm_window_close();
		set_events(env && !period, JVMTI_EVENT_THREAD_END);
		set_events((env && !period) || remove_at_exit, JVMTI_EVENT_VM_DEATH);
		alloc_period = period;
		(*jv)->SetHeapSamplingInterval(jv, (jint)period);
		if (!alloc_on)
			set_events(1, JVMTI_EVENT_SAMPLED_OBJECT_ALLOC);
		alloc_on = 1;
		vmtrace_host_armed(1); /* what a tracer waits for */
	} else if (!want && alloc_on) {
		alloc_on = 0;
		set_events(0, JVMTI_EVENT_SAMPLED_OBJECT_ALLOC);
		set_events(0, JVMTI_EVENT_THREAD_END);
		set_events(remove_at_exit != NULL, JVMTI_EVENT_VM_DEATH);
		jvm_window_close();
		vmtrace_host_armed(0);
	}
	if (gc != gc_on) {
		gc_on = gc;
		set_events(gc, JVMTI_EVENT_GARBAGE_COLLECTION_START);
		set_events(gc, JVMTI_EVENT_GARBAGE_COLLECTION_FINISH);
	}
}

/* Sleeps in a raw monitor wait, blocked as the JVM sees it: a thread
 * sleeping in native code would hold the JVM's exit for 300 ms, the time
 * it gives threads in native to come to rest. */
static void JNICALL watch(jvmtiEnv *j, JNIEnv *env, void *arg)
{
	jrawMonitorID m;

	(void)arg;
	if ((*j)->CreateRawMonitor(j, "vmtrace watcher", &m) != JVMTI_ERROR_NONE)
		return;
	(*j)->RawMonitorEnter(j, m);
	for (;;) {
		apply(env);
		jvm_window_poll(env);
		(*j)->RawMonitorWait(j, m, WATCH_MS);
	}
}

/* The watcher runs as a daemon Java thread (JVMTI calls need an attached
 * thread); made once the VM is live. */
static int start_watcher(JNIEnv *env)
{
	jclass tc = (*env)->FindClass(env, "java/lang/Thread");
	jmethodID init = tc ? (*env)->GetMethodID(env, tc, "<init>", "(Ljava/lang/String;)V") : NULL;
	jstring name = init ? (*env)->NewStringUTF(env, "vmtrace") : NULL;
	jthread t = name ? (*env)->NewObject(env, tc, init, name) : NULL;

	if (!t || (*jv)->RunAgentThread(jv, t, watch, NULL, JVMTI_THREAD_MAX_PRIORITY) != JVMTI_ERROR_NONE) {
		(*env)->ExceptionClear(env);
		fprintf(stderr, "vmtrace: the agent could not start its thread; it stays off\n");
		return -1;
	}
	(*env)->DeleteLocalRef(env, name);
	(*env)->DeleteLocalRef(env, t);
	(*env)->DeleteLocalRef(env, tc);
	return 0;
}

/* JVMTI's sampler takes a new interval at a thread's next sample, so the
 * main thread, made before the agent set its interval, would go to its first
 * sample at the JVM's default (exact: its first ~512 KiB unseen). Large
 * arrays of its own, garbage at once, take it to that sample, which is not
 * counted; from then on the thread samples at the agent's interval. */
static void warm_up(JNIEnv *env)
{
	warming = 1;
	for (int i = 0; i < WARM_UP_TRIES && warming; i++) {
		jbyteArray a = (*env)->NewByteArray(env, WARM_UP_BYTES);

		if (!a) {
			(*env)->ExceptionClear(env);
			break;
		}
		(*env)->DeleteLocalRef(env, a);
	}
	warming = 0;
}

static void JNICALL on_vm_init(jvmtiEnv *j, JNIEnv *env, jthread thread)
{
	(void)j, (void)thread;
	if (alloc_on && alloc_period != JVM_DEFAULT_INTERVAL)
		warm_up(env);
	start_watcher(env);
}

/* ---- loading ---- */

static int setup(JavaVM *vm, int live)
{
	jvmtiCapabilities caps;
	jvmtiEventCallbacks cb;
	jint err;

	if (started)
		return JNI_OK; /* loaded again: the first one is running */
	if ((*vm)->GetEnv(vm, (void **)&jv, JVMTI_VERSION_11) != JNI_OK) {
		fprintf(stderr, "vmtrace: this JVM has no JVMTI 11 (allocation sampling needs JDK 11 or newer)\n");
		return JNI_ERR;
	}
	memset(&caps, 0, sizeof(caps));
	caps.can_generate_sampled_object_alloc_events = 1;
	caps.can_generate_garbage_collection_events = 1;
	caps.can_tag_objects = 1;
	caps.can_get_line_numbers = 1;
	caps.can_get_source_file_name = 1;
	if ((err = (*jv)->AddCapabilities(jv, &caps)) != JVMTI_ERROR_NONE) {
		fprintf(stderr, "vmtrace: the JVM refused the agent's capabilities (allocation sampling, "
				"GC events, tags, lines; JVMTI error %d)\n", (int)err);
		return JNI_ERR;
	}
	if (jvm_names_init(jv) || pthread_key_create(&stack_key, free)) {
		fprintf(stderr, "vmtrace: the agent is out of memory; it stays off\n");
		return JNI_ERR;
	}
	vmtrace_frames_describe(&VMTRACE_FRAME_LAYOUT(struct jframe, caller, name, file, line));
	memset(&cb, 0, sizeof(cb));
	cb.SampledObjectAlloc = on_sampled_alloc;
	cb.GarbageCollectionStart = on_gc_start;
	cb.GarbageCollectionFinish = on_gc_finish;
	cb.VMInit = on_vm_init;
	cb.ThreadEnd = on_thread_end;
	cb.VMDeath = on_vm_death;
	(*jv)->SetEventCallbacks(jv, &cb, sizeof(cb));
	started = 1;
	vmtrace_host_arms_later(); /* the watcher turns the events on */
	if (!live) {
		/* a JVM vmtrace starts is armed before its first thread
		 * allocates: a thread's sampling begins at its next
		 * allocation buffer, so arming later would miss the rest of
		 * the one it holds */
		apply(NULL);
		set_events(1, JVMTI_EVENT_VM_INIT);
		return JNI_OK;
	}
	JNIEnv *env;

	if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK)
		return JNI_ERR;
	apply(env);
	return start_watcher(env) ? JNI_ERR : JNI_OK;
}

/* Whether options (the agent's, "a,b,...") hold word. */
static int has_option(const char *options, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = options; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, word, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return 1;
	return 0;
}

/* A copy a consumer placed for this JVM alone (in a container's /tmp),
 * removed as the JVM ends: the file is its user's. */
static void keep_remove_at_exit(const char *options)
{
	Dl_info self;

	if (has_option(options, "remove-at-exit") && dladdr((void *)setup, &self) && self.dli_fname)
		remove_at_exit = strdup(self.dli_fname);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
	const char *no_methods = getenv("VMTRACE_JVM_NO_METHODS");
	jint r;

	(void)reserved;
	/* -agentpath:...=no-methods, or (through JAVA_TOOL_OPTIONS) the
	 * variable vmtrace sets beside it */
	if (has_option(options, "no-methods") || (no_methods && strcmp(no_methods, "1") == 0))
		vmtrace_jvm_no_methods = 1;
	/* sample=N: the period a consumer that followed the command here asks
	 * (one that starts java itself passes VMTRACE_SAMPLE_PERIOD) */
	for (const char *p = options; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, "sample=", 7) == 0)
			vmtrace_sample_period = strtoull(p + 7, NULL, 10);
	keep_remove_at_exit(options);
	r = setup(vm, 0);
	if (r == JNI_OK && remove_at_exit)
		set_events(1, JVMTI_EVENT_VM_DEATH);
	return r;
}

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved)
{
	jint r;

	(void)reserved;
	if (started)
		return JNI_OK;
	keep_remove_at_exit(options);
	r = setup(vm, 1);
	if (r == JNI_OK && remove_at_exit)
		set_events(1, JVMTI_EVENT_VM_DEATH);
	else if (r != JNI_OK && remove_at_exit)
		unlink(remove_at_exit); /* it stays loaded, but unused */
	return r;
}
