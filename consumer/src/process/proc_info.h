/*
 * proc_info.h: what /proc says of a running process, and its memory: a
 * field of its status, the files it maps, where a symbol of one of them is
 * in it, and reads and writes of its memory (/proc/PID/mem, which needs
 * the right to ptrace it). Every file behind a mapping is reached as
 * target_fs.h says (map_files, or below its root with no link followed).
 */
#ifndef VMTRACE_PROC_INFO_H
#define VMTRACE_PROC_INFO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The number after field ("TracerPid:") in /proc/PID/status, or -1 when
 * the process or the field is not there. */
long vt_proc_status_field(pid_t pid, const char *field);

/* The runtime address in pid of the dynamic or static symbol `name` of the
 * module at `module` (a path as /proc/PID/maps names it). 0, -ENOENT,
 * -ESRCH. */
int vt_proc_symbol_address(pid_t pid, const char *module, const char *name, uint64_t *addr);

/* The same for the first module pid maps whose file name starts with one
 * of prefixes (NULL-ended: "libruby", "ruby") and that defines name. */
int vt_proc_symbol_in(pid_t pid, const char *const *prefixes, const char *name, uint64_t *addr);

/* The path (as maps names it) of the first file pid maps whose file name
 * starts with one of prefixes, into path. 0, -ENOENT, -ESRCH. */
int vt_proc_module_named(pid_t pid, const char *const *prefixes, char *path, size_t len);

/* len bytes at addr in pid's memory, read or written whole. 0, -ESRCH
 * (gone), -EPERM/-EACCES, -EIO. */
int vt_proc_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len);
int vt_proc_mem_write(pid_t pid, uint64_t addr, const void *buf, size_t len);

#endif
