/*
 * inject.h: calls made in one thread of a running process, under ptrace,
 * for loading a provider into a runtime that never loaded it. x86-64 only.
 *
 * A thread is seized and interrupted (PTRACE_SEIZE, PTRACE_INTERRUPT: no
 * signal is sent, the process sees nothing), its registers and extended
 * state (xstate: SSE, AVX) saved; each call sets the instruction pointer to
 * a function, the arguments in registers and, below the red zone of the
 * thread's stack, a return address of 0, then lets the thread run until
 * the function returns there (a SIGSEGV, taken and never delivered). The
 * release puts every register back and detaches; a thread stopped in a
 * system call restarts it as a signal would have (orig_rax is kept for the
 * restart and set to -1 while the calls run). Other threads run on
 * meanwhile. What may be called is for the caller to know: a function
 * that is safe wherever the thread was stopped, as in a signal handler.
 *
 * Refusals, each said in one line: the process traced already (its
 * TracerPid), seccomp's strict mode, ptrace refused (Yama's
 * ptrace_scope 3, a LSM), the thread gone.
 */
#ifndef VMTRACE_INJECT_H
#define VMTRACE_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

struct vt_inject {
	pid_t tid;                       /* -1: nothing seized */
	struct user_regs_struct saved;   /* as the thread was stopped */
	void *xstate;                    /* its extended state (NT_X86_XSTATE) */
	size_t xlen;
	bool saved_ok;                   /* saved and xstate hold what it had */
};

/* Seize thread tid of process pid and stop it. 0, or -errno with one line
 * in err. vt_inject_release undoes it (also after a failure). */
int vt_inject_stop(struct vt_inject *in, pid_t pid, pid_t tid, char *err, size_t errlen);

/* Call fn(args[0..n-1]) (n <= 6) in the stopped thread and wait up to
 * timeout_ms for its return; its return value in *ret. 0, or -errno
 * (-ETIME: it did not return; -EFAULT: it faulted elsewhere) with one line
 * in err. The thread is stopped again either way. */
int vt_inject_call(struct vt_inject *in, uint64_t fn, const uint64_t *args, int n, uint64_t *ret,
		   int timeout_ms, char *err, size_t errlen);

/* Put the thread back as it was and detach. Accepts one never stopped. */
void vt_inject_release(struct vt_inject *in);

/* The threads of pid, running ones first, then the others (R state
 * first): up to max tids into tids, their number, or -errno. */
int vt_inject_threads(pid_t pid, pid_t *tids, int max);

#endif
