/*
 * rb_stacks.h: allocations under their whole Ruby stack (--stack vm), as the
 * chain of frames libvmtrace walks (vmtrace/frames.h).
 */
#ifndef VMTRACE_RUBY_RB_STACKS_H
#define VMTRACE_RUBY_RB_STACKS_H

#include <stdint.h>

/* Describe the chain to libvmtrace; once, at load. */
void vt_rb_stacks_describe(void);

/* Point the calling thread's chain at its Ruby stack now, the frames of
 * its execution context ec (0: none); under the GVL, in the allocation
 * hook. A thread whose memory ran out gets no stack. */
void vt_rb_take_stack(uintptr_t ec);

#endif
