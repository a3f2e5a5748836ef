/*
 * window.h: what exact counting cannot see in a JVM that was running
 * before it was armed, as a figure.
 *
 * JVMTI's sampler takes a new interval only at a thread's next sample: a
 * thread that allocated before counting was armed goes on to the sample
 * point it drew at the old interval (about 512 KiB on average) before its
 * allocations are all seen. Each such thread's bytes from the arming to its
 * first sample, by the JVM's own count per thread
 * (com.sun.management.ThreadMXBean), go to the tracer through libvmtrace
 * (vmtrace_batch_unseen_bytes): the report's Lost line says them. Threads
 * started after the arming sample at the new interval from their start.
 * While a window is open the agent takes ThreadEnd and VMDeath.
 */
#ifndef VMTRACE_JVM_WINDOW_H
#define VMTRACE_JVM_WINDOW_H

#include <jni.h>

/* Exact counting was armed now (the watcher thread, env its own): note
 * every thread's allocated bytes. Safe to call again (a new window). */
void jvm_window_open(JNIEnv *env);

/* Counting is no longer exact, or disarmed: the window is forgotten. */
void jvm_window_close(void);

/* In the allocation callback of thread (its env): on the thread's first
 * sample since the window opened, its unseen bytes (less this object's
 * size, which is counted). */
void jvm_window_first_sample(JNIEnv *env, jobject thread, jlong size);

/* At each tick of the watcher: every few ticks, the bytes of threads that
 * have not sampled yet, so what a recording ends with is in the figure. */
void jvm_window_poll(JNIEnv *env);

/* A thread ends (ThreadEnd, in it): all it allocated since the window
 * opened, when it never sampled. */
void jvm_window_thread_end(JNIEnv *env, jobject thread);

/* The JVM ends (VMDeath): a last look at every thread still pending. */
void jvm_window_last_look(JNIEnv *env);

/* Non-zero while this thread is the agent's own, calling into Java for the
 * figure: its allocations are the agent's, not the program's. */
int jvm_window_own(void);

#endif /* VMTRACE_JVM_WINDOW_H */
