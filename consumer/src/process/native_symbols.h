/*
 * native_symbols.h: instruction pointers of a process to function names
 * (--stack native): the process's executable mappings, read from
 * /proc/PID/maps while it lives, and each module's ELF symbol tables
 * (.symtab and .dynsym, through libelf), read once per module.
 */
#ifndef VMTRACE_NATIVE_SYMBOLS_H
#define VMTRACE_NATIVE_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct vt_symbolizer;

/* NULL on -ENOMEM. */
struct vt_symbolizer *vt_symbolizer_new(pid_t pid);
/* Read the mappings again (the process may have loaded a library); the
 * last good ones stay when the process is gone. 0 or -errno. */
int vt_symbolizer_snapshot(struct vt_symbolizer *s);
/* The function holding ip ("vm_new"), else "module+0xOFFSET", else
 * "0xIP" (in fallback, len bytes). caller: ip is a return address, so the
 * call is the byte before it. Never NULL. */
const char *vt_symbolizer_name(struct vt_symbolizer *s, uint64_t ip, int caller, char *fallback,
			       size_t len);
void vt_symbolizer_free(struct vt_symbolizer *s); /* accepts NULL */

#endif /* VMTRACE_NATIVE_SYMBOLS_H */
