/*
 * callpath.h: demovm's VM frames and its own count of allocations per
 * call path, the ground truth for stacks.
 *
 * Each vm_send pushes a struct vm_frame on the C stack and links it as the
 * thread's innermost frame: the chain libvmtrace walks (frames.h). Beside
 * it, each frame carries the number of its call path in the thread's
 * calling-context tree (struct vm_paths), so counting an allocation per
 * whole stack costs one array add, independent of the probes.
 */
#ifndef DEMOVM_CALLPATH_H
#define DEMOVM_CALLPATH_H

#include <stdint.h>
#include <stdio.h>

#include "classes.h"
#include "truth.h"

#define VM_PATH_MAX 1024          /* call paths per thread (the workload has far fewer) */
#define VM_PATH_SLOTS 4096        /* hash slots of (parent, method) -> path */

/* One VM frame, the layout described to libvmtrace at boot. */
struct vm_frame {
	struct vm_frame *caller;  /* NULL: the thread's bottom frame */
	const char *name;         /* "Parser#tokenize" (interned) */
	const char *file;         /* where the method was defined (interned) */
	int32_t line;
	uint32_t path;            /* its call path in the thread's vm_paths */
};

struct vm_path {
	uint32_t parent;          /* path number; the root is its own parent */
	uint32_t method;          /* method id */
};

/* A thread's calling-context tree and its allocation counts per path. */
struct vm_paths {
	uint32_t n;
	struct vm_path path[VM_PATH_MAX];
	uint32_t slot[VM_PATH_SLOTS];                 /* path + 1, 0 = empty */
	struct truth_count alloc[VM_PATH_MAX][VM_CLASS_MAX];
};

/* Tell libvmtrace how demovm's frames look; once, at boot. */
void callpath_describe(void);

/* Path 0, the root: method root_method (Object#main). */
void callpath_init(struct vm_paths *p, unsigned root_method);
/* The path of method called from path parent (made on first use). */
uint32_t callpath_enter(struct vm_paths *p, uint32_t parent, unsigned method);

static inline void callpath_alloc(struct vm_paths *p, uint32_t path, unsigned klass, uint64_t size)
{
	p->alloc[path][klass].count++;
	p->alloc[path][klass].bytes += size;
}

/* The "stacks" list of the truth file: every thread's paths merged by
 * their names ("Object#main;Parser#tokenize;Object#inspect") and class,
 * sorted by stack then class. */
void callpath_print(FILE *out, struct vm_paths *const *threads, unsigned n);

#endif /* DEMOVM_CALLPATH_H */
