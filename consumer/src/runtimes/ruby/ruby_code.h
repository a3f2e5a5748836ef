/*
 * ruby_code.h: where in libruby (Ruby 3.1, x86-64) runtime_ruby.c puts its
 * allocation uprobes, found from libruby's symbols and code (elf_code.h).
 *
 * Every object of Ruby 3.1 is made by one of nine functions of gc.c that
 * libruby exports, or by rb_class_allocate_instance, the allocator of plain
 * classes, which is local to libruby. Each is probed once, at the first
 * instruction the kernel emulates (a push or a branch: one trap, where a
 * uprobe on any other instruction also single-steps it out of line), with
 * the registers that hold its class and flags there.
 */
#ifndef VMTRACE_RUBY_CODE_H
#define VMTRACE_RUBY_CODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VT_RB_ALLOC_FUNCS 10

struct vt_rb_alloc_site {
	const char *func;        /* its name (rb_class_allocate_instance has no symbol) */
	uint64_t file_offset;    /* where the uprobe goes */
	uint64_t cookie;         /* vt_rb_newobj_cookie() of its class, type and size */
	int emulated;            /* 1: the probed instruction is emulated (one trap) */
};

/* The ten allocation functions of the libruby at path; at_entry: each at
 * its first instruction (where a tool that cannot probe inside a symbol
 * puts it). 0, or -ENOEXEC / -ENOENT with a one-line reason in why. */
int vt_rb_find_alloc_sites(const char *path, bool at_entry,
			   struct vt_rb_alloc_site out[VT_RB_ALLOC_FUNCS], char *why, size_t whylen);

#endif /* VMTRACE_RUBY_CODE_H */
